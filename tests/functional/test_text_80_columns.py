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


def _title_ends(lines: list[str], end: int) -> list[str]:
    """The title that ends on line `end`, read as its last one, two and three lines joined: a title
    wider than its table wraps (at the table's width, so differently at 80 and at 200 columns)."""
    out = []
    for k in (1, 2, 3):
        part = lines[end - k + 1:end + 1] if end - k + 1 >= 0 else []
        if not part or any(not p.strip() or p[:1] in "│┃└┘┏━─" for p in part):
            break
        out.append(" ".join(p.strip() for p in part))
    return out


def tables(text: str) -> list[tuple[list[str], list[str], str]]:
    """(title candidates, headers, the caption lines after the table) for each table the report draws
    in order, boxed (┃ headers) or simple (a header line over a ─ rule)."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        head = None
        if line.startswith("┏") and i + 1 < len(lines):
            head, title_end, end = lines[i + 1].strip("┃").split("┃"), i - 1, i + 2
        elif line.lstrip().startswith("──") and i >= 2 and not lines[i - 1].startswith(("┃", "│")):
            head, end = re.split(r"\s{2,}", lines[i - 1].strip()), i + 1
            title_end = i - 2 if lines[i - 2] else i - 3
        if head is None:
            continue
        j = end
        while j < len(lines) and (lines[j][:1] in "│├└┡" or lines[j].startswith(" ") or not lines[j]):
            j += 1
        caption = " ".join(lines[j:j + 3])
        out.append((_title_ends(lines, title_end), [h.strip() for h in head if h.strip()], caption))
    return out


def paired(narrow: str, wide: str) -> dict[str, tuple[list[str], str, list[str]]]:
    """title -> (narrow headers, narrow caption, wide headers): the two reports draw the same tables
    in the same order; a table's whole title is the shortest reading of it that both print (one
    that wrapped at one width is joined back; a line above it that both print is not taken)."""
    n, w = tables(narrow), tables(wide)
    assert len(n) == len(w), ([t[0][-1:] for t in n], [t[0][-1:] for t in w])
    out = {}
    for (n_titles, n_head, caption), (w_titles, w_head, _) in zip(n, w):
        both = [t for t in n_titles if t in w_titles]
        assert both, f"a table titled {n_titles[:1]} at 80 columns and {w_titles[:1]} at 200"
        out[min(both, key=len)] = (n_head, caption, w_head)
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
    for title, (got, caption, head) in paired(narrow, wide).items():
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
    drawn = paired(narrow, wide)
    ranks, caption, _ = drawn["Ranks (slowest first)"]
    assert {"wall", "idle"} <= set(ranks) and "file" in caption
    coll, _, _ = drawn["Collectives: time per rank (kind × message, largest gap first)"]
    assert "gap" in coll


@pytest.mark.slow
@pytest.mark.parametrize("pair", [("h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz"),
                                  ("mi300x_qwen1.5-0.5b_hf.json.gz", "h100_qwen1.5-0.5b_hf.json.gz")])
def test_pair_report_at_80_columns(pair, capsys):
    args = ["compare", *(str(real_trace(p)) for p in pair), "--no-cache"]
    narrow, wide = _report(args, 80, capsys), _report(args, 200, capsys)
    check_80_against_200(narrow, wide)
    drawn = paired(narrow, wide)
    gemm = next(t for t in drawn if t.startswith("GEMM shapes"))
    head, caption, _ = drawn[gemm]
    assert {"time", "roof", "gap"} <= set(head) and "left out" not in caption
    # the roof says which: a memory-bound shape's small % of the compute peak is not the whole story
    assert re.search(r"│ (mem|comp) \d", narrow)
