"""Streaming loader: columns, joins, progress, cancellation, bad input, phases by launch."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from conftest import kineto_doc, real_trace, write_trace
from kerneldiff.core.analysis.attribution import python_stack
from kerneldiff.core import LoadCancelled, TraceError
from kerneldiff.core.orchestration import load
from kerneldiff.core.analysis.phases import parse_step


def _step_trace(lag_us: float, steps=3, string_numbers=False):
    """Steps whose kernels run `lag_us` after their launch: with a big lag they fall in the next
    step's CPU window, but must still belong to the step that launched them."""
    ev = []
    corr = 0
    s = (lambda x: str(x)) if string_numbers else (lambda x: x)
    for st in range(steps):
        t0 = st * 1000.0
        name = (f"execute_context_0(0)_generation_{8}({8})" if st else "execute_context_2(512_1024)_generation_0(0)")
        ev.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1, "ts": t0, "dur": 900})
        for i in range(5):
            corr += 1
            lt = t0 + 10 + i * 20
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": lt, "dur": 5, "args": {"correlation": s(corr), "External id": s(corr + 10000)}})
            ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": lt - 2,
                       "dur": 9, "args": {"External id": s(corr + 10000)}})
            ev.append({"ph": "X", "cat": "kernel", "name": f"nvjet_tst_128x64_{i}", "pid": 0, "tid": 7,
                       "ts": lt + lag_us, "dur": 3.5, "args": {"correlation": s(corr), "device": s(0), "stream": s(7)}})
    return kineto_doc(ev)


@pytest.mark.parametrize("string_numbers", [False, True])
def test_kernels_belong_to_the_step_that_launched_them(tmp_path, classifier, string_numbers):
    p = write_trace(tmp_path / "t.json", _step_trace(lag_us=1500, string_numbers=string_numbers))
    m = load(p, classifier=classifier)
    assert len(m.kernels) == 15
    assert [s.phase for s in m.steps] == ["prefill", "decode", "decode"]
    # every kernel launched in step i is in step i although it ran during step i+1 or later
    assert m.kernels.step.tolist() == [0] * 5 + [1] * 5 + [2] * 5
    assert (m.kernels.launch >= 0).all() and (m.kernels.cpu_op >= 0).all()
    assert m.cpu_op_name(0) == "aten::mm"
    assert m.phases_present() == ["prefill", "decode"]


def test_progress_is_monotonic_and_reaches_one(tmp_path, classifier):
    p = write_trace(tmp_path / "t.json.gz", _step_trace(lag_us=0, steps=40), gz=True)
    seen = []
    load(p, classifier=classifier, progress=lambda f, stage, done, total: seen.append((f, stage)))
    fracs = [f for f, _ in seen]
    assert fracs == sorted(fracs) and fracs[-1] == 1.0 and fracs[0] == 0.0
    assert seen[-1][1] == "done" and any(s == "reading" for _, s in seen)


def test_cancellation(tmp_path, classifier):
    p = write_trace(tmp_path / "t.json", _step_trace(lag_us=0, steps=5))
    ev = threading.Event()
    ev.set()
    with pytest.raises(LoadCancelled):
        load(p, classifier=classifier, cancel=ev)
    with pytest.raises(LoadCancelled):
        load(p, classifier=classifier, progress=lambda *a: False)


@pytest.mark.parametrize("content,problem", [
    (b"", "empty"),
    (b'{"foo": 1}', "traceEvents"),
    (b'{"traceEvents": 5}', "not a list"),
    (b"\x1f\x8b\x08\x00garbage-garbage", "gzip"),
])
def test_bad_input_is_a_one_line_trace_error(tmp_path, classifier, content, problem):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(TraceError) as e:
        load(p, classifier=classifier)
    msg = str(e.value)
    assert str(p) in msg and problem in msg and "\n" not in msg


def test_truncated_file_keeps_complete_events_and_warns(tmp_path, classifier):
    full = write_trace(tmp_path / "full.json", _step_trace(lag_us=0, steps=6)).read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(full[: int(len(full) * 0.7)])
    m = load(cut, classifier=classifier)
    assert 0 < len(m.kernels) < 30
    assert any("truncated" in w for w in m.warnings)


