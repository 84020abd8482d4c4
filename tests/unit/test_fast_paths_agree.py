"""Faster group-bys against plain Python recomputations: the few-ids path of the top-names sum
(a few kernels among 120,000 names) and each pass's first start / last end taken by sorting."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.core.analysis.timeline import _passes_overlap
from kerneldiff.core.compare.engine import _top_ids


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2_000_000), st.integers(0, 5)), min_size=1, max_size=60),
       st.integers(1, 6))
def test_top_ids_of_a_few_ids_among_many(pairs, n):
    ids = np.array([i for i, _ in pairs], dtype=np.int64)   # ids far apart: the sorting path
    w = np.array([x for _, x in pairs], dtype=float)
    total: dict[int, float] = {}
    for i, x in pairs:
        total[i] = total.get(i, 0.0) + x
    got = _top_ids(ids, w, n)
    # the largest totals (ties in numpy's argsort order over the sorted ids, as the dense path has them)
    assert sorted(total[i] for i in got) == sorted(total.values(), reverse=True)[:n][::-1]
    uniq = sorted(total)
    expected = [uniq[i] for i in np.argsort(-np.array([total[i] for i in uniq]))[:n]]
    assert got == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 3_000), st.integers(0, 6)), max_size=80))
def test_passes_overlap_is_the_spans_summed_less_their_union(acts):
    start = np.array([s for s, _, _ in acts], dtype=np.int64)
    end = start + np.array([d for _, d, _ in acts], dtype=np.int64)
    step = np.array([p for _, _, p in acts], dtype=np.int32)
    spans: dict[int, list[int]] = {}
    for s, e, p in zip(start.tolist(), end.tolist(), step.tolist()):
        lo, hi = spans.get(p, [s, e])
        spans[p] = [min(lo, s), max(hi, e)]
    union, reach = 0, None
    for lo, hi in sorted(spans.values()):
        if reach is None or lo >= reach:
            union += hi - lo
            reach = hi
        elif hi > reach:
            union += hi - reach
            reach = hi
    expected = (sum(hi - lo for lo, hi in spans.values()) - union) / 1000.0
    assert _passes_overlap(start, end, step) == expected


def _same_whole(model) -> None:
    from dataclasses import asdict

    from kerneldiff.core.analysis.timeline import timeline, whole_window
    from kerneldiff.core.model import TraceModel

    fresh = TraceModel.__new__(TraceModel)           # the same columns, no memo: each path computes anew
    fresh.__dict__.update({k: v for k, v in model.__dict__.items() if k != "_memo"})
    alone = whole_window(fresh)
    full = timeline(fresh, "all", keep_cut=False).whole
    assert asdict(alone) == asdict(full)
    assert whole_window(fresh) is full                 # once the full timeline exists, its window


def test_info_wall_window_is_the_timelines_on_the_demo_pair(demo_models):
    for m in demo_models.values():
        _same_whole(m)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz",
                                  "mi300x_vllm_gptoss_decode.json.gz", "a100_control.json.gz"])
def test_info_wall_window_is_the_timelines_on_real_traces(name):
    from conftest import real_trace
    from kerneldiff.core.orchestration import load

    _same_whole(load(real_trace(name), use_cache=False))
