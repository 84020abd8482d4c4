"""The gap ledger's split of each row into more launches and slower kernels, on real pairs: recomputed
here from the raw trace events (kernels' names, their launching operators found from the runtime
External id, or in a trace where none joins the innermost cpu_op open at the runtime call, counts and ns durations, the work the
profiler's window cut left out) with the rule written out again below; only the row a kernel belongs
to is the shipped classifier's (the registry defines the rows). Also: bounds, sum and mirror on
every real pair, and the ledger agreeing with the count_imbalance finding on the same kernels."""

from __future__ import annotations

import bisect
import gzip
import json
import math
from collections import defaultdict

import pytest

from conftest import real_trace

from kerneldiff.core import Session

GPU = ("kernel", "gpu_memcpy", "gpu_memset")
RUNTIME = ("cuda_runtime", "cuda_driver", "hip_runtime", "runtime")


def raw_rows(path, clf, passes: str | None = None, inside: bool = False) -> dict[str, dict[tuple[str, str], list[int]]]:
    """row -> (kernel name, launching operator) -> [launches, ns], from the raw events. `passes`:
    the name of the module call that is one pass (`nn.Module: LlamaForCausalLM_0`); then only the
    kernels launched from the first such call on count (a pass's work runs on after its call ends,
    sampling and the next input, to the next pass), or with `inside` only those launched inside
    one of the calls, as the ledger's rows measure the passes (the rest is between passes)."""
    with gzip.open(path, "rt") as f:
        ev = json.load(f)["traceEvents"]
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ev
                   if passes and e.get("ph") == "X" and str(e.get("name", "")).startswith(passes))
    opens = spans[0][0] if spans else -math.inf
    span_starts = [x[0] for x in spans]

    def in_pass(call) -> bool:
        if not passes:
            return True
        if call is None:
            return False
        ts = float(call["ts"])
        if inside or passes.startswith("ProfilerStep"):    # a training step: the launches inside its span
            j = bisect.bisect_right(span_starts, ts) - 1
            return j >= 0 and spans[j][1] >= ts
        return ts >= opens
    ops = defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            ops[(e["pid"], e["tid"])].append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), e["name"]))
    for v in ops.values():
        v.sort(key=lambda x: (x[0], -x[1]))
    starts = {k: [o[0] for o in v] for k, v in ops.items()}
    calls = {int(e["args"]["correlation"]): e for e in ev
             if e.get("ph") == "X" and e.get("cat") in RUNTIME and "correlation" in e.get("args", {})}

    by_ext: dict = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and "External id" in e.get("args", {}):
            by_ext.setdefault(int(e["args"]["External id"]), e["name"])

    def ext_of(kernel, call):
        ext = kernel["args"].get("External id", call["args"].get("External id") if call else None)
        return int(ext) if ext is not None and int(ext) in by_ext else None

    gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in GPU]
    joins = any(ext_of(e, calls.get(int(e["args"].get("correlation", -1)))) is not None for e in gpu)

    def op_of(kernel, call) -> str:
        """The operator whose External id the kernel (or its runtime call) carries; in a trace where
        no External id joins, the innermost cpu_op open on the launching thread at the call."""
        if joins:
            ext = ext_of(kernel, call)
            return by_ext[ext] if ext is not None else ""
        if call is None:
            return ""
        key, ts = (call["pid"], call["tid"]), float(call["ts"])
        lst = ops.get(key, [])
        for j in range(bisect.bisect_right(starts.get(key, []), ts) - 1, -1, -1):
            if lst[j][1] >= ts:      # the latest-starting operator still open at the call: the innermost
                return lst[j][2]
        return ""

    first = min(float(e["ts"]) for e in gpu if int(e["args"].get("correlation", -1)) in calls)
    out: dict = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for e in gpu:
        call = calls.get(int(e["args"].get("correlation", -1)))
        if call is None and float(e["ts"]) < first:
            continue        # launched before the window opened: left out of both sides' work
        if not in_pass(call):
            continue
        op = op_of(e, call)
        cat, rule = clf.classify(e["name"])
        hit = clf.decide(cat, rule, op) if op else None
        g = out[clf.group(hit[0] if hit else cat)][(e["name"], op)]
        g[0] += 1
        g[1] += round(float(e["dur"]) * 1000)
    return out


