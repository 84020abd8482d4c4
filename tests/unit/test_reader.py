"""The reader at scale: worker processes give the same model as one process, whatever the JSON
layout; failures fall back to one process; cancellation leaves no processes behind."""

from __future__ import annotations

import json
import os
import multiprocessing as mp
import threading

import numpy as np
import pytest

import kerneldiff.core.ingest.loader as loader
import kerneldiff.core.ingest.workers as workers
import kerneldiff.core.ingest.slices as slices
from conftest import kineto_doc, real_trace, write_trace
from kerneldiff.core import LoadCancelled
from kerneldiff.core.orchestration import load

TABLES = ("kernels", "cpu_ops", "launches", "python", "annotations")
NASTY = ["a},{b", '"},{"ph": "X", "cat": "kernel"', "} , {", "x}\n,\n{y", "ünï},{cödé", "[", "]", "\\"]


@pytest.fixture
def small_runs(monkeypatch):
    """Runs of 32 KB decoded in 4 KB slices, so a small file is cut into many of each."""
    monkeypatch.setattr(slices, "SLICE", 4096)
    monkeypatch.setattr(slices, "WINDOW", 512)
    monkeypatch.setattr(workers, "SLOT", 32 * 1024 + 2)


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


@pytest.mark.slow
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
    monkeypatch.setattr(slices, "SLICE", 256 * 1024)
    monkeypatch.setattr(workers, "SLOT", 256 * 1024 + 2)
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

    monkeypatch.setattr(workers, "decode_run", bad_run)   # inherited by the forked workers
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
    # pid 1.5 is no id (the README: unknown, never rounded), so the device it stands for is unknown
    assert (k.ts[row], k.corr[row], k.stream[row], k.device[row]) == (12.5, 9, -1, -1)
    assert any("1 events had a non-integer id" in w for w in m.warnings)


