"""Issue 26: the order of the events in the file changes nothing kerneldiff says — ties included
(activities that start in the same µs, as in integer-µs traces): `info` and `compare` of the
reversed and shuffled file equal those of the original."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import invariants as inv
from conftest import real_trace
from kerneldiff.core.analysis.timeline import timeline
from kerneldiff.core.orchestration import load

STYLES = ["hf-generate", "vllm", "sglang", "hf", "sglang-double"]


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), style=st.sampled_from(STYLES), vendor=st.sampled_from(["nvidia", "amd"]),
       order=st.integers(0, 2**32 - 1))
def test_event_order_changes_nothing_on_generated_traces(tmp_path_factory, seed, style, vendor, order):
    root = tmp_path_factory.mktemp("order")
    doc = inv.synth_doc(root / "src", seed, style, vendor)
    ref = inv.Reference(root, doc)
    for other in (inv.reversed_events(doc), inv.shuffled(doc, order)):
        assert inv.diff(ref.answer, ref.of(other)) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", inv.real_params())
def test_event_order_changes_nothing_on_real_traces(tmp_path, name):
    doc = inv.read_doc(real_trace(name))
    ref = inv.Reference(tmp_path, doc)
    for other in (inv.reversed_events(doc), inv.shuffled(doc, 26)):
        assert inv.diff(ref.answer, ref.of(other)) == []


def _idle_split(path) -> tuple[float, float, float]:
    w = timeline(load(path, use_cache=False, workers=0)).whole
    return w.launch_bound_us, w.sync_us, w.other_us


@pytest.mark.slow
def test_v100_idle_split_is_the_same_in_every_order(tmp_path):
    """The trace that showed it: integer-µs timestamps, 11 pairs of activities starting in the same
    µs; launch-bound idle read 487, 488, 489 or 490 µs by file order."""
    doc = inv.read_doc(real_trace("v100_test.json.gz"))
    seen = set()
    for i, other in enumerate([doc, inv.reversed_events(doc), inv.shuffled(doc, 1), inv.shuffled(doc, 2)]):
        seen.add(_idle_split(inv.write_doc(tmp_path / f"{i}.json", other)))
    assert len(seen) == 1, seen


def _tied_doc(launch_first: bool) -> dict:
    """Two kernels on two streams that start in the same µs after a 100 µs gap: one whose launch
    call began after the GPU went idle (launch-bound), one launched long before (queued)."""
    def kernel(name, ts, dur, stream, corr):
        return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
                "args": {"stream": stream, "correlation": corr, "device": 0}}

    def launch(ts, corr):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts,
                "dur": 5, "args": {"correlation": corr}}

    evs = [kernel("k0", 1000, 10, 7, 1), launch(990, 1), launch(995, 2), launch(1050, 3),
           kernel("a_queued", 1110, 10, 7, 2), kernel("z_late", 1110, 10, 8, 3)]
    if not launch_first:
        evs[-1], evs[-2] = evs[-2], evs[-1]
    return {"traceEvents": evs, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}


def test_a_gap_ended_by_tied_activities_is_split_the_same_in_either_order(tmp_path):
    got = []
    for first in (True, False):
        p = tmp_path / f"{first}.json"
        p.write_text(json.dumps(_tied_doc(first)))
        got.append(_idle_split(p))
    assert got[0] == got[1]
    # the gap (1010 -> 1110 µs) is launch-bound: one of the activities that end it waited for its launch
    assert got[0] == (100.0, 0.0, 0.0)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 400))
def test_the_model_order_is_total_and_the_files_order_is_lost(seed, n):
    """build.canonical: by start, the longer first, creation order (External id), name, then every
    other column — one full lexsort's order, and the same whatever order the rows came in (few
    distinct values, so whole rows tie too)."""
    import numpy as np

    from kerneldiff.core.ingest.build import canonical
    from kerneldiff.core.model import CPU_OP_COLUMNS, Table

    rng = np.random.default_rng(seed)
    cols = {"ts": rng.integers(0, 20, n).astype("f8"), "dur": rng.integers(1, 3, n).astype("f8"),
            "name": rng.integers(0, 3, n).astype("i4"), "ext": rng.integers(-1, 3, n), "tid": rng.integers(0, 3, n),
            "pid": rng.integers(0, 2, n), "dims": rng.integers(-1, 2, n).astype("i4"),
            "types": rng.integers(-1, 2, n).astype("i4")}
    got = canonical(Table(CPU_OP_COLUMNS, cols)).columns
    full = np.lexsort((cols["types"], cols["dims"], cols["pid"], cols["tid"], cols["name"], cols["ext"], -cols["dur"],
                       cols["ts"]))
    assert all(np.array_equal(got[k], cols[k][full]) for k in cols)
    p = rng.permutation(n)
    again = canonical(Table(CPU_OP_COLUMNS, {k: v[p] for k, v in cols.items()})).columns
    assert all(np.array_equal(got[k], again[k]) for k in cols)
