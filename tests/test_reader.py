"""The reader at scale: worker processes give the same model as one process, whatever the JSON
layout; failures fall back to one process; cancellation leaves no processes behind."""

from __future__ import annotations

import json
import multiprocessing as mp
import threading

import numpy as np
import pytest

import core.loader as loader
import core.reader as reader
from conftest import kineto_doc, real_trace, write_trace
from core import LoadCancelled
from core.loader import load

TABLES = ("kernels", "cpu_ops", "launches", "python", "annotations")
NASTY = ["a},{b", '"},{"ph": "X", "cat": "kernel"', "} , {", "x}\n,\n{y", "ünï},{cödé", "[", "]", "\\"]


@pytest.fixture
def small_runs(monkeypatch):
    """Runs of 32 KB decoded in 4 KB slices, so a small file is cut into many of each."""
    monkeypatch.setattr(reader, "SLICE", 4096)
    monkeypatch.setattr(reader, "WINDOW", 512)
    monkeypatch.setattr(loader, "SLOT", 32 * 1024 + 2)


@pytest.fixture
def sequential_calls(monkeypatch):
    """How often a load read the file in one process (a parallel load must not fall back)."""
    calls = []
    original = loader._read_sequential
    monkeypatch.setattr(loader, "_read_sequential", lambda *a: calls.append(1) or original(*a))
    return calls


def nasty_doc(n=1500):
    ev = []
    for i in range(n):
        name = NASTY[i % len(NASTY)] + str(i % 5) if i % 3 == 0 else f"kernel_{i % 11}"
        corr = str(i) if i % 2 else i
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": "1",
                   "ts": i * 3.0, "dur": 1, "args": {"correlation": corr, "External id": i}})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": i * 3.0 + 1,
                   "dur": 2.5, "args": {"correlation": corr, "stream": 7, "device": 0, "grid": [1, 1, 1],
                                        "note": "},{" * 3}})
        ev.append({"ph": "f", "id": i, "pid": 0, "tid": 7, "ts": i * 3.0 + 1, "cat": "ac2g", "name": "ac2g"})
        ev.append({"ph": "X", "cat": "python_function", "name": f"f.py({i % 7}): g", "pid": 1, "tid": 1,
                   "ts": i * 3.0, "dur": 2, "args": {"Python id": i, "Python parent id": None if i % 50 == 0 else i - 1}})
    return kineto_doc(ev)


def assert_same(a, b):
    for t in TABLES:
        ca, cb = getattr(a, t).columns, getattr(b, t).columns
        for c in ca:
            assert np.array_equal(ca[c], cb[c]), (t, c)
    assert a.strings.strings == b.strings.strings
    assert (a.steps, a.layers, a.warnings, a.dropped_events) == (b.steps, b.layers, b.warnings, b.dropped_events)


@pytest.mark.parametrize("indent,gz", [(None, False), (2, False), (None, True)])
def test_workers_give_the_same_model(tmp_path, classifier, small_runs, sequential_calls, indent, gz):
    doc = nasty_doc()
    p = write_trace(tmp_path / ("t.json.gz" if gz else "t.json"), json.dumps(doc, indent=indent).encode(), gz=gz)
    one = load(p, classifier=classifier, workers=1)
    two = load(p, classifier=classifier, workers=2)
    assert sequential_calls == [1]
    assert len(one.kernels) == 1500 and len(one.python) == 1500
    assert_same(one, two)
    names = {one.strings[int(i)] for i in one.kernels.name}
    assert "a},{b0" in names and '"},{"ph": "X", "cat": "kernel"3' in names


def test_workers_on_a_real_trace(classifier, small_runs, sequential_calls, monkeypatch):
    p = real_trace("b200_vllm_eager.json.gz")
    monkeypatch.setattr(reader, "SLICE", 256 * 1024)
    monkeypatch.setattr(loader, "SLOT", 256 * 1024 + 2)
    assert_same(load(p, classifier=classifier, workers=1), load(p, classifier=classifier, workers=2))
    assert sequential_calls == [1]


