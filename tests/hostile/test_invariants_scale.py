"""Issue 26: scaling every duration and every time about the first by k scales every time kerneldiff
reports by k and leaves every ratio and count. The thresholds that are times of their own say so:
the launch tolerance (`tolerance_us`, 10 µs; the idle split is the same when it is scaled too), and
the fusion gate's hardware prices (launch and sync costs, bandwidths) and the rates (TFLOP/s, TB/s,
% of peak), which are per time: those parts of the report are left out here."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import invariants as inv
from conftest import real_trace
from kerneldiff.core.analysis.timeline import LAUNCH_TOLERANCE_US, _flat, timeline
from kerneldiff.core.orchestration import load

# Parts priced against hardware constants or rates (see the module's docstring), and the idle split,
# which depends on the launch tolerance (checked on its own below)
NOT_SCALED = ("fusions", "throughput", "gemm_shapes", "attention_shapes", "peaks", "warnings", "wall",
              "launch_bound_us", "sync_us", "other_us", "tolerance_us", "launch_bound_gap_us", "sync_gap_us",
              "ledger", "comparability")   # the ledger's causes split idle by the tolerance: its sum is checked
RATIOS = ("ratio", "kernel_ratio", "wall_ratio", "share")
# times go through integer ns (timeline.py) and a float's rounding of t0 + (t - t0) * k: a few ns
# per event summed, relative to the figure
REL, ABS_US = 1e-6, 0.05
ORIGIN_US = 10**6


def _close(x: float, y: float) -> bool:
    return math.isclose(x, y, rel_tol=REL, abs_tol=ABS_US)


def check_scaled(base, scaled, k: float, where: str = "", bad: list | None = None) -> list[str]:
    bad = [] if bad is None else bad
    if isinstance(base, dict) and isinstance(scaled, dict):
        if set(base) != set(scaled):
            bad.append(f"{where}: keys differ")
        for key in base:
            if key in NOT_SCALED or key not in scaled:
                continue
            w = f"{where}.{key}"
            x, y = base[key], scaled[key]
            if isinstance(x, (int, float)) and not isinstance(x, bool) and isinstance(y, (int, float)):
                if str(key).endswith("_us"):
                    ok = _close(k * x, y)
                elif key in RATIOS or str(key).endswith(("_ratio", "_share")):
                    ok = math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-9)
                else:
                    ok = x == y
                if not ok:
                    bad.append(f"{w}: {x} -> {y}")
            else:
                check_scaled(x, y, k, w, bad)
    elif isinstance(base, list) and isinstance(scaled, list):
        if len(base) != len(scaled):
            bad.append(f"{where}: {len(base)} items -> {len(scaled)}")
        for i, (x, y) in enumerate(zip(base, scaled)):
            check_scaled(x, y, k, f"{where}[{i}]", bad)
    elif base != scaled:
        bad.append(f"{where}: {base!r} -> {scaled!r}")
    return bad


def _pair(root, a: dict, b: dict, tag: str):
    (root / tag / "a").mkdir(parents=True)
    (root / tag / "b").mkdir(parents=True)
    pa = inv.write_doc(root / tag / "a" / "trace.json", a)
    pb = inv.write_doc(root / tag / "b" / "trace.json", b)
    return pa, pb


def _scaled_everything(root, a: dict, b: dict, k: int) -> None:
    """compare A B against compare kA kB (and info of each); both moved to start at 1 s, where every
    ns of the clock is exact (see invariants.scaled)."""
    pa, pb = _pair(root, inv.scaled(a, 1, ORIGIN_US), inv.scaled(b, 1, ORIGIN_US), "base")
    sa, sb = _pair(root, inv.scaled(a, k, ORIGIN_US), inv.scaled(b, k, ORIGIN_US), "scaled")
    assert check_scaled(inv.info_answer(pa), inv.info_answer(sa), k) == []
    base, scaled = inv.compare_answer(pa, pb), inv.compare_answer(sa, sb)
    assert check_scaled(base, scaled, k) == []
    if "ledger" in base:   # the gap ledger sums to the wall-clock gap, whatever its split
        assert _close(k * sum(e["gap_us"] for e in base["ledger"]), sum(e["gap_us"] for e in scaled["ledger"]))
        assert base["comparability"]["verdict"] == scaled["comparability"]["verdict"]
    # the idle split, with the launch tolerance scaled as well
    for p, s in ((pa, sa), (pb, sb)):
        t0 = timeline(load(p, use_cache=False, workers=0))
        t1 = timeline(load(s, use_cache=False, workers=0), tolerance_us=LAUNCH_TOLERANCE_US * k)
        for w0, w1 in zip([t0.whole, *t0.passes], [t1.whole, *t1.passes]):
            for name, v in _flat(w0).items():
                if name.endswith("_us"):
                    assert _close(k * v, getattr(w1, name)), (name, v, getattr(w1, name))


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), k=st.sampled_from([2, 3, 4]),
       style=st.sampled_from(["hf-generate", "vllm", "hf"]))
def test_scaling_the_clock_scales_every_time_on_generated_traces(tmp_path_factory, seed, k, style):
    root = tmp_path_factory.mktemp("scale")
    a = inv.synth_doc(root / "a", seed, style, "nvidia", float_ts=True)
    b = inv.synth_doc(root / "b", seed + 1, style, "amd", float_ts=True)
    _scaled_everything(root, a, b, k)


@pytest.mark.parametrize("pair", [
    ("mi300x_sglang_qwen3-8b_decode.json.gz", "mi300x_vllm_gptoss_decode.json.gz"),
    pytest.param(("h100_qwen1.5-0.5b_hf.json.gz", "mi300x_qwen1.5-0.5b_hf.json.gz"), marks=pytest.mark.slow),
    pytest.param(("a100_control.json.gz", "v100_test.json.gz"), marks=pytest.mark.slow),
], ids=lambda p: "-".join(x.split("_")[0] for x in p))
def test_scaling_the_clock_scales_every_time_on_real_traces(tmp_path, pair):
    a, b = (inv.read_doc(real_trace(n)) for n in pair)
    _scaled_everything(tmp_path, a, b, 2)
