"""The text reports at 80 columns never cut a number: every figure printed at 80 columns is whole
(no `651.14…`) and is one the same report prints at 200 columns; a column that does not fit is left
out whole and the table's caption names it; the GEMM and attention shapes keep their time and roof
(one line per side) rather than losing them."""

from __future__ import annotations

import re

import pytest

from kerneldiff.cli.main import main

from conftest import real_trace

BOX = "│┃║"
EDGE = "()[],;:'\""
NUMERIC = re.compile(r"^[-+−~<>≈]?\d")


def tokens(text: str) -> list[str]:
    out = []
    for line in text.replace("left out at 80 columns", "").splitlines():
        for ch in BOX:
            line = line.replace(ch, " ")
        for tok in line.split():
            tok = tok.strip(EDGE)
            if NUMERIC.match(tok):
                out.append(tok)
    return out


def tables(text: str) -> dict[str, tuple[list[str], str]]:
    """title -> (headers, the caption lines after the table) for each table the report draws, boxed
    (┃ headers) or simple (a header line over a ─ rule)."""
    lines = text.splitlines()
    out = {}
    for i, line in enumerate(lines):
        head = None
        if line.startswith("┏") and i + 1 < len(lines):
            head, title, end = lines[i + 1].strip("┃").split("┃"), lines[i - 1], i + 2
        elif line.lstrip().startswith("──") and i >= 2 and not lines[i - 1].startswith(("┃", "│")):
            head, title, end = re.split(r"\s{2,}", lines[i - 1].strip()), lines[i - 2] or lines[i - 3], i + 1
        if head is None:
            continue
        j = end
        while j < len(lines) and (lines[j][:1] in "│├└┡" or lines[j].startswith(" ") or not lines[j]):
            j += 1
        caption = " ".join(lines[j:j + 3])
        out[title.strip()] = ([h.strip() for h in head if h.strip()], caption)
    return out


def _plain(h: str) -> set[str]:
    """A header as the stacked layout spells it: `A time` and `B time` are `time` on two lines."""
    h = h.removeprefix("A ").removeprefix("B ")
    return {"op", "shape"} if h == "op and shape" else {h}


def _report(args, width, capsys) -> str:
    assert main([*args, "--width", str(width)]) == 0
    return capsys.readouterr().out


def check_80_against_200(narrow: str, wide: str) -> None:
    cut = [t for t in tokens(narrow) if "…" in t]
    assert not cut, f"numbers cut at 80 columns: {cut[:10]}"
    known = set(tokens(wide))
    strange = [t for t in tokens(narrow) if t not in known]
    assert not strange, f"figures at 80 columns that the 200-column report does not print: {strange[:10]}"
    assert max(len(line) for line in narrow.splitlines()) <= 80
    wide_tables, narrow_tables = tables(wide), tables(narrow)
    assert narrow_tables.keys() == wide_tables.keys()
    for title, (head, _) in wide_tables.items():
        got, caption = narrow_tables[title]
        shown = set().union(*(_plain(h) for h in got))
        for h in head:
            if not _plain(h) <= shown:
                assert "left out at 80 columns" in caption and h in caption, (title, h, caption)


@pytest.mark.slow
def test_runs_report_at_80_columns(capsys):
    run = str(real_trace("hta_two_ranks/sampled_rank-0.json.gz").parent)
    args = ["compare", run, run, "--no-cache"]
    narrow, wide = _report(args, 80, capsys), _report(args, 200, capsys)
    check_80_against_200(narrow, wide)
    # the ranks keep wall and idle (the file is what goes), collectives their gap
    ranks, caption = tables(narrow)["Ranks (slowest first)"]
    assert {"wall", "idle"} <= set(ranks) and "file" in caption
    coll, _ = tables(narrow)["Collectives: time per rank (kind × message, largest gap first)"]
    assert "gap" in coll


@pytest.mark.slow
@pytest.mark.parametrize("pair", [("h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz"),
                                  ("mi300x_qwen1.5-0.5b_hf.json.gz", "h100_qwen1.5-0.5b_hf.json.gz")])
def test_pair_report_at_80_columns(pair, capsys):
    args = ["compare", *(str(real_trace(p)) for p in pair), "--no-cache"]
    narrow, wide = _report(args, 80, capsys), _report(args, 200, capsys)
    check_80_against_200(narrow, wide)
    gemm = next(t for t in tables(narrow) if t.startswith("GEMM shapes"))
    head, caption = tables(narrow)[gemm]
    assert {"time", "roof", "gap"} <= set(head) and "left out" not in caption
    # the roof says which: a memory-bound shape's small % of the compute peak is not the whole story
    assert re.search(r"│ (mem|comp) \d", narrow)
