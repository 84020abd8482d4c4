"""Run directories as users keep them: other files beside the traces, every rank's file named alike;
and the summary of runs too large to list."""

from __future__ import annotations

import json
import os

import pytest

from kerneldiff.cli.main import main
from kerneldiff.core.synth.ranks import write_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("dirs")
    a = write_run(base / "a", ranks=3, passes=2, straggler=2, straggle_us=80)
    b = write_run(base / "b", ranks=3, passes=2, straggler=None)
    (base / "a" / "config.json").write_text('{"lr": 0.1, "steps": 3}')
    (base / "a" / "README.txt").write_text("how this run was made")
    return base, a, b


def test_non_trace_files_are_skipped_and_said(runs, capsys):
    base, a, _ = runs
    assert main(["compare", str(base / "a"), str(base / "b"), "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["ranks"]["a"]) == len(a["files"]) == 3
    note = next(n for n in doc["runs"]["notes"] if "not traces skipped" in n)
    assert note.startswith("A: 2 file(s)") and "config.json" in note and "README.txt" in note
    assert doc["stragglers"]["a"]["rank"] == 2 and doc["stragglers"]["b"] is None


def test_a_broken_trace_in_a_run_is_still_an_error(runs, tmp_path, capsys):
    base, a, _ = runs
    d = tmp_path / "broken"
    d.mkdir()
    for f in a["files"]:
        os.symlink(f, d / os.path.basename(f))
    (d / "rank9.json").write_text('{"traceEvents": [{"ph": "X", "name": ')
    assert main(["compare", str(d), str(base / "b"), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "rank9.json" in err and len(err.strip().splitlines()) == 1


def test_the_compared_ranks_are_named_by_their_run(runs, capsys):
    base, *_ = runs
    assert main(["compare", str(base / "a"), str(base / "b"), "--no-cache", "--width", "120"]) == 0
    out = capsys.readouterr().out
    head = [l for l in out.splitlines() if l.startswith(("A A: ", "B B: "))]
    assert head[0].startswith(f"A A: {base / 'a'} rank ") and head[1].startswith(f"B B: {base / 'b'} rank ")


def test_many_ranks_are_summarised(tmp_path, capsys):
    """Markdown lists the slowest 16 rows and summarises each run: spread and a histogram of its
    ranks' wall clocks that counts every rank."""
    from kerneldiff.core.report.run_report import HISTOGRAM_BINS, TOP_RANKS

    write_run(tmp_path / "a", ranks=12, passes=1, layers=3, straggler=5)
    write_run(tmp_path / "b", ranks=12, passes=1, layers=3, straggler=None)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "markdown", "--no-cache"]) == 0
    md = capsys.readouterr().out
    assert len([l for l in md.splitlines() if l.startswith(("| A | ", "| B | "))]) == TOP_RANKS
    for k in "ab":
        assert any(l.startswith(f"{k.upper()}: 12 ranks, wall ") for l in md.splitlines())
    assert "the straggler (last to arrive at most validated collectives): A rank 5" in md


@pytest.mark.parametrize("walls", [[100.0, 101.0, 150.0, 400.0, 399.0, 250.0, 100.0], [5.0] * 3 + [6.0]])
def test_wall_summary_counts_every_rank(walls):
    from types import SimpleNamespace

    from kerneldiff.core.report.run_report import HISTOGRAM_BINS, wall_summary

    line = wall_summary(SimpleNamespace(ranks={"a": [SimpleNamespace(wall_us=w) for w in walls]}), "a")
    counts = [int(x) for x in line.rsplit(": ", 1)[1].split()]
    lo, hi = min(walls), max(walls)
    want = [0] * HISTOGRAM_BINS
    for w in walls:   # equal bins from the fastest; the slowest in the last
        want[min(int((w - lo) * HISTOGRAM_BINS // (hi - lo)), HISTOGRAM_BINS - 1)] += 1
    assert counts == want and sum(counts) == len(walls)


def test_too_few_validated_collectives_name_no_straggler(tmp_path, capsys):
    """One collective per rank: whoever arrived last at it, that names no straggler; the report says so."""
    write_run(tmp_path / "a", ranks=4, passes=1, layers=1, straggler=2)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "a"), "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["stragglers"] == {"a": None, "b": None}
    assert any("straggler unknown: only 1 collective(s) validated" in n for n in doc["runs"]["notes"])


@pytest.mark.parametrize("plant, want", [({"straggler": 2, "straggle_us": 60.0}, "compute_longer_us"),
                                         ({"straggler": None, "late_launch": 2, "late_launch_us": 60.0},
                                          "host_late_us")])
def test_straggler_causes(tmp_path, plant, want):
    """A rank late because its GEMMs ran longer reads "computed longer"; one late because its host
    launched each all-reduce late (the GPU idle meanwhile) reads "host launched late": 60 µs each,
    the other causes 0, whatever compute figures say."""
    from kerneldiff.core.analysis.collectives import match, straggler
    from kerneldiff.core.ranks.identify import RankFile
    from kerneldiff.core.ranks.run import load_ranks

    truth = write_run(tmp_path / "r", ranks=4, passes=2, layers=3, **plant)
    ranks = load_ranks([RankFile(r, f) for r, f in enumerate(truth["files"])], use_cache=False, jobs=1)
    st = straggler(match([r.collectives for r in ranks], [0, 1, 2, 3]).instances, [0, 1, 2, 3])
    assert st.rank == 2 and st.last == 6 and st.late_us == pytest.approx(60.0)
    got = {k: getattr(st, k) for k in ("host_late_us", "compute_longer_us", "peer_wait_us")}
    assert got == pytest.approx({k: (60.0 if k == want else 0.0) for k in got})
    for c in st.causes:
        assert c["host_late_us"] + c["compute_longer_us"] + c["peer_wait_us"] == pytest.approx(c["late_us"])
