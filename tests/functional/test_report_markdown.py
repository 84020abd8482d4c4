"""`compare --format markdown`: a pull-request comment: GitHub tables whose numbers are the text
report's, under 60 lines, with trace strings that cannot break a table or inject HTML."""

from __future__ import annotations

import dataclasses
import io
import re

import pytest
from hypothesis import given, strategies as st
from rich.console import Console

from kerneldiff.cli.text_report import render_text
from kerneldiff.cli.main import main
from kerneldiff.core.compare.engine import compare
from kerneldiff.core.compare.result import Comparability, Excluded, LedgerEntry
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.orchestration import load
from kerneldiff.core.report import format as fmt
from kerneldiff.core.report import labels
from kerneldiff.core.report.markdown import md, render_markdown

from conftest import real_trace

A, B = str(DEMO_A), str(DEMO_B)


def _tables_are_whole(text: str) -> None:
    """Every table row has its header's cell count (an unescaped | would add one)."""
    cells = None
    for line in text.splitlines():
        if line.startswith("|"):
            n = len(re.findall(r"(?<!\\)\|", line))
            cells = n if cells is None else cells
            assert n == cells, line
        else:
            cells = None


def _text(cmp) -> str:
    out = Console(file=io.StringIO(), width=200, color_system=None, highlight=False, markup=False, emoji=False)
    render_text(cmp, out)
    return out.file.getvalue()


def _check(cmp) -> str:
    text = render_markdown(cmp)
    assert len(text.splitlines()) < 60
    _tables_are_whole(text)
    report = _text(cmp)
    figures = [fmt.ratio(cmp.ratio), fmt.gap(cmp.gap_us), fmt.ratio(cmp.wall.wall_ratio), fmt.gap(cmp.wall.wall_gap_us)]
    for o in cmp.operations[:6]:
        figures += [fmt.us(x) for x in labels.operation_times(cmp, o)] + [fmt.ratio(o.ratio), fmt.gap(o.gap_us)]
    for l in cmp.layers[:5]:
        figures += [fmt.us(l.a.total_us), fmt.us(l.b.total_us), fmt.gap(l.gap_us)]
    fusions, launch_counts = labels.fusions_and_launch_counts(cmp.fusions)
    for f in fusions[:5]:
        figures += [fmt.gap(f.measured_saving_us), labels.estimated_saving(f)]
    figures += [fmt.us(f.component_cost_us) for f in launch_counts]   # extra memsets: their time
    for fig in figures:
        assert fig in report and fig in text, fig
    return text


@pytest.mark.slow
def test_demo_and_real_pairs_fit_a_comment_and_say_what_the_text_report_says(demo_models):
    _check(compare(demo_models[A], demo_models[B]))
    _check(compare(demo_models[A], demo_models[B], phase="decode"))
    a = load(real_trace("mi300x_qwen1.5-0.5b_hf.json.gz"), use_cache=False)
    b = load(real_trace("h100_qwen1.5-0.5b_hf.json.gz"), use_cache=False)
    text = _check(compare(a, b))
    assert text.startswith("### kerneldiff: AMD Instinct MI300X VF vs NVIDIA H100 80GB HBM3")


def test_ledger_verdict_and_exclusions_when_present(demo_models):
    cmp = dataclasses.replace(compare(demo_models[A], demo_models[B]))
    w = cmp.wall
    cmp.ledger = [LedgerEntry(cause=f"cause {i}", a_us=1.0, b_us=2.0, gap_us=w.wall_gap_us / 10, detail="")
                  for i in range(10)]
    cmp.comparability = Comparability(verdict="not comparable", reasons=["no operation in common", "a | b"])
    cmp.a = dataclasses.replace(cmp.a)
    cmp.a.excluded = Excluded(kernels=12, time_us=345.0, why="warm-up <pass>")
    text = _check(cmp)
    assert "**Not comparable**: no operation in common; a \\| b" in text
    assert "| cause 0 |" in text and "4 more" in text and fmt.gap(w.wall_gap_us) in text
    assert "A left out 12 kernels (345.0µs): warm-up &lt;pass&gt;" in text


@given(st.text(max_size=200))
def test_md_cells_are_inert(s):
    cell = md(s)
    assert not re.search(r"(?<!\\)[|`*_\[\]~]", cell.replace("\\\\", ""))
    assert "<" not in cell and ">" not in cell and "\n" not in cell and "\r" not in cell
    assert len(cell) <= 60 * 7     # cut at 60 characters, each escaped to at most an entity


def test_cli(tmp_path, capsys):
    out = tmp_path / "c.md"
    assert main(["compare", A, B, "--format", "markdown", "-o", str(out), "--no-cache"]) == 0
    assert out.read_text(encoding="utf-8").startswith("### kerneldiff:")
    assert main(["compare", A, B, "--format", "markdown", "--table", "layers", "--no-cache"]) == 2