def split_here(ga: dict, gb: dict) -> tuple[float, float]:
    """(launches, slower) in µs: by (name, operator), then by operator unless an operator-less kernel
    is left (then the rest as one group); whatever is left on one side only is launches; a group with
    counts ca, cb and means ma, mb gives launches (ca − cb) × the larger-count side's mean and slower
    min(ca, cb) × (ma − mb)."""
    ga, gb = dict(ga), dict(gb)
    launches = slower = 0.0

    def take(keys_a, keys_b):
        nonlocal launches, slower
        ca, ta = sum(ga[k][0] for k in keys_a), sum(ga[k][1] for k in keys_a) / 1000
        cb, tb = sum(gb[k][0] for k in keys_b), sum(gb[k][1] for k in keys_b) / 1000
        for k in keys_a:
            del ga[k]
        for k in keys_b:
            del gb[k]
        ma, mb = ta / ca, tb / cb
        more = ma if ca >= cb else mb
        launches += (ca - cb) * more
        slower += min(ca, cb) * (ma - mb)

    for k in sorted(ga.keys() & gb.keys()):
        take([k], [k])
    if any(not op for g in (ga, gb) for _, op in g):
        if ga and gb:
            take(list(ga), list(gb))
    else:
        for op in sorted({op for _, op in ga} & {op for _, op in gb}):
            take([k for k in ga if k[1] == op], [k for k in gb if k[1] == op])
    launches += sum(t for _, t in ga.values()) / 1000 - sum(t for _, t in gb.values()) / 1000
    return launches, slower


def compared(a, b):
    s = Session([str(real_trace(a)), str(real_trace(b))], use_cache=False)
    s.load_all()
    return s.compare("all")


# the three rows: eager vs compiled Llama Copy/Memory, A100 vs V100 Copy/Memory and Dense GEMM.
# On eager vs compiled, Copy/Memory now gives its kernels of RoPE and RMSNorm to those fused
# operations' own rows (test_ledger_fused_ops checks what moved against the raw events); the rows
# that keep every kernel of their category are recomputed here.
RECOMPUTED = [("h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz", ("Dense GEMM", "Attention"),
               "nn.Module: LlamaForCausalLM_0"),
              ("a100_control.json.gz", "v100_test.json.gz", ("Copy/Memory", "Dense GEMM"), "ProfilerStep#")]


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("a,b,rows,passes", RECOMPUTED)
def test_split_recomputed_from_raw_events(a, b, rows, passes, classifier):
    cmp = compared(a, b)
    assert cmp.basis != "per_pass"          # these pairs compare totals: no per-pass division below
    ra, rb = raw_rows(real_trace(a), classifier, passes), raw_rows(real_trace(b), classifier, passes)
    moved = {r for e in cmp.ledger if e.finding >= 0 for s in "ab" for r in e.from_rows.side(s)}
    ledger = {e.cause: e for e in cmp.ledger if e.kind == "kernels" and e.finding < 0 and e.cause not in moved}
    assert set(rows) <= set(ledger)
    for cause, e in ledger.items():
        ta = sum(v[1] for v in ra.get(cause, {}).values()) / 1000
        tb = sum(v[1] for v in rb.get(cause, {}).values()) / 1000
        assert math.isclose(e.a_us, ta, abs_tol=1e-6) and math.isclose(e.b_us, tb, abs_tol=1e-6), cause
        launches, slower = split_here(ra.get(cause, {}), rb.get(cause, {}))
        assert math.isclose(e.count_gap_us, launches, rel_tol=1e-9, abs_tol=1e-6), (cause, e.count_gap_us, launches)
        assert math.isclose(e.speed_gap_us, slower, rel_tol=1e-9, abs_tol=1e-6), (cause, e.speed_gap_us, slower)
        assert e.split_basis


PAIRS = [("h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz"),
         ("h100_llama_eager_sdpa.json.gz", "h200_llama_eager_sdpa.json.gz"),
         ("a100_control.json.gz", "v100_test.json.gz"),
         ("mi300x_qwen1.5-0.5b_hf.json.gz", "h100_qwen1.5-0.5b_hf.json.gz"),
         ("h100_owlv2_detection.json.gz", "mi300x_owlv2_detection.json.gz"),
         ("mi300x_vllm_gptoss_decode.json.gz", "mi300x_sglang_qwen3-8b_decode.json.gz"),
         ("hta_two_ranks/sampled_rank-0.json.gz", "hta_two_ranks/sampled_rank-1.json.gz"),
         ("b200_vllm_eager.json.gz", "mi250_minitoy_train_rocm.json.gz")]


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("a,b", PAIRS)
def test_split_bounds_sum_and_mirror_on_real_pairs(a, b):
    ab, ba = compared(a, b), compared(b, a)
    mirror = {e.cause: e for e in ba.ledger}
    for e in ab.ledger:
        if e.kind != "kernels":
            continue
        big = max(e.a_us, e.b_us)
        assert math.isclose(e.count_gap_us + e.speed_gap_us, e.gap_us, rel_tol=1e-9, abs_tol=1e-6), e.cause
        assert abs(e.count_gap_us) <= big + 1e-6 and abs(e.speed_gap_us) <= big + 1e-6, e.cause
        m = mirror[e.cause]
        assert math.isclose(m.count_gap_us, -e.count_gap_us, rel_tol=1e-9, abs_tol=1e-6), e.cause
        assert math.isclose(m.speed_gap_us, -e.speed_gap_us, rel_tol=1e-9, abs_tol=1e-6), e.cause


