"""Issue 26: information a trace may lack, and how its kernels are spread over streams.

- Without Python events (stacks), operator shapes, correlation ids or External ids, the kernels are
  the same kernels: counts and totals, per operation, do not change, and what could not be read is
  said in a warning.
- Half a stream's kernels moved to a new stream at the same times: busy time, span and idle do not
  change (the union of the same intervals), the streams are one more, the overlap stays zero."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import invariants as inv
from conftest import real_trace
from kerneldiff.core.analysis.timeline import timeline
from kerneldiff.core.orchestration import load

# what each loss must say, in a warning of `info`
SAID = {"python": "no Python stacks", "shapes": "no operator input shapes", "correlation": "correlation ids missing"}


def _kernels(summary: dict) -> tuple:
    ops = sorted((o["category"], o["count"], round(o["total_us"], 3)) for o in summary["operations"])
    return summary["kernels"], round(summary["gpu_time_us"], 3), ops


def _check_losses(root, doc: dict) -> None:
    ref = inv.Reference(root, doc, compare=False)
    base = ref.answer["info"]["summary"]
    for what in ("python", "shapes", "correlation", "external"):
        got = ref.of(inv.without(doc, what))["info"]["summary"]
        assert _kernels(got) == _kernels(base), what
        if what in SAID:
            assert any(SAID[what] in w for w in got["warnings"]), (what, got["warnings"])


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), style=st.sampled_from(["hf-generate", "vllm", "hf"]))
def test_losing_stacks_shapes_or_ids_keeps_the_kernels_and_says_so_on_generated_traces(tmp_path_factory, seed, style):
    root = tmp_path_factory.mktemp("drop")
    _check_losses(root, inv.synth_doc(root / "src", seed, style))


@pytest.mark.slow
@pytest.mark.parametrize("name", inv.real_params(quick=["mi300x_sglang_qwen3-8b_decode.json.gz",
                                                        "mi300x_vllm_gptoss_decode.json.gz",
                                                        "h100_qwen1.5-0.5b_hf.json.gz"],
                                                 slow=["b200_vllm_eager.json.gz", "v100_test.json.gz",
                                                       "h100_llama_eager_sdpa.json.gz"]))
def test_losing_stacks_shapes_or_ids_keeps_the_kernels_and_says_so_on_real_traces(tmp_path, name):
    _check_losses(tmp_path, inv.read_doc(real_trace(name)))


def _whole(path):
    return timeline(load(path, use_cache=False, workers=0))


def _check_split(root, doc: dict) -> None:
    split, moved = inv.stream_split(doc)
    assert moved > 0
    a = _whole(inv.write_doc(root / "a.json", doc))
    b = _whole(inv.write_doc(root / "b.json", split))
    for name in ("span_us", "busy_us", "idle_us", "kernel_us", "kernels", "gaps"):
        assert getattr(b.whole, name) == getattr(a.whole, name), name
    assert b.streams == a.streams + 1
    # the moved kernels ran in turn with those left behind: no new overlap, unless the stream's own
    # kernels overlapped (timestamps a stream cannot have: b200_vllm_eager has 69 µs of them)
    if not _stream_overlaps(doc):
        assert b.whole.overlap_us == a.whole.overlap_us


def _stream_overlaps(doc: dict) -> bool:
    busiest = inv.busiest_stream(doc)
    spans = sorted((e["ts"], e["ts"] + e.get("dur", 0)) for e in inv.events(doc)
                   if isinstance(e, dict) and e.get("cat") in inv.GPU_CATS and isinstance(e.get("args"), dict)
                   and e["args"].get("stream") == busiest)
    end = -float("inf")
    for s, e in spans:
        if s < end:
            return True
        end = max(end, e)
    return False


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), style=st.sampled_from(["hf-generate", "vllm", "sglang"]),
       float_ts=st.booleans())
def test_half_a_stream_on_a_new_stream_keeps_busy_time_on_generated_traces(tmp_path_factory, seed, style, float_ts):
    root = tmp_path_factory.mktemp("split")
    _check_split(root, inv.synth_doc(root / "src", seed, style, float_ts=float_ts))


@pytest.mark.slow
@pytest.mark.parametrize("name", inv.real_params(quick=["mi300x_sglang_qwen3-8b_decode.json.gz",
                                                        "mi300x_vllm_gptoss_decode.json.gz",
                                                        "h100_qwen1.5-0.5b_hf.json.gz"],
                                                 slow=["b200_vllm_eager.json.gz", "v100_test.json.gz",
                                                       "a100_control.json.gz", "h100_llama_compiled.json.gz"]))
def test_half_a_stream_on_a_new_stream_keeps_busy_time_on_real_traces(tmp_path, name):
    _check_split(tmp_path, inv.read_doc(real_trace(name)))