def test_truncated_file_same_with_workers(tmp_path, classifier, small_runs, sequential_calls):
    full = json.dumps(nasty_doc()).encode()
    p = tmp_path / "cut.json"
    p.write_bytes(full[: int(len(full) * 0.8)])
    one = load(p, classifier=classifier, workers=1)
    assert any("truncated" in w for w in one.warnings)
    assert_same(one, load(p, classifier=classifier, workers=2))
    assert sequential_calls == [1]


def test_a_run_that_does_not_decode_falls_back_to_one_process(tmp_path, classifier, small_runs, monkeypatch):
    p = write_trace(tmp_path / "t.json", nasty_doc(300))
    expected = load(p, classifier=classifier, workers=1)
    calls = []
    original = loader._read_sequential
    monkeypatch.setattr(loader, "_read_sequential", lambda *a: calls.append(1) or original(*a))
    def bad_run(buf, start, end):
        raise ValueError("run of events does not decode")

    monkeypatch.setattr(loader, "decode_run", bad_run)   # inherited by the forked workers
    got = load(p, classifier=classifier, workers=2)
    assert calls == [1]                        # the parallel read gave up, one process finished
    assert_same(expected, got)


def test_cancel_stops_the_workers(tmp_path, classifier, small_runs):
    p = write_trace(tmp_path / "t.json", nasty_doc())
    cancel = threading.Event()

    def progress(frac, stage, done, total):
        if done > total // 4:
            cancel.set()

    with pytest.raises(LoadCancelled):
        load(p, classifier=classifier, workers=2, cancel=cancel, progress=progress)
    assert mp.active_children() == []


def test_workers_from_a_thread_use_a_fork_server(tmp_path, classifier, small_runs, sequential_calls):
    """An app loads in threads: fork is not safe then, the fork server is used instead."""
    p = write_trace(tmp_path / "t.json", nasty_doc(300))
    expected = load(p, classifier=classifier, workers=1)
    out = {}
    t = threading.Thread(target=lambda: out.update(m=load(p, classifier=classifier, workers=2)))
    t.start()
    t.join()
    assert_same(expected, out["m"])
    assert sequential_calls == [1]


def test_unreadable_items_are_counted_not_fatal(tmp_path, classifier):
    ev = nasty_doc(50)["traceEvents"]
    ev[10:10] = [17, "x", None, {"ph": "X", "cat": "kernel", "name": 5, "ts": 1, "dur": 1},
                 {"ph": "X", "cat": "kernel", "name": "ok", "ts": "12.5", "dur": "1", "pid": 1.5, "tid": "Spans",
                  "args": {"correlation": "9", "stream": [1]}}]
    m = load(write_trace(tmp_path / "t.json", kineto_doc(ev)), classifier=classifier)
    assert m.dropped_events == 4
    row = [i for i in range(len(m.kernels)) if m.kernel_name(i) == "ok"][0]
    k = m.kernels
    assert (k.ts[row], k.corr[row], k.stream[row], k.device[row]) == (12.5, 9, -1, 1)


def test_a_false_boundary_inside_a_run_is_survived(monkeypatch):
    """A key ending in '},{' followed by a value starting with ':' looks like an event boundary
    even to the strict pattern; the slice cut there does not decode, and the rest is decoded
    at once."""
    monkeypatch.setattr(reader, "SLICE", 64)
    trick = {"ph": "X", "cat": "kernel", "name": "k0", "ts": 0, "dur": 1,
             "args": {"pad": "x" * 100, "a},{": ":tricky"}}
    evs = [trick] + [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": i, "dur": 1} for i in range(1, 40)]
    body = json.dumps(evs, separators=(",", ":")).encode()
    assert reader._STRONG_BOUNDARY.search(body, 64).start() < body.index(b'"k1"')  # a false match first
    buf = bytearray(body[:-1] + b",")       # '[' + events + room for ']'
    got = [e for batch in reader.decode_run(memoryview(buf), 0, len(buf) - 1) for e in batch]
    assert [e.name for e in got] == [f"k{i}" for i in range(40)]
    with pytest.raises(ValueError):
        list(reader.decode_run(memoryview(bytearray(b'[{"ph":"X","name":"a\\"},{')), 0, 12))
