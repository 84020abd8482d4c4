"""The gate knows its noise (issue 39): limits compared at the shown precision, a GPU change named and
inconclusive unless allowed, kernel time checked where the wall is launch-bound, a floor from the
spread between several recordings a side, and a verdict whose reasons agree with it."""

from __future__ import annotations

import gzip
import json
import math

import pytest

from conftest import real_trace

from kerneldiff.core.gate.repeats import between_floor
from kerneldiff.core.gate.noise import Z
from kerneldiff.core.gate.spec import parse_limit
from kerneldiff.core.gate.verdict import comparability_of, hardware_reasons, over_limit


def test_limits_are_compared_at_the_shown_precision():
    three = parse_limit("3%")
    base = 1000.0
    # 3.0000000000000187 % of float rounding is the +3.0 % the report shows: not over a 3 % limit
    assert not over_limit(three, base * 0.030000000000000187, base, base * 1.030000000000000187)
    assert over_limit(three, base * 0.0306, base, base * 1.0306)          # shown +3.1 %
    assert not over_limit(three, -base * 0.05, base, base * 0.95)         # faster is never over
    two_ms = parse_limit("+2ms")
    assert not over_limit(two_ms, 2000.0000000001, 1e5, 1e5 + 2000.0000000001)
    assert over_limit(two_ms, 2000.002, 1e5, 1e5 + 2000.002)


def test_between_run_floor():
    assert between_floor([10.0], [11.0]) is None
    # two recordings a side, each pair √2 apart in σ (ddof 1): Z·√(2/2 + 2/2)
    assert math.isclose(between_floor([9.0, 11.0], [5.0, 7.0]), Z * math.sqrt(2.0))
    # one recording on a side borrows the other side's spread
    assert math.isclose(between_floor([10.0], [5.0, 7.0]), Z * math.sqrt(2 / 1 + 2 / 2))


def test_comparability_never_says_comparable_above_a_reason_against_it():
    class C:
        verdict, reasons, notes = "comparable", [], []
    hw = hardware_reasons("NVIDIA H200", "NVIDIA H100 80GB HBM3")
    assert hw and "H200" in hw[0] and "H100" in hw[0]
    c = comparability_of(C(), hw)
    assert c.verdict == "partly" and c.reasons == hw
    assert comparability_of(C(), []).verdict == "comparable"
    assert hardware_reasons("NVIDIA H100", "NVIDIA H100") == [] and hardware_reasons("", "NVIDIA H100") == []


def _gate(*args):
    from kerneldiff.cli.main import main
    import io
    import contextlib

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["gate", *map(str, args), "--format", "json"])
    return code, json.loads(out.getvalue())


def _agree(doc):
    """The verdict and its reasons agree; the comparability shown agrees with its own reasons."""
    assert (doc["verdict"] == "inconclusive") == bool(doc["reasons"]) or doc["verdict"] == "inconclusive"
    if doc["verdict"] != "inconclusive":
        assert doc["reasons"] == []
    comp = doc["comparability"]
    if comp.get("verdict") == "comparable":
        assert not comp["reasons"]


@pytest.mark.real
@pytest.mark.slow
def test_a_gpu_change_is_inconclusive_unless_allowed():
    a, b = real_trace("h200_llama_eager_sdpa.json.gz"), real_trace("h100_llama_eager_sdpa.json.gz")
    code, doc = _gate(a, b)
    assert code == 1 and doc["verdict"] == "inconclusive"
    assert any(r.startswith("hardware changed") for r in doc["reasons"])
    assert any("hardware changed" in r for r in doc["comparability"]["reasons"])
    _agree(doc)
    code, doc = _gate(a, b, "--allow-hardware-change")
    assert doc["verdict"] == "regression"          # H100 is ~15 % slower than H200 per pass
    assert not any(r.startswith("hardware changed") for r in doc["reasons"])
    _agree(doc)


def _scaled(src, dst, factor: float, kernels_only: bool):
    with gzip.open(src, "rt") as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    t0 = min(float(e["ts"]) for e in ev if "ts" in e)
    for e in ev:
        if kernels_only:
            if e.get("cat") == "kernel" and "dur" in e:
                e["dur"] = float(e["dur"]) * factor
            continue
        if "ts" in e:
            e["ts"] = t0 + (float(e["ts"]) - t0) * factor
        if "dur" in e:
            e["dur"] = float(e["dur"]) * factor
    with gzip.open(dst, "wt") as f:
        json.dump(doc, f)
    return dst


@pytest.mark.real
@pytest.mark.slow
def test_a_kernel_slowdown_in_a_launch_bound_trace_is_caught_by_default(tmp_path):
    base = real_trace("h100_llama_eager_sdpa.json.gz")
    new = _scaled(base, tmp_path / "kernels_x1.25.json.gz", 1.25, kernels_only=True)
    code, doc = _gate(base, new)
    checks = {c["metric"]: c for c in doc["checks"]}
    assert "kernels" in checks and checks["kernels"]["status"] == "regression"
    assert math.isclose(checks["kernels"]["delta_pct"], 25, abs_tol=0.5)
    assert any("launch-bound" in n and "kernel time checked too" in n for n in doc["notes"])
    assert doc["verdict"] == "regression" and code == 1
    _agree(doc)


@pytest.mark.real
@pytest.mark.slow
def test_several_recordings_a_side_take_the_floor_between_runs(tmp_path):
    base = real_trace("h100_llama_eager_sdpa.json.gz")
    # two "recordings" of the base workload 2 % apart: a run-to-run spread the passes cannot see
    b2 = _scaled(base, tmp_path / "b2.json.gz", 1.02, kernels_only=False)
    n1 = _scaled(base, tmp_path / "n1.json.gz", 1.03, kernels_only=False)
    code, one = _gate(base, n1)
    assert any("within each trace only" in n for n in one["notes"])
    code, doc = _gate(base, b2, "--new", n1)
    wall = next(c for c in doc["checks"] if c["metric"] == "wall")
    assert wall["noise_from"].startswith("between runs (2 base, 1 new)")
    one_wall = next(c for c in one["checks"] if c["metric"] == "wall")
    assert wall["noise"] > one_wall["noise"]
    assert math.isclose(wall["base"], (one_wall["base"] * (1 + 1.02)) / 2, rel_tol=1e-3)
    assert wall["status"] != "regression"     # +2 % on the mean, within a 2 %-spread floor
    _agree(doc)
