"""Session.compare_ahead: a pair whose comparison is not stored gets it computed and stored by a forked
child while the caller (the explorer) starts, from the model cache, or after loading what the cache
lacks; what is stored then is the comparison the caller would compute itself."""

from __future__ import annotations

import pytest

from kerneldiff.core import comparison_cache as cc
from kerneldiff.core.ingest import cache as model_cache
from kerneldiff.core.session import Session

from test_comparison_cache import cache_home, entries, pair, same  # noqa: F401 - a fixture among them


def session(paths, **kw):
    s = Session(paths, keep_comparisons=True, **kw)
    s.probe(strict=False)
    return s


def test_cached_models_get_their_comparison_stored_by_the_child(cache_home):  # noqa: F811
    paths = pair(cache_home)
    first = session(paths)
    first.load_all()                                  # both models now in the model cache
    for f in entries():
        f.unlink()                                    # ... and no comparison stored
    opened = session(paths)
    wait = opened.compare_ahead("all")
    child = opened._ahead
    assert wait is not None and wait() is True
    received = opened.stored_comparison("all")               # sent back, not read from the cache
    assert received is not None and opened.models == [None, None] and opened.phases() == first.phases()
    assert same(received, first.compare("all", keep=False))  # what the explorer would have computed
    child.join(60)                                           # stored once sent
    assert len(entries()) == 1
    s = session(paths)
    stored = s.stored_comparison("all")
    assert stored is not None and s.models == [None, None]
    assert same(stored, received)
    # stored now: nothing left to do ahead
    assert session(paths).compare_ahead("all") is None


def _no_json_reads_here(monkeypatch):
    """From now on this process reads no trace from its JSON (a forked child still may)."""
    from kerneldiff.core.ingest import loader

    def refuse(path, *a, **k):
        raise AssertionError(f"{path} read from its JSON in this process")

    monkeypatch.setattr(loader, "read_reported", refuse)


@pytest.mark.parametrize("cached", [[], [0], [1]], ids=["none cached", "A cached", "B cached"])
def test_a_pair_outside_the_model_cache_is_loaded_and_compared_by_the_child(cache_home, monkeypatch,
                                                                           cached):  # noqa: F811
    """The child loads what the cache lacks (as the CLI would), stores each model and the
    comparison; the session's own loads follow it and read the cache, its comparison is the
    child's, and it is what loading in this process would have given."""
    paths = pair(cache_home)
    for i in cached:
        session(paths).load(i)
    s = session(paths)
    wait = s.compare_ahead("all")
    assert wait is not None and wait() is False       # not stored yet: the loads follow the child
    ahead = s._ahead
    _no_json_reads_here(monkeypatch)
    reports: list[list[str]] = [[], []]
    s.load_all(progress=lambda i, fraction, stage, done, total: reports[i].append(stage) or True)
    assert all(model_cache.has(p, s.classifier) for p in paths)
    assert all(r and r[-1] == "done" for r in reports)
    comparison = s.compare("all")                    # the child's, sent back
    assert s._ahead is None
    ahead.join(60)                                    # it stores the comparison after sending it
    assert len(entries()) == 1 and same(s.stored_comparison("all"), comparison)
    monkeypatch.undo()
    here = Session([*paths], use_cache=False)
    here.load_all()
    assert same(comparison, here.compare("all"))


def test_a_cancelled_load_stops_the_child_and_a_reload_reads_the_json(cache_home):  # noqa: F811
    import threading

    from kerneldiff.core.errors import LoadCancelled

    paths = pair(cache_home)
    s = session(paths)
    wait = s.compare_ahead("all")
    assert wait() is False
    ahead = s._ahead
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(LoadCancelled):
        s.load(0, cancel=cancel)
    assert s._ahead is None and ahead._beside.pid == 0     # killed and reaped
    s.load_all()                                           # read here, as without the child
    assert s.loaded and entries() == []
    assert s.compare("all") is not None


