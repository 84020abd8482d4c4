"""Side by side loading (kerneldiff.core.processes.fork_child): one trace decoded in a forked child while the
other loads here gives the same models as loading in turn, and a failure on either side is the same TraceError."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest

from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.errors import TraceError
from kerneldiff.core.processes.fork_child import Beside, can_fork
from kerneldiff.core.session import Session


def _models(fork: bool, paths) -> list:
    s = Session([str(p) for p in paths], use_cache=False, fork_pair=fork)
    s.load_all()
    return s


@pytest.mark.parametrize("paths", [(DEMO_A, DEMO_B), (DEMO_B, DEMO_A)], ids=["child-loads-A", "child-loads-B"])
def test_side_by_side_gives_the_models_of_loading_in_turn(paths):
    """The child loads the smaller trace (it also sends its model back): in either order, each
    model lands on its own side."""
    import gzip

    assert can_fork() and len(gzip.decompress(DEMO_A.read_bytes())) < len(gzip.decompress(DEMO_B.read_bytes()))
    turn, side = _models(False, paths), _models(True, paths)
    for m, n in zip(turn.models, side.models):
        assert m.label == n.label and m.steps == n.steps
        assert [m.strings[i] for i in range(len(m.strings))] == [n.strings[i] for i in range(len(n.strings))]
        for table in ("kernels", "cpu_ops", "launches"):
            a, b = getattr(m, table).columns, getattr(n, table).columns
            assert a.keys() == b.keys()
            for k in a:
                np.testing.assert_array_equal(a[k], b[k])
    for i in (0, 1):
        assert replace(turn.infos[i], seconds=0) == replace(side.infos[i], seconds=0)
        assert side.models[i].path == str(paths[i])
    # each side's own readings were computed where it was loaded (one in the child) and came back
    for m in side.models:
        assert {k[0] for k in m.__dict__.get("_memo", {})} >= {"work", "timeline", "module_calls"}
    assert turn.compare().to_dict() == side.compare().to_dict()


@pytest.mark.parametrize("bad_side", [0, 1])
def test_a_bad_side_raises_its_own_error(tmp_path, bad_side):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"schemaVersion": 1, "traceEvents": 5}')   # probes fine, fails to load
    paths = [DEMO_A, DEMO_B]
    paths[bad_side] = bad
    with pytest.raises(TraceError) as sequential:
        _models(False, paths).compare()
    with pytest.raises(TraceError) as forked:
        _models(True, paths).compare()
    assert str(forked.value) == str(sequential.value) and "not a list" in str(forked.value)


def test_child_errors_and_crashes_reach_the_parent():
    def fail():
        raise TraceError("/x.json", "broken here")

    with pytest.raises(TraceError, match="^/x.json: broken here$"):
        Beside(fail).result()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        Beside(lambda: 1 / 0).result()
    child = Beside(lambda: os.read(os.open("/dev/zero", os.O_RDONLY), 1) and __import__("time").sleep(60))
    pid = child.pid
    child.cancel()   # killed and reaped: no zombie left behind
    with pytest.raises(ChildProcessError):   # that pid (other tests' children may still be around)
        os.waitpid(pid, os.WNOHANG)


def test_child_dies_with_its_parent(tmp_path):
    """A CLI killed mid-load (a timeout, ^C) takes its forked loader with it."""
    import signal
    import time

    pidfile = tmp_path / "child"
    middle = os.fork()
    if middle == 0:   # a stand-in for the CLI: starts a Beside that would run for a minute
        try:
            b = Beside(lambda: time.sleep(60))
            pidfile.write_text(str(b.pid))
            time.sleep(60)
        finally:
            os._exit(0)
    deadline = time.monotonic() + 30
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    child = int(pidfile.read_text())
    os.kill(middle, signal.SIGKILL)
    os.waitpid(middle, 0)
    while True:   # the orphan is reaped by init once killed; /proc shows it gone or a zombie
        try:
            with open(f"/proc/{child}/stat") as f:
                if f.read().split()[2] == "Z":
                    break
        except FileNotFoundError:
            break
        assert time.monotonic() < deadline, "the loader outlived its parent"
        time.sleep(0.01)


@pytest.mark.parametrize("through", ["memory file", "pipe"])
def test_the_model_comes_back_whole_and_writable(monkeypatch, through):
    """B's arrays come back out of band through an in-memory file (or, without memfd, inside the
    pickle through the pipe): equal to a model loaded here, and as writable as one."""
    import kerneldiff.core.processes.fork_child as child_load

    if through == "pipe":
        monkeypatch.setattr(child_load, "_memfd", lambda: None)
    elif child_load._memfd() is None:
        pytest.skip("no memfd_create here")
    from kerneldiff.core.orchestration import load

    here = load(str(DEMO_B), use_cache=False)
    there = Beside(lambda: load(str(DEMO_B), use_cache=False)).result()
    for table in ("kernels", "cpu_ops", "launches", "python"):
        a, b = getattr(here, table).columns, getattr(there, table).columns
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
            assert b[k].flags.writeable or not a[k].flags.writeable
    col = there.kernels.columns["dur"]
    col[:1] = col[:1] + 1.0   # a write lands in this process's private copy
    assert Beside(lambda: {"empty": np.empty(0), "n": 3}).result()["n"] == 3


def test_the_work_of_a_side_is_guessed_from_its_json_bytes(tmp_path):
    """Which side the child takes: a gzip counts as the JSON it inflates to (its trailer), not its
    bytes on disk, so a small gzip of a big trace is not mistaken for the lighter side."""
    import gzip

    from kerneldiff.core.ingest.probe import probe
    from kerneldiff.core.ingest.probe import json_bytes as _json_bytes

    assert _json_bytes(probe(str(DEMO_A))) == len(gzip.decompress(DEMO_A.read_bytes()))
    plain = tmp_path / "b.json"
    plain.write_bytes(gzip.decompress(DEMO_B.read_bytes()))
    assert _json_bytes(probe(str(plain))) == plain.stat().st_size
    assert _json_bytes(probe(str(DEMO_B))) == plain.stat().st_size > DEMO_B.stat().st_size


@pytest.mark.parametrize("cores, sizes, beside", [
    (2, [100, 150], True), (2, [150, 100], True), (2, [100, 151], False), (2, [0, 10], False),
    (1, [100, 100], False), (3, [100, 100], False), (4, [100, 100], False)])
def test_a_pair_loads_side_by_side_on_two_cpus_when_its_sizes_are_alike(monkeypatch, cores, sizes, beside):
    from kerneldiff.core.processes import forkserver

    monkeypatch.setattr(forkserver, "cpus", lambda: cores)
    assert forkserver.pair_beside(sizes) is beside


def _big_pair_load(monkeypatch, paths) -> tuple[Session, list]:
    """Load `paths` as the CLI does (fork_pair) on two CPUs, every trace counted as big enough for
    workers; returns the session and the Besides started."""
    from kerneldiff.core.processes import fork_child, forkserver

    monkeypatch.setattr(forkserver, "cpus", lambda: 2)
    monkeypatch.setattr(forkserver, "PARALLEL_MIN_PLAIN", 1)
    monkeypatch.setattr(forkserver, "PARALLEL_MIN_GZIP", 1)
    started = []

    class Recorded(fork_child.Beside):
        def __init__(self, fn):
            started.append(fn)
            super().__init__(fn)

    monkeypatch.setattr(fork_child, "Beside", Recorded)
    s = Session([str(p) for p in paths], use_cache=False, fork_pair=True)
    s.probe()
    assert all(s.load_workers() is None for _ in s.paths) and not s._one_process
    s.load_all()
    assert not s._one_process and s.load_workers() is None   # the loads' setting does not outlive them
    return s, started


def test_a_big_pair_of_alike_sizes_loads_one_process_each(monkeypatch):
    """Two traces past the workers' threshold, of sizes alike, on two CPUs: one read here and one in
    a child, each by one process, with the models of loading them in turn."""
    s, started = _big_pair_load(monkeypatch, [DEMO_A, DEMO_B])
    assert len(started) == 1
    turn = _models(False, [DEMO_A, DEMO_B])
    for m, n in zip(turn.models, s.models):
        assert m.kernels.columns.keys() == n.kernels.columns.keys()
        for k in m.kernels.columns:
            np.testing.assert_array_equal(m.kernels.columns[k], n.kernels.columns[k])
    assert turn.compare().to_dict() == s.compare().to_dict()


def test_a_big_pair_of_unlike_sizes_loads_in_turn(monkeypatch, tmp_path):
    """One trace well over 1.5x the other's JSON: in turn, each load with its workers."""
    import gzip

    padded = tmp_path / "a.json"   # demo A's JSON with trailing blanks: ~3x demo B's bytes
    padded.write_bytes(gzip.decompress(DEMO_A.read_bytes()) + b" " * (2 * 1024 * 1024))
    s, started = _big_pair_load(monkeypatch, [padded, DEMO_B])
    assert started == []
    assert s.models[0].kernels.columns["dur"].tolist() == _models(False, [DEMO_A]).models[0].kernels.columns["dur"].tolist()


def test_then_runs_in_the_child_after_the_value_is_sent(tmp_path):
    """`result()` does not wait for `then`; `join` does; a failing `then` changes nothing here."""
    import time

    gate, mark = tmp_path / "gate", tmp_path / "then"

    def then(value):
        while not gate.exists():     # held until this process has its result
            time.sleep(0.01)
        mark.write_text(str(value))

    b = Beside(lambda: 41 + 1, then)
    assert b.result() == 42 and not mark.exists()
    gate.write_text("")
    b.join(60)
    assert mark.read_text() == "42"
    b.cancel()   # after the end: nothing to stop (and never a signal to pid 0, this process group)
    failing = Beside(lambda: "x", lambda value: 1 / 0)
    assert failing.result() == "x"
    failing.join(60)
    with pytest.raises(TraceError):  # an error is raised here; `then` does not run for it
        Beside(lambda: (_ for _ in ()).throw(TraceError("/x.json", "bad")), lambda value: mark.unlink()).result()
    assert mark.exists()