@pytest.mark.real
@pytest.mark.slow
def test_ledger_and_count_imbalance_agree_on_the_same_kernels():
    """MI300X vs H100 Qwen: H100's workspace memsets under aten::mm and aten::addmm are the finding's
    extra launches; the ledger's Copy/Memory row books the same kernels, at the same µs, as launches."""
    cmp = compared("mi300x_qwen1.5-0.5b_hf.json.gz", "h100_qwen1.5-0.5b_hf.json.gz")
    found = [f for f in cmp.fusions if f.kind in ("count_imbalance", "launch_count") and f.fused_category == "Copy/Memory"]
    assert len(found) == 1
    f = found[0]
    row = next(e for e in cmp.ledger if e.cause == "Copy/Memory")
    sign = 1 if f.component_side == "a" else -1
    mine = [p for p in row.split_parts if sign * p.count_gap_us > 0]
    assert math.isclose(sum(sign * p.count_gap_us for p in mine), f.component_cost_us, rel_tol=1e-9)
    assert sum(p.b_launches - p.a_launches for p in mine) * sign * -1 == f.occurrences


@pytest.mark.real
@pytest.mark.slow
def test_the_timeline_and_the_ledger_count_the_same_overlap():
    """Eager Llama runs one stream, yet its activities overlap by ~94 µs on it: the timeline's
    overlap across streams (0) and on one stream add up to the ledger's overlap row, and the
    same-stream part is the raw events' summed durations less each stream's union."""
    path = real_trace("h100_llama_eager_sdpa.json.gz")
    cmp = compared("h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz")
    row = next(e for e in cmp.ledger if e.kind == "overlap")
    tl = cmp.a.timeline
    assert tl.overlap_us + tl.same_stream_overlap_us == pytest.approx(row.a_us, abs=1e-3)
    with gzip.open(path, "rt") as f:
        ev = json.load(f)["traceEvents"]
    by_stream = defaultdict(list)
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in GPU:
            by_stream[str(e["args"].get("stream"))].append((float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    summed = union = 0.0
    for iv in by_stream.values():
        iv.sort()
        end = -math.inf
        for s, e in iv:
            summed += e - s
            if s >= end:
                union += e - s
            elif e > end:
                union += e - end
            end = max(end, e)
    assert tl.same_stream_overlap_us == pytest.approx(summed - union, abs=0.5)
    assert tl.same_stream_overlap_us > 50 and tl.overlap_us == 0.0


@pytest.mark.real
@pytest.mark.slow
def test_a_fused_operation_is_named_on_every_row_that_holds_it():
    """Compiled Llama runs RoPE as 4 Inductor kernels a layer (category RoPE) where eager runs 11
    booked under Elementwise and Copy/Memory: both sides' kernels of it are one row, named after the
    operation and the finding, and the rows they came from name it; compare B A says the same with
    the sides swapped."""
    ab = compared("h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz")
    rows = {e.cause: e for e in ab.ledger}
    rope = rows["RoPE (fused op)"].fusions
    assert len(rope) == 1 and "A 11 kernels a layer" in rope[0] and "B 4.2 kernels a layer" in rope[0]
    assert "op_fusion RoPE" in rope[0]
    assert rope[0] in rows["Elementwise"].fusions and rope[0] in rows["Copy/Memory"].fusions
    assert any(t.startswith("RMSNorm:") for t in rows["RMSNorm (fused op)"].fusions)
    ba = compared("h100_llama_compiled.json.gz", "h100_llama_eager_sdpa.json.gz")
    mirrored = next(t for e in ba.ledger if e.cause == "RoPE (fused op)" for t in e.fusions if t.startswith("RoPE:"))
    assert "B 11 kernels a layer" in mirrored and "A 4.2 kernels a layer" in mirrored
