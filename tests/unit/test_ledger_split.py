"""The ledger row's split into more launches and slower kernels (core/compare/split.py), on generated
rows (Hypothesis): the parts sum to the row's gap, no part's magnitude exceeds the row's larger side,
and swapping the sides negates both."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.core.compare.split import parts_of, split

NAMES = st.sampled_from(["k0", "k1", "k2", "memset", "fill"])
OPS = st.sampled_from(["", "aten::mm", "aten::copy_", "aten::fill_"])
GROUPS = st.dictionaries(st.tuples(NAMES, OPS), st.tuples(st.integers(1, 5000), st.integers(1, 10**9)), max_size=10)


def _close(x: float, y: float, scale: float) -> bool:
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9 * max(scale, 1.0))


@settings(max_examples=100, deadline=None)
@given(GROUPS, GROUPS, st.sampled_from([1, 3, 48]), st.sampled_from([1, 2, 47]))
def test_parts_sum_bound_and_mirror(ga, gb, na, nb):
    launches, slower, parts = split(ga, gb, na, nb, 1000.0)
    ta = sum(t for _, t in ga.values()) / na / 1000.0
    tb = sum(t for _, t in gb.values()) / nb / 1000.0
    big = max(ta, tb)
    assert _close(launches + slower, ta - tb, big)
    assert abs(launches) <= big * (1 + 1e-9) + 1e-9
    assert abs(slower) <= big * (1 + 1e-9) + 1e-9
    for p in parts:
        assert _close(p.count_gap_us + p.speed_gap_us, p.a_us - p.b_us, big)
        assert abs(p.count_gap_us) <= max(p.a_us, p.b_us) * (1 + 1e-9) + 1e-9
        assert abs(p.speed_gap_us) <= max(p.a_us, p.b_us) * (1 + 1e-9) + 1e-9
    # every kernel is in exactly one part
    assert _close(sum(p.a_us for p in parts), ta, big) and _close(sum(p.b_us for p in parts), tb, big)
    l2, s2, _ = split(gb, ga, nb, na, 1000.0)
    assert _close(l2, -launches, big) and _close(s2, -slower, big)


def test_extra_launches_are_priced_at_their_own_mean():
    # A launches 10 kernels of 1 µs, B 1 of 100 µs: 9 extra at A's 1 µs, the shared one 99 µs faster on A
    assert parts_of(10, 10.0, 1, 100.0) == (9.0, -99.0)
    # pricing at the mean of both means would have claimed 9 × 50.5 µs of launches, more than either side ran
    assert parts_of(1, 100.0, 10, 10.0) == (-9.0, 99.0)


def test_operators_are_not_pooled_across():
    # H100's workspace memsets under aten::mm against MI300X fills under aten::fill_: different work, all launches
    a = {("fill", "aten::fill_"): (24, 107_500)}
    b = {("memset", "aten::mm"): (96, 80_300), ("memset", "aten::addmm"): (72, 62_800)}
    launches, slower, parts = split(a, b, 1, 1, 1000.0)
    assert slower == 0.0 and {p.level for p in parts} == {"one side"}
    assert math.isclose(launches, 107.5 - 143.1)


def test_operatorless_kernels_fall_back_to_the_category():
    # V100's backward GEMMs carry no operator: matched against A100's as one group, not as extra launches
    a = {("ampere_gemm", "aten::mm"): (100, 1_000_000)}
    b = {("volta_gemm", ""): (100, 2_000_000)}
    launches, slower, parts = split(a, b, 1, 1, 1000.0)
    assert launches == 0.0 and slower == -1000.0 and parts[0].level == "category"
