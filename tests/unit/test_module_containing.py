"""`ModuleCalls.containing`: the module calls around a time on a thread, found from the first call
that could still be open (a running maximum of the ends) instead of among every call. It must give
what the plain test over every call gives, in the same order, for calls that nest, that follow each
other, that overlap by a rounding error or that do not nest at all."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import real_trace
from kerneldiff.core.analysis.modules import ModuleCalls, module_calls, module_path, nesting_depth, start_order


def _plain(calls: ModuleCalls, t: float, tid: int) -> np.ndarray:
    """Every call tested: the reference."""
    hit = np.flatnonzero((calls.ts <= t) & (calls.end >= t) & (calls.tid == tid))
    return hit[np.argsort(calls.depth[hit], kind="stable")]


def _calls(spans: list[tuple[int, float, float]]) -> ModuleCalls:
    tid = np.array([s[0] for s in spans], np.int64)
    ts = np.array([s[1] for s in spans])
    dur = np.array([s[2] for s in spans])
    order = start_order(ts, dur)
    ts, end, tid = ts[order], ts[order] + dur[order], tid[order]
    n = len(ts)
    return ModuleCalls(["M"], np.zeros(n, np.int32), np.arange(n), ts, end, tid, nesting_depth(ts, end, tid))


_span = st.tuples(st.integers(0, 2), st.integers(0, 60).map(float), st.integers(0, 40).map(float))


@settings(max_examples=300, deadline=None)
@given(st.lists(_span, min_size=1, max_size=40), st.lists(st.integers(-2, 105), min_size=1, max_size=10),
       st.floats(0, 0.02))
def test_containing_is_the_plain_test(spans, times, nudge):
    calls = _calls(spans)
    for t in times:
        for q in (t, t + nudge, t - nudge):   # at starts and ends, and a rounding error either side
            for th in (0, 1, 2, 7):
                assert calls.containing(float(q), th).tolist() == _plain(calls, float(q), th).tolist()


def test_module_paths_of_a_real_trace_are_the_plain_test():
    from kerneldiff.core.session import Session

    s = Session([str(real_trace("h100_llama_eager_sdpa.json.gz"))], use_cache=False)
    s.load(0)
    m = s.models[0]
    calls = module_calls(m)
    assert len(calls) > 100
    k = m.kernels
    rows = np.flatnonzero(k.launch >= 0)[::37]
    assert len(rows) > 200
    for row in rows.tolist():
        li = int(k.launch[row])
        t, tid = float(m.launches.ts[li]), int(m.launches.tid[li])
        want = [calls.label(i) for i in _plain(calls, t, tid).tolist()]
        assert module_path(m, row, calls) == want
    assert any(module_path(m, row, calls) for row in rows.tolist())   # paths were found, not only []
