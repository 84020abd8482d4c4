"""The runs screen's head shows every note where the terminal has room (at 160×45 it said "2 more
notes: kerneldiff compare … prints them" beside empty space), and folds them into that line only
at 80×24."""

from __future__ import annotations

import copy
import io

from rich.console import Console

from kerneldiff.tui.run_views import head_lines, runs_head


class _Found:
    pass


def _render(group, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, no_color=True).print(group)
    return out.getvalue()


def _found(tmp_path):
    from kerneldiff.core.ranks.run import findings
    from kerneldiff.core.ranks.session import RunSession
    from kerneldiff.core.synth.ranks import write_run

    write_run(tmp_path / "a", ranks=2, straggler=1, straggle_us=50, passes=2, layers=2)
    write_run(tmp_path / "b", ranks=2, straggler=1, straggle_us=120, passes=2, layers=2)
    return findings(*RunSession([str(tmp_path / "a"), str(tmp_path / "b")], use_cache=False, jobs=1).load())


def test_notes_shown_when_they_fit(tmp_path):
    found = copy.copy(_found(tmp_path))
    found.notes = [f"note number {i}" for i in range(6)]
    small = _render(runs_head(found, head_lines(24)), 80)
    assert "more notes" in small and len(small.splitlines()) == 5
    large = _render(runs_head(found, head_lines(45)), 160)
    assert "more notes" not in large
    assert all(f"note number {i}" in large for i in range(6))
    assert head_lines(24) == 5 and head_lines(45) > 5
