"""The text ledger's cause labels are whole at 80 columns: wrapped at a word, never cut with …
("exposed communica…" on the two-rank pair). Every word of every cause must appear whole in the
ledger table's first column."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from conftest import real_trace


@pytest.mark.slow
@pytest.mark.parametrize("width", [80, 160])
def test_every_cause_is_whole(width):
    from kerneldiff.cli.ledger_report import render_ledger
    from kerneldiff.core.session import Session

    s = Session([str(real_trace("hta_two_ranks/sampled_rank-0.json.gz")),
                 str(real_trace("hta_two_ranks/sampled_rank-1.json.gz"))], use_cache=False)
    s.load_all()
    cmp = s.compare()
    assert any(e.cause == "exposed communication" for e in cmp.ledger)
    buf = io.StringIO()
    render_ledger(cmp, Console(file=buf, width=width, no_color=True))
    table = buf.getvalue().split("└", 1)[0]
    first = [m.group(1).strip() for m in re.finditer(r"^│ (.*?) │", table, re.M)]
    assert "…" not in "".join(first)
    words = " ".join(first).split()
    for e in cmp.ledger:
        for w in e.cause.split():
            assert w in words, (e.cause, w)
    assert max(len(line) for line in buf.getvalue().splitlines()) <= width
