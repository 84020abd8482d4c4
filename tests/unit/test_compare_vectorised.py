"""The vectorised group-bys of kerneldiff.core.compare.engine give exactly (bit for bit) what the plain per-group
numpy calls they replace give: same sums, same percentiles, same tie order."""

from __future__ import annotations

import copy
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kerneldiff.core.compare.engine import _column_stats, _LayerGroups, _top_ids, _View, stats_of
from kerneldiff.core.analysis.layer_groups import row_ids, segment_sums


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def _segments(rng, n_seg: int, max_len: int):
    length = rng.integers(1, max_len + 1, n_seg)
    start = np.concatenate(([0], np.cumsum(length)[:-1])).astype(np.int64)
    return start, length


def test_column_stats_equal_stats_of_each_column(rng):
    for rows, cols in ((1, 1), (1, 5), (7, 3), (300, 17), (1386, 14)):
        mat = np.round(rng.exponential(10.0, (rows, cols)), 3)  # rounded: ties in the percentiles
        assert _column_stats(mat) == [stats_of(mat[:, i]) for i in range(cols)]


def test_column_stats_of_many_matrices_equal_one_at_a_time(rng):
    from kerneldiff.core.compare.engine import _column_stats_many

    shapes = [(284, 14), (284, 9), (1, 0), (3, 5), (284, 1), (0, 4), (1, 7), (3, 2)]
    mats = [np.round(rng.exponential(10.0, s), 3) for s in shapes]
    assert _column_stats_many(mats) == [_column_stats(m) for m in mats]
    assert _column_stats_many([]) == []


def test_segment_sums_equal_one_dimensional_sums(rng):
    start, length = _segments(rng, 500, 300)
    values = rng.lognormal(2.0, 2.0, int(length.sum()))
    sums = segment_sums(values, start, length)
    assert sums.tolist() == [float(values[s:s + n].sum()) for s, n in zip(start, length)]


def test_row_ids_equal_exactly_for_equal_sequences(rng):
    start, length = _segments(rng, 400, 4)
    values = rng.integers(0, 3, int(length.sum()))
    ids = row_ids(values, start, length).tolist()
    seqs = [tuple(values[s:s + n].tolist()) for s, n in zip(start, length)]
    for i in range(len(seqs)):
        for j in range(i + 1, len(seqs)):
            assert (ids[i] == ids[j]) == (seqs[i] == seqs[j])


@pytest.mark.parametrize("low", [0, -1])
def test_top_ids_match_unique_then_bincount(rng, low):
    for _ in range(50):
        ids = rng.integers(low, 12, int(rng.integers(1, 200))).astype(np.int32)
        w = rng.integers(0, 4, len(ids)).astype(float)  # integer weights: many tied totals
        uniq, inv = np.unique(ids, return_inverse=True)
        expected = [int(uniq[i]) for i in np.argsort(-np.bincount(inv, weights=w))[:5]]
        assert _top_ids(ids, w, 5) == expected


def test_stable_argsort(rng):
    from kerneldiff.core.numbers import stable_argsort

    for lo, hi in ((0, 30), (-5, 250), (1_000_000, 1_000_300), (-40_000, 20_000), (0, 70_000), (-2**62, 2**62)):
        for dtype in (np.int32, np.int64):
            if hi > np.iinfo(dtype).max or lo < np.iinfo(dtype).min:
                continue
            ids = rng.integers(lo, hi, 5000).astype(dtype)
            assert np.array_equal(stable_argsort(ids), np.argsort(ids, kind="stable"))
    assert len(stable_argsort(np.zeros(0, np.int64))) == 0


def test_layer_groups_match_a_per_group_walk(demo_models, classifier, rng):
    """Groups, per-pass totals and the modal sequence (earliest on a tie) against a plain walk
    over the kernels, on a demo model whose names are cut to a few so that sequences tie."""
    # a copy with its own kernels table and no memoised readings: the shared demo model is untouched
    m = copy.copy(next(iter(demo_models.values())))
    m.__dict__.pop("_memo", None)
    m.kernels = k = m.kernels.take(slice(None))
    k.name = rng.choice(np.unique(k.name)[:3], len(k))
    k.layer = rng.integers(-1, 4, len(k))  # (layer, step) groups no longer contiguous in time
    v = _View("a", m, "all", classifier)
    g = _LayerGroups(v)
    groups: dict[int, dict[int, list[int]]] = {}
    for pos in range(len(v.rows)):
        if k.layer[pos] >= 0:
            groups.setdefault(int(k.layer[pos]), {}).setdefault(int(k.step[pos]), []).append(pos)
    assert sorted(g.ranges) == sorted(groups)
    for layer, by_step in groups.items():
        passes = [by_step[s] for s in sorted(by_step)]
        totals = [float(v.dur[p].sum()) for p in passes]
        side = g.side(layer)
        assert (side.passes, side.kernels) == (len(passes), sum(map(len, passes)))
        assert side.total_us == float(np.array(totals).sum())
        assert side.median_us == float(np.median(totals))
        assert side.p90_us == float(np.percentile(totals, 90))
        t = np.array(totals)
        assert side.spread_us == (float(1.4826 * np.median(np.abs(t - np.median(t)))) if len(t) >= 3 else None)
        sigs = [tuple(v.name[p].tolist()) for p in passes]
        sig, _ = Counter(sigs).most_common(1)[0]
        same = [p for p, s in zip(passes, sigs) if s == sig]
        got_sig, got_dur, got_first = g.modal(layer)
        assert got_sig == sig and got_first.tolist() == same[0]
        assert np.array_equal(got_dur, np.vstack([v.dur[p] for p in same]))