def test_bare_array_trace_loads(tmp_path, classifier):
    ev = _step_trace(lag_us=0)["traceEvents"]
    m = load(write_trace(tmp_path / "a.json", ev), classifier=classifier)
    assert len(m.kernels) == 15 and m.info.kind == "chrome-array"


@pytest.mark.parametrize("name,phase,source", [
    ("execute_context_1(888_788544)_generation_0(0)", "prefill", "vllm"),
    ("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)", "decode", "vllm"),
    ("execute_40_context_8(sq1sk1)_generation_32(sq32sk9)", "mixed", "vllm"),
    ("execute_context_3(100_200)_generation_5(5)", "mixed", "vllm"),
    ("step[DECODE bs=32]", "decode", "sglang"),
    ("step[EXTEND bs=15 toks=15360]", "prefill", "sglang"),
    ("ProfilerStep#6", "unknown", "profiler_step"),
])
def test_annotation_forms(name, phase, source):
    parsed = parse_step(name)
    assert parsed is not None and parsed[0] == phase and parsed[1] == source


@pytest.mark.parametrize("name,requests,tokens,kv", [
    ("execute_context_1(888_788544)_generation_0(0)", 1, 888, None),
    ("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)", 32, 32, 55086),
    ("execute_40_context_8(sq1024sk1024)_generation_32(sq32sk9000)", 40, 1056, 10024),
    ("step[DECODE bs=32]", 32, 32, None),
    ("step[EXTEND bs=15 toks=15360]", 15, 15360, None),
    ("execute_1_context_1(sq" + "9" * 5000 + "sk1)_generation_0(sq0sk0)", 1, None, 1),   # too long: count unknown
])
def test_annotation_step_shapes(name, requests, tokens, kv):
    """Requests, query tokens and KV-cache tokens from every vLLM and SGLang dialect."""
    _, _, r, t, k = parse_step(name)
    assert (r, t, k) == (requests, tokens, kv)


def test_sglang_double_annotation_is_one_step():
    """SGLang annotates one step as `execute_…` and `step[DECODE bs=32]`: one pass, not two."""
    m = load(real_trace("mi300x_sglang_qwen3-8b_decode.json.gz"))
    assert len(m.steps) == 1 and m.steps[0].phase == "decode"
    assert (m.steps[0].batch, m.steps[0].tokens, m.steps[0].kv_tokens) == (32, 32, 32785)
    assert m.steps[0].source == "sglang" and m.pass_source == "engine step annotations (sglang)"
    vllm = load(real_trace("mi300x_vllm_gptoss_decode.json.gz"), use_cache=False)
    assert vllm.pass_source == "engine step annotations (vllm)"


def test_not_a_step_annotation():
    assert parse_step("## Call CompiledFxGraph abc ##") is None
    assert parse_step("nccl:_all_gather_base") is None


@pytest.mark.parametrize("name,layers,phase", [
    ("mi300x_vllm_gptoss_decode.json.gz", 24, "decode"),       # gpt-oss-20b: 24 layers, graph replay
    ("mi300x_qwen1.5-0.5b_hf.json.gz", 24, None),              # Qwen1.5-0.5B: 24 layers, eager
    ("h100_qwen1.5-0.5b_hf.json.gz", 24, None),
    ("mi300x_sglang_qwen3-8b_decode.json.gz", 36, "decode"),   # Qwen3-8B: 36 layers
])
def test_real_traces_segment_into_the_models_layers(name, layers, phase, classifier):
    m = load(real_trace(name), classifier=classifier)
    assert m.architecture == "transformer"
    assert m.num_layers == layers
    if phase:
        assert phase in m.phases_present()
    k = m.kernels
    assert (k.dur >= 0).all()
    # each kernel in at most one layer, layer ids within range
    assert k.layer.max() == layers - 1


def test_python_stack_on_demand(classifier):
    m = load(real_trace("b200_vllm_eager.json.gz"), classifier=classifier)
    rows = np.nonzero(m.kernels.launch >= 0)[0]
    stack = python_stack(m, int(rows[len(rows) // 2]))
    assert stack and all(isinstance(f, str) for f in stack)
    assert any(".py(" in f for f in stack)
