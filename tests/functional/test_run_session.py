"""RunSession as the front ends' one way into runs of rank traces: telling a run from a trace,
listing a run's files before any load, the findings, and which two rank files a comparison opens."""

from __future__ import annotations

import pytest

from kerneldiff.core.errors import TraceError
from kerneldiff.core.ranks.run import Representative, findings
from kerneldiff.core.ranks.session import RunSession
from kerneldiff.core.synth.ranks import write_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("run_session")
    write_run(base / "a", ranks=3, straggler=2, straggle_us=80, passes=2, layers=2)
    write_run(base / "b", ranks=2, straggler=None, passes=2, layers=2, naming="vllm")
    return str(base / "a"), str(base / "b")


def test_a_run_is_told_from_a_trace(runs, tmp_path):
    pa, _ = runs
    trace = tmp_path / "t.json"
    trace.write_text("{}")
    assert RunSession.names_runs(pa, str(trace)) and RunSession.names_runs(f"{trace},{trace}x")
    assert not RunSession.names_runs(str(trace), str(trace))


def test_files_are_listed_before_any_load(runs, tmp_path):
    pa, pb = runs
    s = RunSession([pa, pb], use_cache=False, jobs=1)
    a, b = s.files()
    assert len(a) == 3 and len(b) == 2 and not s.sides       # nothing read yet
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TraceError, match="without trace files"):
        RunSession([pa, str(empty)]).files()


def test_rank_files_pick_the_representatives_and_the_counterpart(runs):
    pa, pb = runs
    s = RunSession([pa, pb], use_cache=False, jobs=1)
    a, b = s.load()
    assert s.findings() == findings(a, b)
    slowest = [a.slowest().file, b.slowest().file]
    assert s.rank_files() == slowest
    # rank 2 of A: B has no rank 2, so B's slowest answers it
    assert s.rank_files("a", 2) == [a.rank(2).file, b.slowest().file]
    assert s.rank_files("b", 1) == [a.rank(1).file, b.rank(1).file]
    with pytest.raises(TraceError, match="has no rank 5"):
        s.rank_files("a", 5)
    s.rank = 2
    with pytest.raises(TraceError, match="has no rank 2"):         # --rank 2: B lacks it
        s.rank_files()
    s.rank = 1
    assert s.rank_files() == [a.rank(1).file, b.rank(1).file]
    assert s.findings().representative == Representative(a=1, b=1, how="rank 1 (--rank)")