def test_grouped_stats_equal_stats_of_each_group_bit_for_bit(rng):
    """_same_kernels's statistics, one numpy call per group size (100,000 distinct names took 15 s
    one np.percentile at a time), against stats_of on each group."""
    from kerneldiff.core.compare.engine import _grouped_stats, stats_of

    d = rng.exponential(10.0, 5_000) * rng.choice([1e-3, 1.0, 1e3], 5_000)
    order = rng.permutation(len(d))
    sizes = rng.integers(1, 40, 400)
    cuts = np.cumsum(sizes)
    groups = [g for g in np.split(order, cuts[cuts < len(d)]) if len(g)]
    got = _grouped_stats(d, groups, float(d.sum()))
    assert got == [stats_of(d[g], float(d.sum())) for g in groups]


def _same_float(x: float, y: float) -> bool:
    return (x != x and y != y) or (x == y and np.copysign(1.0, x) == np.copysign(1.0, y))


_FLOATS = st.lists(st.one_of(st.floats(width=64), st.sampled_from([0.0, -0.0, 1.0, np.inf, -np.inf, 5e-324, 1e308])),
                   min_size=1, max_size=300)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_FLOATS, st.sampled_from([0, 1, 5, 25, 50, 75, 90, 95, 99, 99.9, 100]))
def test_small_median_and_percentile_are_numpys(values, q):
    """core.numbers.median/percentile (a Python sort below SMALL values) against numpy's own, bit
    for bit, infinities, ±0 and NaN included."""
    from kerneldiff.core.numbers import median, percentile

    a = np.array(values, dtype=float)
    with np.errstate(all="ignore"):
        assert _same_float(percentile(a, q), float(np.percentile(a, q)))
        assert _same_float(median(a), float(np.median(a)))
        assert _same_float(median(values), float(np.median(a)))


def test_shape_positions_equal_isin(demo_models, classifier):
    """The throughput side's kernel positions per shape, from one sort by shape, against np.isin of
    the shape's work ids; and the distinct operators and names per shape against np.unique."""
    from kerneldiff.core.compare.throughput import GEMM, ATTENTION, _distinct, _key, _Side

    for m in demo_models.values():
        side = _Side(_View("a", m, "all", classifier), None)
        for kind in (GEMM, ATTENTION):
            found = side.shape_positions(kind)
            want = {}
            for i, w in enumerate(side.work.works):
                if w.kind == kind:
                    want.setdefault(_key(w), []).append(i)
            want = [(k, wids, np.flatnonzero(np.isin(side.kw, wids))) for k, wids in want.items()]
            want = [x for x in want if len(x[2])]
            assert [(k, w) for k, w, _ in found] == [(k, w) for k, w, _ in want]
            assert all(np.array_equal(p, q) for (_, _, p), (_, _, q) in zip(found, want))
            if found:
                every = np.concatenate([p for _, _, p in found])
                shape = np.repeat(np.arange(len(found)), [len(p) for _, _, p in found])
                for values in (side.op, side.v.name):
                    assert _distinct(values[every], shape, len(found)) == [len(np.unique(values[p])) for _, _, p in found]


_SPANS = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 3_000)), max_size=60)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_SPANS, _SPANS)
def test_exposed_length_is_the_two_unions_difference(compute, comm):
    """The ledger's exposed communication, |compute ∪ comm| − |compute| taken from one merge of the
    compute kernels, against the two unions it replaces (integer ns: equal exactly)."""
    from kerneldiff.core.analysis.timeline import merge_intervals
    from kerneldiff.core.compare.ledger import _covered

    def union(spans):
        s = np.array([a for a, _ in spans], dtype=np.int64)
        e = np.array([a + d for a, d in spans], dtype=np.int64)
        return merge_intervals(s, e)

    def length(spans) -> int:
        s, e = union(spans)
        return int((e - s).sum())

    ms, me = union(comm)
    cs, ce = union(compute)
    assert int((me - ms).sum()) - _covered(ms, me, cs, ce) == length(compute + comm) - length(compute)