def test_a_false_boundary_inside_a_run_is_survived(monkeypatch):
    """A key ending in '},{' followed by a value starting with ':' looks like an event boundary
    even to the strict pattern; the slice cut there does not decode, and the rest is decoded
    at once."""
    monkeypatch.setattr(slices, "SLICE", 64)
    trick = {"ph": "X", "cat": "kernel", "name": "k0", "ts": 0, "dur": 1,
             "args": {"pad": "x" * 100, "a},{": ":tricky"}}
    evs = [trick] + [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": i, "dur": 1} for i in range(1, 40)]
    body = json.dumps(evs, separators=(",", ":")).encode()
    assert slices._STRONG_BOUNDARY.search(body, 64).start() < body.index(b'"k1"')  # a false match first
    buf = bytearray(body[:-1] + b"..")       # '[' + events + two bytes of room
    got = [e for batch in slices.decode_run(memoryview(buf), 0, len(buf) - 2, fast=False) for e in batch]
    assert [e.name for e in got] == [f"k{i}" for i in range(40)]
    cut_in_a_string = bytearray(b'[{"ph":"X","name":"a}..')   # the run "ends" inside a string
    with pytest.raises(ValueError):
        list(slices.decode_run(memoryview(cut_in_a_string), 0, len(cut_in_a_string) - 2))


def test_workers_of_a_killed_load_exit(tmp_path):
    """A UI killed mid-load must not leave decoding processes (or shared memory) behind."""
    import os
    import signal
    import subprocess
    import sys
    import time

    code = ("import kerneldiff.core.ingest.workers as l, sys; p = l._Pool(2); "
            "print(*[q.pid for q in p.procs], *[s.name for s in p.shms], flush=True); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL,
                            cwd=loader.__file__.rsplit("/core/", 1)[0], text=True)
    *pids, shm_a, shm_b = proc.stdout.readline().split()
    proc.send_signal(signal.SIGKILL)
    proc.wait()

    def alive(pid):
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        with open(f"/proc/{pid}/stat") as f:    # a zombie waiting for init to reap it is gone
            return f.read().split(") ")[1][0] != "Z"

    deadline = time.time() + 10
    while any(alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in pids)
    workers._sweep_stale_segments()             # what the next load does first
    assert not os.path.exists(f"/dev/shm/{shm_a}") and not os.path.exists(f"/dev/shm/{shm_b}")


def test_invalid_events_are_skipped_and_counted_in_every_path(tmp_path, classifier, small_runs,
                                                              sequential_calls):
    """NaN, a raw control byte, invalid UTF-8 and a number beyond float range mid-file: those
    events are dropped and counted, the others kept — by one process and by the workers."""
    good = [json.dumps(e).encode() for e in nasty_doc(400)["traceEvents"]]
    bad = [b'{"ph": "X", "cat": "kernel", "name": "nan", "ts": NaN, "dur": 1}',
           b'{"ph": "X", "cat": "kernel", "name": "ctl\x1b[2J", "ts": 1, "dur": 1}',
           b'{"ph": "X", "cat": "kernel", "name": "bad\xff\xfe", "ts": 2, "dur": 1}',
           b'{"ph": "X", "cat": "kernel", "name": "big", "ts": 1e999, "dur": 1}']
    events = good[:300] + bad[:2] + good[300:900] + bad[2:] + good[900:]
    body = b'{"traceEvents": [' + b",\n".join(events) + b"]}"
    for gz in (False, True):
        p = write_trace(tmp_path / ("t.json.gz" if gz else "t.json"), body, gz=gz)
        sequential_calls.clear()
        one = load(p, classifier=classifier, workers=1)
        two = load(p, classifier=classifier, workers=2)
        assert sequential_calls == [1]             # the workers skipped the bad events themselves
        assert one.dropped_events == 4 and any("4 malformed" in w for w in one.warnings)
        assert len(one.kernels) == 400
        assert_same(one, two)


def test_truncated_gzip_keeps_the_complete_events(tmp_path, classifier):
    import gzip as gzip_module

    data = gzip_module.compress(json.dumps(nasty_doc(400)).encode())
    p = tmp_path / "cut.json.gz"
    p.write_bytes(data[: len(data) * 2 // 3])
    m = load(p, classifier=classifier)
    assert 0 < len(m.kernels) < 400
    assert any("truncated" in w and "complete events" in w for w in m.warnings)


def test_byte_order_mark_and_blank_stretches_are_fine(tmp_path, classifier):
    ev = nasty_doc(50)["traceEvents"]
    # 2.5 MB of blanks between two events: more than a slice, with no boundary in sight
    body = json.dumps(kineto_doc(ev)).encode().replace(b"}, {", b"}, " + b" " * 2_500_000 + b"{", 1)
    p = tmp_path / "t.json"
    p.write_bytes(b"\xef\xbb\xbf" + body)
    m = load(p, classifier=classifier)
    assert len(m.kernels) == 50 and m.dropped_events == 0


def test_plain_runs_are_read_by_the_workers_themselves(tmp_path, classifier, small_runs, sequential_calls, monkeypatch):
    """A plain file is not copied run by run into shared memory: each worker maps the file and
    decodes its runs where they lie (the copy path is disabled here), and the model is the same."""
    from kerneldiff.core.ingest.source import EventReader

    p = write_trace(tmp_path / "t.json", json.dumps(nasty_doc(), indent=1).encode())
    expected = load(p, classifier=classifier, workers=1)

    def no_copy(self, dst):
        raise AssertionError("a plain file's run was copied by the parent")

    monkeypatch.setattr(EventReader, "fill_run", no_copy)
    assert_same(expected, load(p, classifier=classifier, workers=2))
    assert sequential_calls == [1]


def test_a_byte_order_mark_keeps_runs_in_shared_memory(tmp_path, classifier, small_runs, sequential_calls):
    """Offsets after a BOM are not the file's: such a file is copied run by run, same model."""
    body = json.dumps(nasty_doc()).encode()
    p = write_trace(tmp_path / "bom.json", b"\xef\xbb\xbf" + body)
    plain = write_trace(tmp_path / "plain.json", body)
    assert_same(load(plain, classifier=classifier, workers=1), load(p, classifier=classifier, workers=2))
    assert sequential_calls == [1]


def test_a_file_replaced_during_the_load_is_not_mixed_in(tmp_path, classifier, small_runs, monkeypatch):
    """The workers open the file by name: one that is no longer the file the load opened (same
    path, other inode) is refused and the load is done again in one process: the model is the
    whole of one file, never runs of two."""
    from kerneldiff.core.ingest.source import EventReader

    p = write_trace(tmp_path / "t.json", json.dumps(nasty_doc()).encode())
    other = write_trace(tmp_path / "other.json", json.dumps(nasty_doc(900)).encode())
    expected = load(p, classifier=classifier, workers=1)
    original = EventReader.mappable

    def swap_after_open(self):
        found = original(self)
        os.replace(other, p)   # the reader keeps its descriptor; the name now points elsewhere
        return found

    monkeypatch.setattr(EventReader, "mappable", swap_after_open)
    calls = []
    seq = loader._read_sequential
    monkeypatch.setattr(loader, "_read_sequential", lambda *a: calls.append(1) or seq(*a))
    got = load(p, classifier=classifier, workers=2)
    assert calls == [1]
    assert len(expected.kernels) == 1500
    assert_same(load(p, classifier=classifier, workers=1), got)   # the file now at that path, whole
