"""The loader's vectorised readings give exactly what the per-pass (per-row) code they replace gave:
each pass's distinct kernel names (phases from similar passes), the layer spans of every pass."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.core.analysis.passes import _pass_names
from kerneldiff.core.ingest.build import canonical
from kerneldiff.core.model import KERNEL_COLUMNS, Table

from conftest import real_trace


def _names_one_pass_at_a_time(model) -> list[np.ndarray]:
    k = model.kernels
    rows = np.flatnonzero(k.step >= 0)
    order = rows[np.argsort(k.step[rows], kind="stable")]
    cuts = np.searchsorted(k.step[order], np.arange(len(model.steps) + 1))
    return [np.unique(k.name[order[cuts[s]:cuts[s + 1]]]) for s in range(len(model.steps))]


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    # the callers hash each array's bytes: dtype and contents must match, not only the values
    return len(a) == len(b) and all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 6), st.integers(-1, 40)), max_size=300), st.integers(1, 8))
def test_pass_names_equal_one_unique_per_pass(rows, n_steps):
    """Steps -1 (outside passes) and names -1 (no name) included; passes without kernels give empty sets."""
    step = np.array([min(s, n_steps - 1) for s, _ in rows], np.int32)
    name = np.array([n for _, n in rows], np.int32)
    model = SimpleNamespace(kernels=SimpleNamespace(step=step, name=name), steps=[None] * n_steps)
    assert _same(_pass_names(model), _names_one_pass_at_a_time(model))


def test_pass_names_on_real_traces():
    from kerneldiff.core.ingest.loader import load

    for name in ("h100_llama_compiled", "mi300x_vllm_gptoss_decode", "b200_vllm_eager"):
        model = load(real_trace(f"{name}.json.gz"))
        assert _same(_pass_names(model), _names_one_pass_at_a_time(model))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 4)), min_size=2, max_size=60))
def test_canonical_equals_taking_its_order(rows):
    """A table already in canonical order is returned as it is; any other is reordered: either way
    the rows are those of taking the order (ties in ts broken by duration, ids, name)."""
    n = len(rows)
    cols = {name: np.full(n, default, dtype) for name, dtype, default in KERNEL_COLUMNS}
    cols["ts"] = np.array([r[0] for r in rows], float)
    cols["dur"] = np.array([r[1] for r in rows], float)
    cols["name"] = np.array([r[2] for r in rows], np.int32)
    out = canonical(Table(KERNEL_COLUMNS, cols))
    again = canonical(out)
    assert again is out     # in order: nothing copied
    ts, dur = out.columns["ts"], out.columns["dur"]
    assert bool(np.all(ts[1:] >= ts[:-1]))
    same_ts = ts[1:] == ts[:-1]
    assert bool(np.all(dur[1:][same_ts] <= dur[:-1][same_ts]))   # longer first at equal starts
    assert sorted(zip(ts.tolist(), dur.tolist(), out.columns["name"].tolist())) == sorted(
        (float(a), float(b), c) for a, b, c in rows)
