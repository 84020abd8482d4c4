"""Attribution's joins give what a plain walk gives: a launch's enclosing operator found once per
launch call (a graph launch's kernels share it) and the same-stream overlap sorted by a radix
sort when kernel rows come in time order (the lexsort it replaces otherwise)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.core.analysis import attribution
from kerneldiff.core.model import (ANNOTATION_COLUMNS, CPU_OP_COLUMNS, KERNEL_COLUMNS, LAUNCH_COLUMNS,
                                   PYTHON_COLUMNS, Table, TraceModel)
from kerneldiff.core.strings import StringTable


def _model(rng, n_kernels: int, n_launches: int, n_ops: int, sorted_ts: bool) -> TraceModel:
    ts = rng.integers(0, 5_000, n_kernels).astype(float)
    if sorted_ts:
        ts.sort()
    l_ts = np.sort(rng.integers(0, 5_000, n_launches)).astype(float)
    kernels = Table(KERNEL_COLUMNS, {"ts": ts, "dur": rng.integers(0, 300, n_kernels).astype(float),
                                     "name": np.zeros(n_kernels), "stream": rng.integers(0, 4, n_kernels),
                                     "device": rng.integers(0, 2, n_kernels),
                                     "corr": rng.integers(0, n_launches + 2, n_kernels), "ext": np.full(n_kernels, -1)})
    launches = Table(LAUNCH_COLUMNS, {"ts": l_ts, "dur": np.ones(n_launches), "name": np.zeros(n_launches),
                                      "corr": np.arange(n_launches), "tid": rng.integers(0, 2, n_launches),
                                      "ext": np.full(n_launches, -1)})
    cpu_ops = Table(CPU_OP_COLUMNS, {"ts": rng.integers(0, 5_000, n_ops).astype(float),
                                     "dur": rng.integers(0, 800, n_ops).astype(float), "name": np.zeros(n_ops),
                                     "tid": rng.integers(0, 2, n_ops), "ext": rng.integers(1_000, 2_000, n_ops)})
    return TraceModel(path="random", info=None, strings=StringTable(["k"]), kernels=kernels, cpu_ops=cpu_ops,
                      launches=launches, python=Table(PYTHON_COLUMNS), annotations=Table(ANNOTATION_COLUMNS),
                      categories=[], rules=[], steps=[])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.integers(1, 30), st.integers(0, 60), st.booleans())
def test_link_and_overlap_match_a_plain_walk(seed, n_kernels, n_launches, n_ops, sorted_ts):
    rng = np.random.default_rng(seed)
    m = _model(rng, n_kernels, n_launches, n_ops, sorted_ts)
    attribution.link(m)
    k = m.kernels
    has = k.launch >= 0
    want = np.full(len(k), -1, np.int64)
    if n_ops:
        want[has] = attribution._enclosing_ops(m, k.launch[has])     # every kernel on its own
    assert np.array_equal(k.cpu_op, want)
    # overlap on one (device, stream): each kernel against every earlier one of its stream
    over = 0.0
    key = k.device.astype(np.int64) * (1 << 32) + k.stream
    order = np.lexsort((k.ts, key))
    for s in np.unique(key).tolist():
        rows = order[key[order] == s]
        if len(rows) > 1:
            reach = np.maximum.accumulate((k.ts + k.dur)[rows][:-1])
            over += float(np.clip(reach - k.ts[rows][1:], 0.0, k.dur[rows][1:]).sum())
    assert attribution._stream_overlap(k) == over


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-3, 40), max_size=30), st.lists(st.integers(-3, 45), max_size=60),
       st.sampled_from([0, 1, 10**6, 2**62]))
def test_lookup_finds_each_wanted_ids_first_row(keys, wanted, shift):
    """Ids spanning little (a table) or far apart (a search), repeated, negative, absent: the first
    row holding each wanted id, -1 for a negative or absent one."""
    k = np.array(keys, np.int64) * (shift or 1)
    w = np.array(wanted, np.int64) * (shift or 1)
    first: dict[int, int] = {}
    for i, x in enumerate(k.tolist()):
        first.setdefault(x, i)
    assert attribution._lookup(k, w).tolist() == [first.get(x, -1) if x >= 0 else -1 for x in w.tolist()]
