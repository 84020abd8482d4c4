"""Fused operations in one ledger row, on the real eager/compiled Llama pair: compiled runs RoPE as
~4 Inductor kernels a layer (category RoPE) where eager runs 11 booked under Elementwise and
Copy/Memory. Each op-level fusion gets one row holding both sides' kernels of it; the category rows
keep the rest. Checked against the raw events: every row's kernel time, with what moved, is the
category's time in the raw trace; the kernels eager launches inside `apply_rotary_pos_emb` (the
Python frame, from the recorded stacks) are in the RoPE row; the ledger still sums to the wall gap,
mirrors under swapping the sides, and agrees with the fusion finding beside it."""

from __future__ import annotations

import bisect
import gzip
import json
import math

import pytest

from conftest import real_trace
from test_ledger_split_real import compared, raw_rows

EAGER, COMPILED = "h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz"


@pytest.fixture(scope="module")
def pair():
    return compared(EAGER, COMPILED), compared(COMPILED, EAGER)


def _op_rows(cmp):
    return {e.cause: e for e in cmp.ledger if e.finding >= 0}


@pytest.mark.real
@pytest.mark.slow
def test_each_op_fusion_has_one_row_agreeing_with_its_finding(pair):
    ab, _ = pair
    rows = _op_rows(ab)
    assert {"RoPE (fused op)", "RMSNorm (fused op)"} <= set(rows)
    for e in rows.values():
        f = ab.fusions[e.finding]
        assert f.kind == "op_fusion" and e.cause.startswith(f.fused_category)
        comp, fused = (e.a_us, e.b_us) if f.component_side == "a" else (e.b_us, e.a_us)
        # the same kernels as the finding measured: its component and fused time, its saving
        assert math.isclose(comp, f.component_cost_us, rel_tol=1e-9)
        assert math.isclose(fused, f.fused_cost_us, rel_tol=1e-9)
        assert math.isclose(e.gap_us * (1 if f.component_side == "a" else -1), f.measured_saving_us, rel_tol=1e-9)
        assert math.isclose(e.count_gap_us + e.speed_gap_us, e.gap_us, rel_tol=1e-9, abs_tol=1e-6)
        assert max(abs(e.count_gap_us), abs(e.speed_gap_us)) <= max(e.a_us, e.b_us) + 1e-6
        assert f"fusion finding #{e.finding + 1}" in e.detail
    rope = rows["RoPE (fused op)"]
    assert set(rope.from_rows.a) == {"Elementwise", "Copy/Memory"} and set(rope.from_rows.b) == {"RoPE"}
    assert "A 11 kernels a layer (Elementwise 8, Copy/Memory 3)" in rope.detail


@pytest.mark.real
@pytest.mark.slow
def test_rows_keep_what_is_left_recomputed_from_raw_events(pair, classifier):
    """Each category's raw kernel time = its row's + what the fused-operation rows took of it, on
    both sides; and the ledger still sums to the wall gap. The rows measure the passes: the
    kernels launched inside a forward call (generate()'s sampling after each call lies between
    passes, outside these rows unless --all-passes)."""
    ab, _ = pair
    assert ab.basis != "per_pass"
    passes = "nn.Module: LlamaForCausalLM_0"     # the ledger measures the passes
    raw = {s: raw_rows(real_trace(t), classifier, passes, inside=True) for s, t in (("a", EAGER), ("b", COMPILED))}
    rows = {e.cause: e for e in ab.ledger if e.kind == "kernels"}
    ops = _op_rows(ab)
    moved = {r for e in ops.values() for s in "ab" for r in e.from_rows.side(s)}
    assert {"Elementwise", "Copy/Memory", "RoPE", "RMSNorm"} <= moved
    for side in "ab":
        for cat, groups in raw[side].items():
            want = sum(t for _, t in groups.values()) / 1000
            e = rows.get(cat)
            have = (getattr(e, f"{side}_us") if e is not None else 0.0) \
                + sum(o.from_rows.side(side).get(cat, 0.0) for o in ops.values())
            assert math.isclose(have, want, rel_tol=1e-9, abs_tol=1e-3), (side, cat, have, want)
    # the Elementwise row no longer holds eager's RoPE and RMSNorm kernels: most of its +30.4 ms is gone
    raw_elem = sum(t for _, t in raw["a"]["Elementwise"].values()) / 1000
    assert rows["Elementwise"].a_us < 0.25 * raw_elem
    assert math.isclose(sum(e.gap_us for e in ab.ledger), ab.wall.wall_gap_us, abs_tol=2.0)


@pytest.mark.real
@pytest.mark.slow
def test_eager_kernels_inside_apply_rotary_pos_emb_are_in_the_rope_row(pair):
    """From the raw events: the kernels eager launches inside the Python frame apply_rotary_pos_emb
    in the 47 decode passes (its first 16 calls are the prefill's 16 layers, a different kernel
    sequence the finding does not measure). The RoPE row holds at least these launches and time."""
    with gzip.open(real_trace(EAGER), "rt") as f:
        ev = json.load(f)["traceEvents"]
    frames = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"]), e["tid"]) for e in ev
                    if e.get("cat") == "python_function" and e["name"].endswith(": apply_rotary_pos_emb"))
    assert len(frames) == 48 * 16
    decode = frames[16:]
    starts = [x[0] for x in decode]
    calls = {int(e["args"]["correlation"]): e for e in ev
             if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    n, t = 0, 0.0
    for e in ev:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        c = calls.get(int(e["args"].get("correlation", -1)))
        if c is None:
            continue
        j = bisect.bisect_right(starts, float(c["ts"])) - 1
        if j >= 0 and decode[j][1] >= float(c["ts"]) and decode[j][2] == c["tid"]:
            n += 1
            t += float(e["dur"])
    assert n == 10 * 16 * 47
    rope = _op_rows(pair[0])["RoPE (fused op)"]
    assert rope.a_launches >= n and rope.a_us >= t - 1e-3
    # and no more than the 11 a layer the issue counts
    assert rope.a_launches <= 11 * 16 * 47


@pytest.mark.real
@pytest.mark.slow
def test_fused_rows_mirror(pair):
    ab, ba = pair
    mine, theirs = _op_rows(ab), _op_rows(ba)
    assert set(mine) == set(theirs)
    for cause, e in mine.items():
        m = theirs[cause]
        assert math.isclose(m.a_us, e.b_us, rel_tol=1e-12) and math.isclose(m.b_us, e.a_us, rel_tol=1e-12)
        assert math.isclose(m.count_gap_us, -e.count_gap_us, rel_tol=1e-9, abs_tol=1e-6)
        assert math.isclose(m.speed_gap_us, -e.speed_gap_us, rel_tol=1e-9, abs_tol=1e-6)
        assert m.from_rows.a == e.from_rows.b and m.from_rows.b == e.from_rows.a
    assert "B 11 kernels a layer" in theirs["RoPE (fused op)"].detail
