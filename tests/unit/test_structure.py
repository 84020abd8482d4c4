"""The trace's own structure — passes, phases, layers — read right on every kind of trace the
synthetic generator can plant (the cases real traces showed):

* Hugging Face generate(): no engine annotations, one `ProfilerStep#N` container around all
  passes (or one per generate() call), one `nn.Module: LlamaForCausalLM_0` call per pass around
  the `LlamaDecoderLayer_i` calls, the embedding's recorded indices [batch, tokens];
* the same without Python stacks (no module calls), without shapes, without both;
* attention decomposed into batched GEMM + softmax + batched GEMM (HF "eager");
* decode passes replayed from a CUDA/HIP graph (one launch, every kernel correlated to it, no
  module call or operator inside);
* SGLang's double step annotation (`execute_…` around `step[DECODE bs=32]`).

Every case is written as a pair (AMD MI300X and NVIDIA H100 sides) and each side's reading is
checked against the truth JSON the generator wrote (`sides.X.structure`), and the reported
sources against the evidence the case leaves.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter

import numpy as np
import pytest

from kerneldiff.core import Session
from kerneldiff.core.model import KIND_KERNEL
from kerneldiff.core.synth.pair import write_pair

HF = dict(annotation="hf-generate")
# (id, write_pair arguments, substrings of pass_source, phase_source, layer_source)
CASES = [
    ("hf-generate", HF,
     "model module calls", "shapes (embedding input dims)", "decoder-layer module calls (LlamaDecoderLayer)"),
    ("hf-two-generate-calls", dict(HF, generate_calls=2, steps=6),
     "model module calls", "shapes (embedding input dims)", "decoder-layer module calls (LlamaDecoderLayer)"),
    ("hf-moe", dict(HF, moe=True),
     "model module calls", "shapes (embedding input dims)", "decoder-layer module calls (Qwen3MoeDecoderLayer)"),
    ("hf-no-stack", dict(HF, with_stack=False),
     "token embedding calls", "shapes (embedding input dims)", "attention/SSM kernel anchors"),
    ("hf-no-shapes", dict(HF, record_shapes=False),
     "model module calls", "inferred from kernel durations", "decoder-layer module calls (LlamaDecoderLayer)"),
    ("hf-no-stack-no-shapes", dict(HF, with_stack=False, record_shapes=False),
     "token embedding calls", "inferred from kernel durations", "attention/SSM kernel anchors"),
    ("hf-sampling-no-stack", dict(HF, sampling="sample", with_stack=False),
     "token embedding calls", "shapes (embedding input dims)", "attention/SSM kernel anchors"),
    ("hf-decomposed", dict(HF, attention="decomposed"),
     "model module calls", "shapes (embedding input dims)", "decoder-layer module calls (LlamaDecoderLayer)"),
    ("hf-decomposed-no-stack", dict(HF, attention="decomposed", with_stack=False),
     "token embedding calls", "shapes (embedding input dims)", "attention/SSM kernel anchors"),
    ("hf-graph", dict(HF, graph=True),
     "graph replays outside them", "passes without shapes inferred from their kernels",
     "replayed passes from the kernel sequence"),
    ("hf-graph-no-stack", dict(HF, graph=True, with_stack=False),
     "graph-launch entries", "passes without shapes inferred from their kernels", "attention/SSM kernel anchors"),
    ("hf-graph-no-shapes", dict(HF, graph=True, record_shapes=False),
     "graph replays outside them", "inferred from kernel durations", "replayed passes from the kernel sequence"),
    ("sglang-double", dict(annotation="sglang-double", mixed_steps=1),
     "step annotations", "annotations", "decoder-layer module calls (LlamaDecoderLayer)"),
    ("sglang-double-graph", dict(annotation="sglang-double", graph=True),
     "step annotations", "annotations", "replayed passes from the kernel sequence"),
    ("sglang-double-no-stack", dict(annotation="sglang-double", with_stack=False),
     "step annotations", "annotations", "attention/SSM kernel anchors"),
]
# Decomposed attention (GEMM + softmax + GEMM) with graph replay, without shapes, with sampling's
# softmax after lm_head: once read wrong (see git history), kept as cases of their own.
DECOMPOSED = [
    pytest.param("hf-graph-decomposed", dict(HF, graph=True, attention="decomposed"),
                 "graph replays outside them", "passes without shapes inferred from their kernels",
                 "replayed passes from the kernel sequence"),
    pytest.param("hf-decomposed-no-shapes", dict(HF, attention="decomposed", record_shapes=False),
                 "model module calls", "inferred from kernel durations", "decoder-layer module calls"),
    pytest.param("hf-decomposed-no-stack-no-shapes", dict(HF, attention="decomposed", with_stack=False,
                                                          record_shapes=False),
                 "token embedding calls", "inferred from kernel durations", "attention/SSM kernel anchors"),
    pytest.param("hf-decomposed-sampling-no-stack", dict(HF, attention="decomposed", sampling="sample",
                                                         with_stack=False),
                 "token embedding calls", "shapes (embedding input dims)", "attention/SSM kernel anchors"),
    pytest.param("hf-decomposed-sampling-no-stack-8-layers", dict(HF, attention="decomposed", sampling="sample",
                                                                  with_stack=False, layers=8),
                 "token embedding calls", "shapes (embedding input dims)", "attention/SSM kernel anchors"),
]
LAYERS, STEPS = 3, 5


def _write(tmp_path, kw, seed=3):
    args = dict(layers=LAYERS, steps=STEPS, gzip=False)
    args.update(kw)
    a, b, t = write_pair(tmp_path, seed=seed, **args)
    return {"A": a, "B": b}, json.loads(t.read_text())


def _check(model, side: dict, sources: tuple[str, str, str]) -> None:
    st = side["structure"]
    # passes: as many as planted, each starting inside its planted CPU window (an SGLang step's
    # outer `execute_` annotation opens up to 80 µs before the inner one the record gives)
    assert len(model.steps) == st["passes"], (model.pass_source, model.warnings)
    for s, rec in zip(model.steps, side["step_records"]):
        assert rec["cpu_ts_us"] - 100 <= s.ts <= rec["cpu_end_us"], (s, rec)
    # phases per pass
    assert [s.phase for s in model.steps] == st["phases"], (model.phase_source, model.warnings)
    # layers: the model's count, and every pass holds exactly layers 0..L-1
    k = model.kernels
    assert model.num_layers == max(st["layers_per_pass"]), (model.layer_source, model.warnings)
    for j, n in enumerate(st["layers_per_pass"]):
        got = np.unique(k.layer[(k.step == j) & (k.layer >= 0)])
        assert got.tolist() == list(range(n)), f"pass {j}"
    assert model.architecture == "transformer"
    # the sources say what was read
    for text, want in zip((model.pass_source, model.phase_source, model.layer_source), sources):
        assert want in text, (text, want)


@pytest.mark.parametrize("case,kw,pass_src,phase_src,layer_src",
                         CASES + DECOMPOSED, ids=[c[0] for c in CASES] + [p.values[0] for p in DECOMPOSED])
def test_planted_structure_is_read(tmp_path, case, kw, pass_src, phase_src, layer_src):
    paths, truth = _write(tmp_path, kw)
    for side in ("A", "B"):
        m = Session([paths[side]], use_cache=False).load(0)
        _check(m, truth["sides"][side], (pass_src, phase_src, layer_src))


def test_kernels_belong_to_their_pass(tmp_path):
    """Passes read from module calls cover their kernels: every compute kernel of the planted
    pass (the input copies before the first one are memcpy/memset, outside every pass)."""
    for i, kw in enumerate((HF, dict(HF, with_stack=False), dict(HF, graph=True), dict(annotation="sglang-double"))):
        paths, truth = _write(tmp_path / str(i), kw)
        for side in ("A", "B"):
            m = Session([paths[side]], use_cache=False).load(0)
            k = m.kernels
            is_kernel = k.kind == KIND_KERNEL
            per = np.bincount(k.step[is_kernel & (k.step >= 0)], minlength=len(m.steps)).tolist()
            assert per == [r["kernels"] for r in truth["sides"][side]["step_records"]], kw
            assert not (is_kernel & (k.step < 0)).any()


def test_profiler_step_containers_hold_many_passes(tmp_path):
    """Two generate() calls under a profiler schedule: two ProfilerStep containers, each a prompt
    and its decodes; the passes are the model calls inside, not the containers."""
    paths, truth = _write(tmp_path, dict(HF, generate_calls=2, steps=7))
    st = truth["sides"]["A"]["structure"]
    assert st["containers"] == [{"name": "ProfilerStep#2", "passes": [0, 1, 2, 3]},
                                {"name": "ProfilerStep#3", "passes": [4, 5, 6]}]
    assert st["phases"] == ["prefill", "decode", "decode", "decode", "prefill", "decode", "decode"]
    for side in ("A", "B"):
        m = Session([paths[side]], use_cache=False).load(0)
        assert len(m.steps) == 7 and [s.phase for s in m.steps] == st["phases"]
        assert "ProfilerStep" not in m.pass_source


# --- the plants themselves, read from the raw JSON (independent of the readings) ---------------

def _events(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        return json.load(f)["traceEvents"]


def test_hf_generate_plant(tmp_path):
    paths, truth = _write(tmp_path, dict(HF, generate_calls=2, steps=4))
    ev = _events(paths["B"])
    ann = [e for e in ev if e.get("cat") == "user_annotation"]
    assert [a["name"] for a in ann] == ["ProfilerStep#2", "ProfilerStep#3"]       # no engine annotations
    assert Counter(e["name"] for e in ev if e.get("cat") == "gpu_user_annotation") == {
        "ProfilerStep#2": 1, "ProfilerStep#3": 1}
    mods = Counter(e["name"] for e in ev if e.get("cat") == "python_function" and e["name"].startswith("nn.Module"))
    assert mods["nn.Module: LlamaForCausalLM_0"] == 4 and mods["nn.Module: LlamaModel_0"] == 4
    assert all(mods[f"nn.Module: LlamaDecoderLayer_{i}"] == 4 for i in range(LAYERS))
    assert mods[f"nn.Module: Linear_{7 * LAYERS}"] == 4                              # lm_head, in the model call
    calls = sorted((e for e in ev if e.get("name") == "nn.Module: LlamaForCausalLM_0"), key=lambda e: e["ts"])
    for c in calls:
        inner = [e for e in ev if e.get("cat") == "python_function" and c["ts"] < e["ts"] < c["ts"] + c["dur"]
                 and e["name"].startswith("nn.Module: LlamaDecoderLayer_")]
        assert len(inner) == LAYERS
    emb = sorted((e for e in ev if e.get("name") == "aten::embedding"), key=lambda e: e["ts"])
    dims = [e["args"]["Input Dims"][:2] for e in emb]
    assert dims == [[[128256, 4096], [32, 1024]], [[128256, 4096], [32, 1]]] * 2   # [vocab, hidden], [batch, tokens]
    assert truth["sides"]["B"]["structure"]["embedding_input"] == [[32, 1024], [32, 1], [32, 1024], [32, 1]]
    # record_shapes: every operator of an HF trace records its inputs, as torch does
    assert all("Input Dims" in e["args"] for e in ev if e.get("cat") == "cpu_op")


def test_no_stack_no_shapes_plant(tmp_path):
    paths, truth = _write(tmp_path, dict(HF, with_stack=False, record_shapes=False))
    ev = _events(paths["A"])
    assert not any(e.get("cat") == "python_function" for e in ev)
    assert not any("Input Dims" in e.get("args", {}) for e in ev)
    assert sum(e.get("name") == "aten::embedding" for e in ev) == STEPS               # still one per pass
    st = truth["sides"]["A"]["structure"]
    assert st["module_calls"] is False and st["record_shapes"] is False
    assert st["embedding_input"] == [None] * STEPS


def test_decomposed_attention_plant(tmp_path):
    paths, truth = _write(tmp_path, dict(HF, attention="decomposed"))
    for side in ("A", "B"):
        roles = truth["sides"][side]["layer_roles"]
        for phase in ("prefill", "decode"):
            r = roles[phase]
            assert not any(x.startswith("attn_prefill") or x.startswith("attn_decode") for x in r)
            i = r.index("attn_softmax")
            assert r[i - 1:i + 2] == ["attn_bmm_qk", "attn_softmax", "attn_bmm_pv"]
        cats = truth["sides"][side]["category_counts"]
        assert not any(c.startswith("Attention") for c in cats)
    ev = _events(paths["B"])
    bmm = [e for e in ev if e.get("name") == "aten::bmm"]
    assert len(bmm) == 2 * LAYERS * STEPS and all(len(e["args"]["Input Dims"][0]) == 3 for e in bmm)


def test_graph_replay_plant(tmp_path):
    paths, truth = _write(tmp_path, dict(HF, graph=True))
    st = truth["sides"]["B"]["structure"]
    assert st["graph_replayed"] == list(range(1, STEPS))
    ev = _events(paths["B"])
    launches = [e for e in ev if e.get("name") == "cudaGraphLaunch"]
    assert len(launches) == STEPS - 1
    corr = {e["args"]["correlation"] for e in launches}
    per = Counter(e["args"]["correlation"] for e in ev if e.get("cat") == "kernel"
                  and e["args"]["correlation"] in corr)
    rec = truth["sides"]["B"]["step_records"]
    # every kernel of a replayed pass but its sampling (argmax, after the graph) carries the launch's id
    assert sorted(per.values()) == sorted(r["kernels"] - 1 for r in rec if r["graph"])
    for g in launches:   # no module call, operator or embedding inside a replayed pass
        t0 = g["ts"]
        assert not any(e.get("cat") in ("cpu_op", "python_function") and e.get("name", "").startswith(
            ("nn.Module", "aten::embedding")) and t0 - 50 < e["ts"] < t0 + g["dur"] for e in ev)
    assert sum(e.get("name") == "nn.Module: LlamaForCausalLM_0" for e in ev) == 1


def test_sglang_double_annotation_plant(tmp_path):
    paths, truth = _write(tmp_path, dict(annotation="sglang-double", mixed_steps=1))
    ev = _events(paths["A"])
    ann = sorted((e for e in ev if e.get("cat") == "user_annotation"), key=lambda e: e["ts"])
    assert len(ann) == 2 * STEPS
    for outer, inner in zip(ann[::2], ann[1::2]):
        assert outer["name"].startswith("execute_") and inner["name"].startswith("step[")
        assert outer["ts"] < inner["ts"] and inner["ts"] + inner["dur"] < outer["ts"] + outer["dur"]
    assert truth["sides"]["A"]["structure"]["step_annotations_per_pass"] == 2
    m = Session([paths["A"]], use_cache=False).load(0)
    assert [s.batch for s in m.steps[2:]] == [32] * (STEPS - 2)   # what both annotations say


def test_structure_truth_only_where_planted(tmp_path):
    """Plain pairs keep the truth schema they had (the shipped demo's truth is byte-identical)."""
    _, truth = _write(tmp_path, {})
    assert "structure" not in truth["sides"]["A"]
    _, truth = _write(tmp_path, dict(record_shapes=False))
    assert truth["sides"]["A"]["structure"]["record_shapes"] is False


def test_options_are_checked(tmp_path):
    from kerneldiff.core.synth.pair import SynthConfig

    for bad in (dict(attention="flash"), dict(annotation_style="hf-generate", mixed_steps=1),
                dict(annotation_style="hf-generate", generate_calls=9), dict(sampling="beam")):
        with pytest.raises(ValueError):
            SynthConfig(steps=4, **bad).resolved()


def test_start_order_is_lexsort_by_start_then_longest():
    """The calls' order (modules.start_order) is exactly np.lexsort((-dur, ts)), ties included:
    equal starts, equal starts and durations (original order kept), NaN-free random floats."""
    import numpy as np

    from kerneldiff.core.analysis.modules import start_order

    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 50, 5000):
        ts = rng.integers(0, max(n // 3, 1), n).astype(float) + rng.choice([0.0, 0.5], n)
        dur = rng.integers(0, 4, n).astype(float)
        assert np.array_equal(start_order(ts, dur), np.lexsort((-dur, ts)))
    ts = np.sort(rng.random(10000)) * 1e6
    dur = rng.random(10000)
    assert np.array_equal(start_order(ts, dur), np.lexsort((-dur, ts)))
