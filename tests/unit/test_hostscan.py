"""The host hotspots' sweep in C (core/analysis/_hostscan.c) against the numpy sweep it replaces
(host_hotspots.py `_attribute` with use_c=False, the reference and the fallback where no compiler
is at hand): the same time per name, window and gap on random events (nested, crossing, tied, of
no duration) and on a real trace's launching thread; and the numpy segments' owners on nested calls
against a plain recount."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.core.analysis.host_hotspots import _attribute, _segments

needs_c = pytest.mark.skipif(importlib.util.find_spec("kerneldiff.core.analysis._hostscan") is None,
                             reason="the C sweep is not built")


def _windows(draw, lo, hi, k):
    """k sorted disjoint windows in [lo, hi] (some of no length)."""
    b = sorted(draw(st.lists(st.integers(lo, hi), min_size=2 * k, max_size=2 * k)))
    return np.array(b[0::2], np.int64), np.array(b[1::2], np.int64)


def _same(ts, end, names, ws, we, gs, ge):
    n = int(names.max()) + 2 if len(names) else 1
    c = _attribute(ts, end, names, n - 1, n, ws, we, gs, ge, use_c=True)
    r = _attribute(ts, end, names, n - 1, n, ws, we, gs, ge, use_c=False)
    for x, y in zip(c, r):
        assert x.dtype == y.dtype == np.int64
        assert np.array_equal(x, y)
    return c


@st.composite
def events(draw):
    """Events on a small grid, so that starts, ends and probes meet at the same ns often; nested
    calls (a child inside its parent) mixed with crossing ones and ones of no or negative length."""
    n = draw(st.integers(0, 40))
    unit = draw(st.sampled_from([1, 7, 1000]))
    ts, end = [], []
    for _ in range(n):
        if ts and draw(st.booleans()):   # a child of an earlier event, inside it
            j = draw(st.integers(0, len(ts) - 1))
            a = draw(st.integers(ts[j], max(ts[j], end[j])))
            b = draw(st.integers(a, max(a, end[j])))
        else:
            a = draw(st.integers(-20, 60))
            b = a + draw(st.integers(-2, 30))
        ts.append(a)
        end.append(b)
    probes = draw(st.lists(st.integers(-25, 100), max_size=12))
    return (np.array(ts, np.int64) * unit, np.array(end, np.int64) * unit, np.array(probes, np.int64) * unit,
            unit)


@st.composite
def calls(draw):
    """Properly nested calls (a thread's call stack): opens and closes at nondecreasing times on a
    grid, each close ending the innermost open call; ties of starts and ends common."""
    t, stack, ts, end = 0, [], [], []
    for _ in range(draw(st.integers(0, 60))):
        t += draw(st.integers(0, 3))
        if stack and draw(st.booleans()):
            end[stack.pop()] = t
        else:
            stack.append(len(ts))
            ts.append(t)
            end.append(t)
    for i in stack:
        end[i] = t + 1
    probes = draw(st.lists(st.integers(-2, t + 3), max_size=8))
    return np.array(ts, np.int64), np.array(end, np.int64), np.array(probes, np.int64)


@needs_c
@settings(max_examples=60, deadline=None)
@given(events(), st.data())
def test_c_sweep_is_the_numpy_sweep(ev, data):
    ts, end, _, unit = ev
    names = np.array(data.draw(st.lists(st.integers(0, 4), min_size=len(ts), max_size=len(ts))), np.int64)
    ws, we = _windows(data.draw, -30 * unit, 110 * unit, data.draw(st.integers(0, 4)))
    gs = np.array(data.draw(st.lists(st.integers(-30, 110), max_size=6)), np.int64) * unit
    ge = gs + np.array(data.draw(st.lists(st.integers(0, 20), min_size=len(gs), max_size=len(gs))), np.int64) * unit
    per, idle = _same(ts, end, names, ws, we, gs, ge)
    # every instant of a window and of the gaps' union is someone's (an event's or none's)
    assert per.sum(0).tolist() == (we - ws).tolist()
    b = sorted(zip(gs.tolist(), ge.tolist()))
    union, reach = 0, None
    for a, e in b:
        start = a if reach is None else max(a, reach)
        union += max(e - start, 0)
        reach = e if reach is None else max(reach, e)
    assert int(idle.sum()) == union


@settings(max_examples=60, deadline=None)
@given(calls())
def test_nested_calls_each_instant_owned_by_the_latest_started_call_running(ev):
    ts, end, probes = ev
    s, e, owner = _segments(ts, end, probes)
    assert np.all(s < e) and np.array_equal(s[1:], e[:-1])
    for a, b, o in zip(s.tolist(), e.tolist(), owner.tolist()):
        running = [j for j in range(len(ts)) if ts[j] <= a and end[j] >= b and end[j] > ts[j]]
        # the latest started; at equal starts the shorter (the inner: a call opened later)
        want = max(running, key=lambda j: (ts[j], -end[j], j)) if running else -1
        assert o == want


def test_nested_calls_are_owned_innermost():
    # a [0, 100) > b [10, 50) > c [20, 30); d [60, 70) inside a; probe at 80
    ts = np.array([0, 10, 20, 60], np.int64)
    end = np.array([100, 50, 30, 70], np.int64)
    s, e, owner = _segments(ts, end, np.array([80], np.int64))
    assert s.tolist() == [0, 10, 20, 30, 50, 60, 70, 80]
    assert owner.tolist() == [0, 1, 2, 1, 0, 3, 0, 0]


@needs_c
@pytest.mark.slow
def test_real_launching_thread():
    from conftest import real_trace

    from kerneldiff.core.analysis.host_hotspots import _events
    from kerneldiff.core.session import Session

    m = Session([str(real_trace("h100_qwen1.5-0.5b_hf.json.gz"))], use_cache=False).load(0)
    ts, end, tid, names, _ = _events(m)
    main = np.bincount(tid - tid.min()).argmax() + tid.min()
    t0 = float(m.kernels.ts.min())
    mine = tid == main
    a = np.rint((ts[mine] - t0) * 1000).astype(np.int64)
    b = np.rint((end[mine] - t0) * 1000).astype(np.int64)
    cut = np.linspace(a.min(), b.max(), 41).astype(np.int64)
    ws, we = cut[0:-1:2], cut[1::2]
    gs = np.linspace(a.min(), b.max(), 300).astype(np.int64)
    per, idle = _same(a, b, names[mine], ws, we, gs, gs + 5000)
    assert per[:-1].sum() > 0.5 * per.sum()   # most of the windows' time is some event's
