"""The timeline's gap scan in C (core/analysis/_gapscan.c) against the numpy scan it replaces
(timeline.py `_Scan._scan_numpy`, the reference and the fallback where no compiler is at hand):
the same figures, window for window, on random activities and on every real trace."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kerneldiff.core.analysis import timeline as tlmod
from kerneldiff.core.model import (ANNOTATION_COLUMNS, CPU_OP_COLUMNS, KERNEL_COLUMNS, KIND_MEMCPY,
                                   LAUNCH_COLUMNS, PYTHON_COLUMNS, Step, Table, TraceModel)
from kerneldiff.core.strings import StringTable

_gapscan = pytest.importorskip("kerneldiff.core.analysis._gapscan")

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "traces"
RECORDED = ROOT / "tests" / "data" / "recorded"

KERNEL_NAMES = ["k", "Memcpy DtoH (Device -> Pageable)", "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoD",
                "Memset (Device)"]
CALL_NAMES = ["cudaLaunchKernel", "cudaGraphLaunch", "cudaStreamSynchronize", "cudaMemcpy", "cudaMemcpyAsync",
              "hipExtModuleLaunchKernel", "cudaEventRecord"]
NAMES = KERNEL_NAMES + CALL_NAMES
BASE_US = 1.6e12   # a real trace's clock: µs since some epoch
FAR = (5 << 57) // 40   # ns between clusters of activities


@st.composite
def activities(draw, far: bool = False):
    """A model of n activities whose times collide often: equal starts, overlaps, zero and negative
    durations, several devices and streams, launch calls shared, missing or synchronising, D2H
    copies, passes and layers. `far`: clusters of activities years apart, so that the numpy scan
    splits its windows into chunks (the shifted times would overflow int64)."""
    n = draw(st.integers(1, 60))
    ints = lambda lo, hi, k=n: np.array(draw(st.lists(st.integers(lo, hi), min_size=k, max_size=k)), np.int64)
    # times on a grid, so that starts, ends and calls meet at the same ns often (ties, a call that
    # begins the very ns the GPU goes idle, a copy that ends with the running maximum)
    unit = draw(st.sampled_from([1, 100, 1_000]))
    reach = draw(st.sampled_from([0, 4, 40, 500]))
    ts_ns = ints(0, reach) * unit
    cluster = np.zeros(n, np.int64)
    if far:
        cluster = np.sort(ints(0, 40))
        ts_ns = ts_ns + cluster * FAR   # up to 40 clusters over 5 * 2**57 ns (23 years)
    if draw(st.booleans()):
        ts_ns = np.sort(ts_ns)                      # kernel rows usually come in time order
    dur_ns = ints(-1, 12) * unit
    n_calls = draw(st.integers(1, 8))
    call_name = ints(len(KERNEL_NAMES), len(NAMES) - 1, n_calls)
    call_ts = ints(-5, reach + 10, n_calls) * unit
    call_dur = ints(-1, 12, n_calls) * unit
    if far:
        call_ts = call_ts + np.sort(ints(0, 40, n_calls)) * FAR
    launch = ints(-1, n_calls - 1)
    name = ints(0, len(KERNEL_NAMES) - 1)
    kind = np.where(name == 0, 0, np.where(name == 4, 2, KIND_MEMCPY))
    step = ints(-1, 3)
    if draw(st.booleans()):
        step = np.sort(step)
    layer = np.where(step >= 0, ints(-1, 2), -1)
    kernels = Table(KERNEL_COLUMNS, {
        "ts": BASE_US + ts_ns / 1000, "dur": dur_ns / 1000, "name": name, "kind": kind,
        "stream": ints(0, 3) * 7, "device": ints(0, 1), "corr": np.arange(n), "launch": launch,
        "step": step, "layer": layer, "phase": np.where(step >= 0, 1 + step % 2, 0)})
    launches = Table(LAUNCH_COLUMNS, {"ts": BASE_US + call_ts / 1000, "dur": call_dur / 1000, "name": call_name,
                                      "corr": np.arange(n_calls)})
    steps = [Step(i, f"s{i}", ("prefill", "decode")[i % 2], 0.0, 0.0, "inferred") for i in range(4)]
    model = TraceModel(path="random", info=None, strings=StringTable(NAMES), kernels=kernels,
                       cpu_ops=Table(CPU_OP_COLUMNS), launches=launches, python=Table(PYTHON_COLUMNS),
                       annotations=Table(ANNOTATION_COLUMNS), categories=[], rules=[], steps=steps)
    return model, cluster, draw(st.sampled_from([0.0, 0.1, 1.0, tlmod.LAUNCH_TOLERANCE_US]))


def _both(sc: tlmod._Scan, rows, key, classify: bool, streams: bool):
    c = sc._scan_c(rows, key, classify, streams)
    ref = sc._scan_numpy(rows, key, classify, streams)
    assert sorted(c) == sorted(ref)
    for name in ref:
        assert c[name].tolist() == ref[name].tolist(), name
    return c


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(activities(), st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_scan_c_is_the_numpy_scan(drawn, seed, classify, streams):
    model, _, tolerance_us = drawn
    sc = tlmod._Scan(model, tolerance_us)
    k = model.kernels
    rng = np.random.default_rng(seed)
    n = len(k)
    for rows in (sc.order, sc.order[rng.random(n) < 0.6]):   # all rows, a subset (in time order)
        step, layer = k.step[rows].astype(np.int64), k.layer[rows].astype(np.int64)
        for key in (np.zeros(len(rows), np.int64), step, (step + 1) * 4 + layer + 1,
                    rng.integers(-3, 4, len(rows)),                  # unsorted keys: sorted by the scan
                    sc.stream_id[rows] * 5 + step):
            _both(sc, rows, key, classify, streams)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(activities(far=True), st.booleans())
def test_scan_c_is_the_numpy_scan_in_chunks(drawn, classify):
    """Windows years apart: the numpy scan works them in chunks, the C scan needs none."""
    model, cluster, tolerance_us = drawn
    sc = tlmod._Scan(model, tolerance_us)
    rows = sc.order
    # a window within a cluster (each window's own sums stay far below 2**53 ns, where numpy's float
    # bincounts are exact)
    for key in (cluster[rows], cluster[rows] * 8 + model.kernels.step[rows] + 1):
        _both(sc, rows, key, classify, True)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(activities())
def test_queued_gaps_c_is_numpy(drawn):
    model, _, tolerance_us = drawn
    sc = tlmod._Scan(model, tolerance_us)
    fast = tlmod._queued_gaps(sc)
    sc.use_c = False
    assert fast.tolist() == tlmod._queued_gaps(sc).tolist()


@contextmanager
def numpy_scan():
    was = tlmod._Scan.use_c
    tlmod._Scan.use_c = False
    try:
        yield
    finally:
        tlmod._Scan.use_c = was


def _timelines(model: TraceModel, tolerance_us: float) -> list:
    """Every Timeline a comparison or report asks of a model (memo bypassed)."""
    return [tlmod._timeline(model, phase, tolerance_us, keep_cut)
            for phase in ("all", "prefill", "decode") for keep_cut in (True, False)]


def _assert_same_timelines(model: TraceModel, tolerance_us: float = tlmod.LAUNCH_TOLERANCE_US) -> None:
    fast = _timelines(model, tolerance_us)
    with numpy_scan():
        ref = _timelines(model, tolerance_us)
    assert fast == ref
    assert [t.to_dict() for t in fast] == [t.to_dict() for t in ref]


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(activities())
def test_timeline_c_is_the_numpy_timeline(drawn):
    model, _, tolerance_us = drawn
    _assert_same_timelines(model, tolerance_us)


def _real() -> list:
    paths = sorted(SHARED.rglob("*.json.gz")) if SHARED.is_dir() else []
    return [pytest.param(p, id=p.name) for p in paths + sorted(RECORDED.glob("*.json.gz"))]


@pytest.mark.slow
@pytest.mark.parametrize("path", _real())
def test_real_traces_same_timeline(path):
    from kerneldiff.core.orchestration import load

    model = load(path, use_cache=False)
    assert len(model.kernels)
    _assert_same_timelines(model)


def test_bad_input_is_an_error_not_a_crash():
    s = np.arange(4, dtype=np.int64)
    z = np.zeros(0, np.int64)
    args = (s, s + 1, np.zeros(4, np.int64), np.full(4, -1, np.int64), z, z, np.zeros(4, bool), z, z, 0, 1)
    out = np.frombuffer(_gapscan.scan(np.array([0, 3]), np.zeros(2, np.int64), *args, True, True), np.int64)
    assert out.reshape(len(tlmod._SCAN_FIELDS), -1)[:, 0].tolist() == [0, 0, 2, 4, 2, 0, 0, 2, 1, 2, 2]
    with pytest.raises(IndexError):
        _gapscan.scan(np.array([0, 4]), np.zeros(2, np.int64), *args, True, True)
    with pytest.raises(IndexError):   # a launch row past the launch table
        _gapscan.scan(np.array([0, 3]), np.zeros(2, np.int64), s, s + 1, np.zeros(4, np.int64),
                      np.full(4, 2, np.int64), z, z, np.zeros(4, bool), z, z, 0, 1, True, True)
    with pytest.raises(IndexError):   # a stream past the count of streams
        _gapscan.scan(np.array([0, 3]), np.zeros(2, np.int64), s, s + 1, np.full(4, 1, np.int64), *args[3:],
                      True, True)
    with pytest.raises(ValueError):   # int32 where int64 is read
        _gapscan.scan(np.array([0, 3], np.int32), np.zeros(2, np.int64), *args, True, True)
    with pytest.raises(ValueError):   # fewer keys than rows
        _gapscan.scan(np.array([0, 3]), np.zeros(1, np.int64), *args, True, True)
    assert _gapscan.scan(np.array([3, 0]), np.array([1, 0]), *args, True, True) is None   # keys descending
    gaps = np.full(4, -1, np.int32)
    with pytest.raises(IndexError):
        _gapscan.queued_gaps(np.array([0, 5]), np.zeros(4, np.int8), np.zeros(4, np.int64), np.zeros(4, np.int64),
                             s, s + 1, z, np.zeros(0, bool), gaps, 1, 0)
    with pytest.raises(IndexError):   # a launch row past the launch table
        _gapscan.launch_firsts(np.array([0, 1]), np.zeros(4, np.int8), np.full(4, 1, np.int64), s, s + 1,
                               np.ones(1, bool), np.zeros(1, bool), np.ones(1, np.int64), np.zeros(1, np.int64), 0)
    with pytest.raises(IndexError):   # a stream past the count of streams
        _gapscan.queued_gaps(np.array([0, 1]), np.zeros(4, np.int8), np.full(4, 3, np.int64),
                             np.zeros(4, np.int64), s, s + 1, z, np.zeros(0, bool), gaps, 1, 0)
    with pytest.raises(IndexError):   # a row past the rows, a stream past the count
        _gapscan.stream_overlap(s / 1.0, s / 1.0, np.zeros(4, np.int64), np.array([0, 4]), 1)
    with pytest.raises(IndexError):
        _gapscan.stream_overlap(s / 1.0, s / 1.0, np.full(4, 1, np.int64), None, 1)
    with pytest.raises(ValueError):   # fewer durations than starts
        _gapscan.stream_overlap(s / 1.0, s[:2] / 1.0, np.zeros(4, np.int64), None, 1)


# --- kernel time overlapping on one stream (attribution._stream_overlap) ---------------------------

def _overlap_both(model: TraceModel) -> None:
    from kerneldiff.core.analysis import attribution

    k = model.kernels
    fast, ref = attribution._stream_overlap(k), attribution._stream_overlap_numpy(k)
    assert fast == pytest.approx(ref, rel=1e-12, abs=1e-9)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(activities(), st.integers(0, 2**32 - 1), st.sampled_from([1, 3, 40]))
def test_stream_overlap_c_is_numpy(drawn, seed, spread):
    """Rows in time order or not, ties, zero and negative durations, one stream or many (past the
    table's few, and ids far apart): the C pass reads what the sort by stream reads."""
    model, _, _ = drawn
    k = model.kernels
    rng = np.random.default_rng(seed)
    k.stream = k.stream * spread + (rng.integers(0, 2, len(k)) << 40 if spread == 40 else 0)
    _overlap_both(model)


@pytest.mark.slow
@pytest.mark.parametrize("path", _real())
def test_real_traces_same_stream_overlap(path):
    from kerneldiff.core.orchestration import load

    _overlap_both(load(path, use_cache=False))
