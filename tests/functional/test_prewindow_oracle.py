"""Work launched before the profiler's window, recounted from the raw events of every real trace.

The oracle reads the JSON itself, not our loader: a GPU activity (kernel, copy, memset) is
pre-window when its correlation id joins no runtime call of the trace, is below every runtime
call's correlation id, and ends before the first activity of its own stream (device, stream) that
a recorded runtime call launched. `cut_work` must find exactly those, and the comparison must
leave them out and say so."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from conftest import ROOT, SHARED_TRACES
from kerneldiff.core.analysis.cut_work import cut_work, prewindow_mask
from kerneldiff.core.orchestration import load

RUNTIME = {"cuda_runtime", "cuda_driver", "hip_runtime", "hip_api", "runtime"}
GPU = {"kernel", "gpu_memcpy", "gpu_memset"}
SMALL = ["v100_test.json.gz", "a100_control.json.gz", "h100_qwen1.5-0.5b_hf.json.gz",
         "mi300x_qwen1.5-0.5b_hf.json.gz", "mi300x_vllm_gptoss_decode.json.gz", "b200_vllm_eager.json.gz",
         "mi300x_sglang_qwen3-8b_decode.json.gz", "mi250_minitoy_train_rocm.json.gz",
         "a100_triton_example.json.gz", "hta_two_ranks/sampled_rank-0.json.gz",
         "hta_two_ranks/sampled_rank-1.json.gz"]
LARGE = ["h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz", "h200_llama_eager_sdpa.json.gz",
         "h100_owlv2_detection.json.gz", "mi300x_owlv2_detection.json.gz"]
RECORDED = sorted(p.name for p in (ROOT / "tests" / "data" / "recorded").glob("*.json.gz"))


def _int(x):
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def oracle(path: Path) -> tuple[int, float]:
    """(activities, µs) launched before the window, from the raw events."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    pre = [ev[i] for i in prewindow(ev)]
    return len(pre), sum(float(e.get("dur", 0)) for e in pre)


def prewindow(ev: list) -> set[int]:
    """Indices into the events of the GPU activities launched before the window."""
    launched = {c for e in ev if str(e.get("cat", "")).lower() in RUNTIME and e.get("ph") == "X"
                for c in [_int((e.get("args") or {}).get("correlation"))] if c is not None}
    acts = []
    for i, e in enumerate(ev):
        if str(e.get("cat", "")).lower() in GPU and e.get("ph") == "X":
            a = e.get("args") or {}
            acts.append((i, _int(a.get("correlation")), (_int(a.get("device")), _int(a.get("stream"))),
                         float(e["ts"]), float(e.get("dur", 0))))
    if not launched:
        return set()
    first: dict = {}
    for _, c, key, ts, _ in acts:
        if c in launched:
            first[key] = min(first.get(key, float("inf")), ts)
    lowest = min(launched)
    return {i for i, c, key, ts, d in acts
            if c is not None and c not in launched and c < lowest and ts + d <= first.get(key, float("inf"))}


def _check(path: Path) -> None:
    n, us = oracle(path)
    m = load(path, use_cache=False, workers=0)
    cut = cut_work(m)
    if n == 0:
        assert cut is None
        return
    assert cut is not None
    assert (cut.kernels, cut.passes) == (n, 0)
    assert cut.time_us == pytest.approx(us, abs=1e-6 * n)
    assert int(prewindow_mask(m).sum()) == n


def _shared(name: str) -> Path:
    p = SHARED_TRACES / name
    if not p.exists():
        pytest.skip(f"real trace {name} not available (../shared/traces absent)")
    return p


@pytest.mark.parametrize("name", SMALL)
def test_prewindow_work_matches_the_raw_events(name):
    _check(_shared(name))


@pytest.mark.slow
@pytest.mark.parametrize("name", LARGE)
def test_prewindow_work_matches_the_raw_events_large(name):
    _check(_shared(name))


@pytest.mark.parametrize("name", RECORDED)
def test_prewindow_work_matches_the_raw_events_recorded(name):
    _check(ROOT / "tests" / "data" / "recorded" / name)


def test_v100_prewindow_work_is_per_stream():
    """v100_test: 614 activities, 56.5 ms, ran on the compute stream before its first in-trace
    launch while other streams already ran launched work; the trace-wide first launch saw 55."""
    p = _shared("v100_test.json.gz")
    n, us = oracle(p)
    assert n > 500 and us > 50_000
    m = load(p, use_cache=False, workers=0)
    assert cut_work(m).kernels == n
    assert not any("launched outside any step annotation" in w for w in m.warnings)