def test_ledger_groups_equal_one_key_per_row(demo_models, classifier):
    """The ledger's (family, name, operator) groups, keyed by ranks, against np.unique of a key per row."""
    from kerneldiff.core.compare.ledger import _groups, _ns

    for m in demo_models.values():
        v = _View("a", m, "all", classifier)
        op = v._take(m.kernels.cpu_op)
        op_name = np.where(op >= 0, m.cpu_ops.name[np.maximum(op, 0)], -1).astype(np.int64)
        rows = list(zip(v.gcat.tolist(), v.name.tolist(), op_name.tolist()))
        expected: dict = {}
        for (g, n, o), d in zip(rows, _ns(v.dur).tolist()):
            key = (v.groups[g], m.strings[n], m.strings[o] if o >= 0 else "")
            c, t = expected.get(key, (0, 0))
            expected[key] = (c + 1, t + d)
        got = _groups(v)
        assert got == expected
        # in the order of the integer keys (family id, name id, operator id)
        assert list(got) == [(v.groups[g], m.strings[n], m.strings[o] if o >= 0 else "") for g, n, o in sorted(set(rows))]


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12), st.integers(1, 40), st.data())
def test_row_percentiles_are_numpys(n_rows, n_cols, data):
    """core.numbers.row_percentiles (one sort of the rows) against np.percentile(axis=1), bit for bit:
    ties, infinities, NaN and ±0 included."""
    from kerneldiff.core.numbers import row_percentiles

    cells = data.draw(st.lists(st.one_of(st.floats(width=64), st.sampled_from([0.0, -0.0, 1.0, 2.0, np.inf, -np.inf])),
                               min_size=n_rows * n_cols, max_size=n_rows * n_cols))
    rows = np.array(cells, dtype=float).reshape(n_rows, n_cols)
    qs = [50, 90, 95, 0, 100, 33.3]
    with np.errstate(all="ignore"):
        got = row_percentiles(rows, qs)
        want = np.percentile(rows, qs, axis=1).tolist()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert all(_same_float(x, y) for x, y in zip(g, w)), (g, w)


def test_mirrored_pair_is_replace_with_the_sides_exchanged():
    """swap.pair copies the pair with its sides' fields exchanged: what dataclasses.replace gives."""
    from dataclasses import fields, replace

    from kerneldiff.core.compare.result import KernelPair, Stats
    from kerneldiff.core.compare.swap import pair

    p = KernelPair(3, "ka", None, "GEMM", None, Stats(count=2, total_us=4.0), Stats(), 2.0, 1.5, False,
                   fusion_note="note", fusion_kind="only_on", a_row=7, b_row=-1, a_rule="r", b_rule="", group=2)
    want = replace(p, a_name=p.b_name, b_name=p.a_name, a_category=p.b_category, b_category=p.a_category,
                   a=p.b, b=p.a, ratio=0.5, gap_us=-1.5, a_row=p.b_row, b_row=p.a_row, a_rule=p.b_rule, b_rule=p.a_rule)
    got = pair(p)
    assert got == want and got is not p and p.a_name == "ka"
    assert [f.name for f in fields(got)] == [f.name for f in fields(p)]


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2_000), st.integers(0, 300)), max_size=40),
       st.lists(st.tuples(st.integers(0, 2_000), st.integers(0, 400)), min_size=1, max_size=12))
def test_lead_in_equals_a_scan_of_every_call(calls, windows):
    """host_time's pass windows moved back over the guard checks and compiled regions that lead into
    them, by bisection over the calls in start order, against the scan of every call per window."""
    from types import SimpleNamespace

    from kerneldiff.core.analysis.host_time import _LEAD_GAP_US, _lead_in

    ts = np.array([float(a) for a, _ in calls])
    dur = np.array([float(d) for _, d in calls])
    ws = np.sort(np.array([float(a) for a, _ in windows]))
    we = ws + np.array([float(d) for _, d in windows])
    m = SimpleNamespace(cpu_ops=SimpleNamespace(ts=ts, dur=dur))
    rows = np.arange(len(calls))
    want = ws.copy()
    end = ts + np.maximum(dur, 0.0)
    for i in range(len(ws)):
        floor = we[i - 1] if i else -np.inf
        while True:
            hit = (ts < want[i]) & (ts >= floor) & (end >= want[i] - _LEAD_GAP_US)
            if not hit.any():
                break
            want[i] = float(ts[hit].min())
    got = _lead_in(m, ws, we, rows)
    assert got.dtype == ws.dtype and got.tolist() == want.tolist()


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 300), st.data())
def test_stats_of_is_the_numpy_formula(n, data):
    """stats_of (percentiles from one sort) against the figures np.percentile gives, bit for bit:
    ties, infinities, NaN and ±0 included, and a long array (the sort's SIMD path)."""
    cells = data.draw(st.lists(st.one_of(st.floats(width=64), st.sampled_from([0.0, -0.0, 1.0, 2.5, np.inf, -np.inf])),
                               min_size=n, max_size=n))
    for d in (np.array(cells, dtype=float), np.resize(np.array(cells, dtype=float), 150_000)):
        with np.errstate(all="ignore"):
            got = stats_of(d, 10.0)
            q = np.percentile(d, [50, 90, 95])
            t = float(d.sum())
        want = (len(d), t, t / len(d), float(q[0]), float(d.min()), float(q[1]), float(q[2]), float(d.max()), t / 10.0)
        have = (got.count, got.total_us, got.mean_us, got.median_us, got.min_us, got.p90_us, got.p95_us, got.max_us, got.share)
        assert all(_same_float(float(x), float(y)) for x, y in zip(have, want)), (have, want)
