"""How much of a side's GEMM time its recorded shapes cover, on the real A100/V100 pair: V100's
GEMMs mostly run inside a CompiledFunction whose kernels no aten::mm records shapes for. The
comparability reason gives its shared-shape share of all GEMM time (not of the 11 % that has
shapes, which read "100 %"), and the shapes tables say what share they cover. Recomputed from the
raw events: each kernel's launching operator (the innermost cpu_op open at its runtime call), the
shipped classifier's row, the profiler window's cut (a kernel with no launch that ran before the
first launch, or before its stream's first launched kernel, is left out)."""

from __future__ import annotations

import bisect
import gzip
import json
from collections import defaultdict

import pytest

from conftest import real_trace
from test_ledger_split_real import compared

GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm")


def raw_gemm(path, clf) -> tuple[float, float]:
    """(Dense GEMM kernel time whose launching GEMM operator recorded input shapes, all of it), µs."""
    with gzip.open(path, "rt") as f:
        ev = json.load(f)["traceEvents"]
    ops = defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            ops[(e["pid"], e["tid"])].append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), e))
    for v in ops.values():
        v.sort(key=lambda x: (x[0], -x[1]))
    starts = {k: [o[0] for o in v] for k, v in ops.items()}
    calls = {int(e["args"]["correlation"]): e for e in ev
             if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}

    def op_of(c):
        key, ts = (c["pid"], c["tid"]), float(c["ts"])
        lst = ops.get(key, [])
        for j in range(bisect.bisect_right(starts.get(key, []), ts) - 1, -1, -1):
            if lst[j][1] >= ts:
                return lst[j][2]
        return None

    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    first = min(float(c["ts"]) for c in calls.values())
    stream_first: dict = {}
    for e in gpu:
        if int(e["args"].get("correlation", -1)) in calls:
            st = e["args"].get("stream")
            stream_first[st] = min(stream_first.get(st, float("inf")), float(e["ts"]))
    total = shaped = 0.0
    for e in gpu:
        c = calls.get(int(e["args"].get("correlation", -1)))
        ts = float(e["ts"])
        if c is None and (ts < first or ts < stream_first.get(e["args"].get("stream"), float("inf"))):
            continue
        op = op_of(c) if c else None
        cat, rule = clf.classify(e["name"])
        hit = clf.decide(cat, rule, op["name"]) if op else None
        if clf.group(hit[0] if hit else cat) != "Dense GEMM":
            continue
        total += float(e["dur"])
        dims = op["args"].get("Input Dims") if op else None
        if op is not None and op["name"] in GEMM_OPS and dims and any(dims):
            shaped += float(e["dur"])
    return shaped, total


@pytest.mark.real
@pytest.mark.slow
def test_gemm_shape_shares_are_of_all_gemm_time(classifier):
    from kerneldiff.core.compare.comparability import gemm_coverage
    from kerneldiff.core.report.labels import gemm_coverage as coverage_text

    cmp = compared("a100_control.json.gz", "v100_test.json.gz")
    shaped, total = raw_gemm(real_trace("v100_test.json.gz"), classifier)
    assert shaped < 0.15 * total            # V100: most GEMM time has no recorded shapes
    got = gemm_coverage(cmp)["b"]
    assert got == pytest.approx((shaped, total), abs=0.5)
    reason = next(r for r in cmp.comparability.reasons if r.startswith("different GEMM weight shapes"))
    b = cmp.b.label
    # the shared share is of all of V100's GEMM time: at most what has shapes at all
    share = int(reason.split(f"% of {b}'s")[0].rsplit(" ", 1)[-1])
    assert share <= round(100 * shaped / total) + 1
    assert f"{b} {shaped / 1000:,.1f} of {total / 1000:,.1f} ms" in reason
    assert f"{round(100 * shaped / total)}% of B's ({shaped / 1000:,.1f} of {total / 1000:,.1f} ms)" in coverage_text(cmp)


@pytest.mark.real
@pytest.mark.slow
def test_full_coverage_says_so_without_a_caveat():
    from kerneldiff.core.report.labels import gemm_coverage as coverage_text

    cmp = compared("h100_llama_eager_sdpa.json.gz", "h200_llama_eager_sdpa.json.gz")
    assert coverage_text(cmp) == "shapes cover 100% of A's, 100% of B's GEMM time"
