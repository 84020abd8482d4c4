"""The module tree and the host hotspots against truth recomputed from the raw JSON events of real
traces (not through our loader's tables or our nesting code), and their invariants on real pairs:
mirror symmetry, self-comparison, sums."""

from __future__ import annotations

import gzip
import heapq
import json
import re
from collections import defaultdict

import pytest

from conftest import real_trace

KERNEL_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver"}
QWEN = ("mi300x_qwen1.5-0.5b_hf.json.gz", "h100_qwen1.5-0.5b_hf.json.gz")
LLAMA = ("h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz")


def _raw(name: str) -> list[dict]:
    with gzip.open(real_trace(name)) as fh:
        return json.load(fh)["traceEvents"]


def _num(v):
    return int(v) if v is not None and str(v).lstrip("-").isdigit() else None


_models: dict[str, object] = {}


def _model(name: str):
    if name not in _models:
        from kerneldiff.core.session import Session

        _models[name] = Session([str(real_trace(name))], use_cache=False).load(0)
    return _models[name]


# --- truth: the module path of every kernel, from the raw events ------------------------------------

def truth_module_totals(events: list[dict], depth: int = 3) -> dict[tuple, float]:
    """Kernel time per module path prefix (down to `depth` labels): each kernel's launch (runtime
    event with its correlation) → every `nn.Module:` python_function on the launch's thread whose span
    holds the launch time, outermost (earliest, then longest) first."""
    launch = {}
    calls = defaultdict(list)
    for e in events:
        cat = e.get("cat")
        if cat in RUNTIME_CATS:
            c = _num((e.get("args") or {}).get("correlation"))
            if c is not None and c not in launch:
                launch[c] = (e["tid"], float(e["ts"]))
        elif cat == "python_function" and str(e.get("name", "")).startswith("nn.Module: "):
            ts = float(e["ts"])
            calls[e["tid"]].append((ts, -float(e["dur"]), ts + float(e["dur"]), e["name"][len("nn.Module: "):]))
    for v in calls.values():
        v.sort()
    out: dict[tuple, float] = defaultdict(float)
    for e in events:
        if e.get("cat") not in KERNEL_CATS or e.get("ph") != "X":
            continue
        at = launch.get(_num((e.get("args") or {}).get("correlation")))
        if at is None:
            continue
        tid, t = at
        path = tuple(lab for ts, _, end, lab in calls.get(tid, ()) if ts <= t <= end)
        for d in range(1, min(depth, len(path)) + 1):
            out[path[:d]] += float(e["dur"])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", QWEN + LLAMA)
def test_module_totals_match_raw_events(name):
    from kerneldiff.core.compare.module_compare import compare_modules, walk

    truth = truth_module_totals(_raw(name))
    m = _model(name)
    mc = compare_modules(m, m)          # with itself: the tree by path, as recorded
    assert mc.form == "path" and mc.sources["a"] == "modules"
    ours = {tuple(n.path.split(" > ")): n.a.time_us for d, n in walk(mc.root) if 1 <= d <= 3
            and n.name not in ("(self)", "outside")}
    assert truth, "the trace records module calls around its launches"
    for path, t in truth.items():
        assert ours.get(path) == pytest.approx(t, rel=1e-9, abs=1e-6), path
    assert set(ours) == set(truth)


# --- truth: host self time, by a sweep over the raw events -------------------------------------------

_ADDR = re.compile(r" at 0x[0-9a-fA-F]+")
_INST = re.compile(r"_[0-9]+$")


def _key(e: dict) -> tuple[str, str]:
    cat, name = e["cat"], e["name"]
    if cat == "python_function":
        return ("python", _INST.sub("", name) if name.startswith("nn.Module: ") else _ADDR.sub("", name))
    return ("runtime" if cat in RUNTIME_CATS else "operator", name)


def truth_self_times(events: list[dict], windows: list[tuple[float, float]]) -> tuple[dict, dict]:
    """Self time per host operation inside the windows: on the thread that made the most runtime
    calls, each instant belongs to the latest-started host event (cpu_op, python_function, runtime
    call) still running (a heap with lazy deletion: not our parent-chain walk)."""
    tids = defaultdict(int)
    for e in events:
        if e.get("cat") in RUNTIME_CATS and e.get("ph") == "X":
            tids[e["tid"]] += 1
    main = max(tids, key=tids.get)
    host = sorted(((float(e["ts"]), -float(e.get("dur", 0)), i, e) for i, e in enumerate(events)
                   if e.get("ph") == "X" and e.get("tid") == main
                   and e.get("cat") in {"cpu_op", "python_function"} | RUNTIME_CATS), key=lambda x: x[:3])
    bounds = sorted({b for ts, nd, _, _ in host for b in (ts, ts - nd)} | {b for w in windows for b in w})
    out: dict[tuple, float] = defaultdict(float)
    segments: dict[tuple, int] = defaultdict(int)
    heap: list = []
    j = 0
    wins = sorted(windows)
    for x, nxt in zip(bounds, bounds[1:]):
        while j < len(host) and host[j][0] <= x:
            ts, nd, seq, e = host[j]
            heapq.heappush(heap, (-ts, -j, ts - nd, _key(e)))
            j += 1
        while heap and heap[0][2] <= x:
            heapq.heappop(heap)
        # the top is the latest-started event left; ended ones below it are popped when they surface
        top = heap[0] if heap else None
        if any(a <= x and nxt <= b for a, b in wins):
            key = top[3] if top else ("none", "(no host event)")
            out[key] += nxt - x
            segments[key] += 1
    return out, segments


@pytest.mark.slow
@pytest.mark.parametrize("name", QWEN + LLAMA[:1])
def test_host_self_times_match_raw_events(name):
    import numpy as np

    from kerneldiff.core.analysis.host_hotspots import host_side

    m = _model(name)
    h = host_side(m)
    steps = sorted({int(s) for s in m.kernels.step.tolist() if s >= 0})
    windows = [(m.steps[s].ts, m.steps[s].ts + m.steps[s].dur) for s in steps]
    truth, segments = truth_self_times(_raw(name), windows)
    ours = {k: float(v) / 1000 for k, v in zip(h.names, h.self_ns.tolist()) if v}
    total = sum(b - a for a, b in windows)
    assert sum(ours.values()) == pytest.approx(total, abs=1e-3 * len(windows))
    # we round each bound to the ns: at most 1 ns off per segment
    for key in sorted(truth, key=truth.get, reverse=True)[:25]:
        assert ours.get(key, 0.0) == pytest.approx(truth[key], abs=1e-3 * segments[key] + 1e-9 * truth[key]), key
    assert np.isclose(sum(truth.values()), total)
