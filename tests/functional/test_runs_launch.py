"""`kerneldiff RUN_A RUN_B`: the launcher opens the one explorer on the runs screen, opens the
comparison of the rank chosen there (against the same rank of the other run), comes back to the
runs when that comparison is closed, and ends with 0 when the runs screen is quit. The explorer
itself is stood in for (it needs a terminal); what the launcher does with its answers is real."""

from __future__ import annotations

import pytest

from kerneldiff.core.synth.ranks import write_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs_launch")
    write_run(base / "a", ranks=2, straggler=1, straggle_us=50, passes=2, layers=2)
    write_run(base / "b", ranks=2, straggler=None, passes=2, layers=2, naming="vllm")
    return base / "a", base / "b"


@pytest.mark.slow
def test_a_chosen_rank_opens_its_comparison_and_comes_back(runs, monkeypatch):
    import kerneldiff.tui.app as tui_app
    from kerneldiff.cli.app_launch import launch

    answers = iter([("b", 1), None])      # Enter on B's rank 1, then q
    explored, compared = [], []

    def explore_runs(session, found):
        explored.append((list(session.paths), sorted(r.rank for r in found.ranks["a"])))
        return next(answers)

    def run_app(paths, **kw):
        compared.append(list(paths))
        return 0

    monkeypatch.setattr(tui_app, "_has_terminal", lambda: True)
    monkeypatch.setattr(tui_app, "explore_runs", explore_runs)
    monkeypatch.setattr(tui_app, "run_app", run_app)
    a, b = runs
    assert launch([str(a), str(b), "--no-cache"]) == 0
    assert explored == [([str(a), str(b)], [0, 1])] * 2
    # rank 1 of each run, A's first: read from the file names the generator gives the ranks
    (pa, pb), = compared
    assert pa.startswith(str(a)) and pa.endswith("trace_1.json.gz")
    assert pb.startswith(str(b)) and "_rank1." in pb