@pytest.mark.parametrize("bad_side", [0, 1])
def test_a_child_that_fails_leaves_the_error_to_the_sessions_own_load(cache_home, bad_side):  # noqa: F811
    """A trace that probes fine and fails to load: the session's load gives the error it gives
    without a child."""
    from kerneldiff.core.errors import TraceError

    paths = pair(cache_home)
    with open(paths[bad_side], "wb") as f:
        f.write(b'{"schemaVersion": 1, "traceEvents": 5}')
    s = session(paths)
    wait = s.compare_ahead("all")
    assert wait is not None and wait() is False
    with pytest.raises(TraceError) as followed:
        s.load_all()
    with pytest.raises(TraceError) as alone:
        Session(paths, use_cache=False).load_all()
    assert str(followed.value) == str(alone.value) and "not a list" in str(followed.value)


@pytest.mark.parametrize("how", ["one trace", "no cache", "not kept", "cache writing off"])
def test_nothing_ahead_where_it_does_not_apply(cache_home, monkeypatch, how):  # noqa: F811
    paths = pair(cache_home)
    if how == "cache writing off":   # the child could hand no model over
        monkeypatch.setenv("KERNELDIFF_CACHE_MAX", "0")
    s = {"one trace": lambda: session(paths[:1]),
         "no cache": lambda: session(paths, use_cache=False),
         "not kept": lambda: Session(paths),
         "cache writing off": lambda: session(paths)}[how]()
    assert s.compare_ahead("all") is None


def test_a_failing_child_leaves_the_comparison_to_the_caller(cache_home, tmp_path):  # noqa: F811
    paths = pair(cache_home)
    session(paths).load_all()
    for f in entries():
        f.unlink()
    s = session(paths)
    ahead = s.compare_ahead("no such phase")          # the child's compare raises ValueError
    assert ahead is not None and ahead() is False
    assert entries() == []


def test_a_board_written_by_forked_children_is_read_here():
    """The child and its own child write the board; this process reads what they wrote."""
    import os

    from kerneldiff.core.processes.progress_board import LOADING, RUNNING, STORED, UNDECIDED, ProgressBoard

    board = ProgressBoard(2)
    assert board.plan() == UNDECIDED and board.read(0) == (RUNNING, 0.0, "", 0, 0)
    pid = os.fork()
    if pid == 0:
        try:
            board.decide(LOADING)
            grandchild = os.fork()
            if grandchild == 0:
                board.report(1, 0.25, "reading", 10, 40)
                os._exit(0)
            os.waitpid(grandchild, 0)
            board.report(0, 0.5, "é" * 20, 1, 2)     # cut at 32 bytes: inside no character
            board.stored(0)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert board.plan() == LOADING
    assert board.read(1) == (RUNNING, 0.25, "reading", 10, 40)
    assert board.read(0) == (STORED, 1.0, "done", 2, 2)
    board.report(0, 0.5, "é" * 20, 1, 2)
    assert board.read(0)[2] == "é" * 16
    board.report(0, 0.5, "x" + "é" * 20, 1, 2)      # a cut through a character drops it
    assert board.read(0)[2] == "x" + "é" * 15
    with pytest.raises(IndexError):
        board.read(2)


def test_a_child_killed_from_outside_leaves_the_work_to_the_session(cache_home):  # noqa: F811
    """The out-of-memory killer takes the child mid-load: the session's loads read the traces
    themselves and its comparison is computed here, equal to one made without a child."""
    import os
    import signal

    paths = pair(cache_home)
    s = session(paths)
    wait = s.compare_ahead("all")
    assert wait() is False
    os.kill(s._ahead._beside.pid, signal.SIGKILL)
    s.load_all()
    comparison = s.compare("all")
    alone = Session(paths, use_cache=False)
    alone.load_all()
    assert same(comparison, alone.compare("all"))


def test_the_child_runs_nicer_than_the_explorer(cache_home):  # noqa: F811
    """While the explorer draws its first frame the child's loads yield to it (compare_ahead.NICE)."""
    import os
    from pathlib import Path

    from kerneldiff.core.compare_ahead import NICE

    paths = pair(cache_home)
    s = session(paths)
    before = os.nice(0)
    wait = s.compare_ahead("all")
    assert wait() is False                     # the child has niced itself before it decided
    stat = Path(f"/proc/{s._ahead._beside.pid}/stat")
    if not stat.exists():
        pytest.skip("no /proc here")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    assert int(fields[16]) == min(before + NICE, 19)   # field 19 of stat: the nice value
    s.load_all()
    assert os.nice(0) == before                # this process's own niceness is untouched
