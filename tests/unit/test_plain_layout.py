"""cli/plain.py lays text and tables out as Rich does, without Rich's console: the same bytes.

Each document is drawn twice, by the plain layout and by Rich's Console writing to a stream that is
not a terminal (where Rich prints no styles), and the bytes compared: random text (wide, combining
and emoji characters, tabs, long words, runs of spaces) at random widths, random tables (the options
the reports use), and `kerneldiff info` of real traces at several widths.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.console import Console as RichConsole
from rich.table import Table as RichTable
from rich.text import Text as RichText

from kerneldiff.cli import plain

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"

# what trace strings and report figures hold: ASCII, wide CJK, a combining accent, emoji (one with a
# joiner), the ellipsis and box characters the reports print, tabs and the control codes Rich drops
CHARS = st.sampled_from(list("abcdefghij KLMNOP0123456789_.,:;()[]%µ-—") +
                        ["漢", "字", "の", "e\u0301", "😀", "👩\u200d💻", "…", "│", "\t", "\r", "\x07"])
TEXT = st.lists(st.one_of(CHARS, st.text("xyz", min_size=8, max_size=60), st.just("  ")),
                max_size=40).map("".join)
WIDTH = st.integers(min_value=20, max_value=160)


def rich_bytes(width: int, *objects) -> str:
    out = io.StringIO()
    c = RichConsole(file=out, width=width, highlight=False, emoji=False, markup=False)
    c.print(*objects)
    return out.getvalue()


def plain_bytes(width: int, *objects) -> str:
    out = io.StringIO()
    plain.Console(file=out, width=width).print(*objects)
    return out.getvalue()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT, width=WIDTH)
@example(text="wall clock 5.62s   idle 269.58ms (5%): launch-bound 51.18ms, sync waits 0.00µs, other 218.40ms",
         width=80)
@example(text="x" * 200, width=40)
@example(text="a\tb\t漢字\tc", width=20)
@example(text="", width=40)
def test_a_line_wraps_as_rich_wraps_it(text, width):
    assert plain_bytes(width, plain.Text(text)) == rich_bytes(width, RichText(text))


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(TEXT, min_size=1, max_size=3), width=WIDTH)
def test_joined_text_and_blank_lines_as_rich(parts, width):
    a, b = plain.Text(parts[0]), RichText(parts[0])
    for p in parts[1:]:
        a, b = a + plain.Text(p, style="dim"), b + RichText(p, style="dim")
        a.append(p, style="bold")
        b.append(p, style="bold")
    assert plain_bytes(width, a) == rich_bytes(width, b)
    assert plain_bytes(width) == rich_bytes(width) == "\n"


COLUMN = st.fixed_dictionaries({}, optional={
    "justify": st.sampled_from(["left", "right", "center"]),
    "overflow": st.sampled_from(["fold", "ellipsis", "crop"]),
    "no_wrap": st.booleans(),
    "style": st.just("bold"),
    "max_width": st.integers(min_value=4, max_value=40),
    "min_width": st.integers(min_value=1, max_value=20),
    "width": st.integers(min_value=2, max_value=30),
})


@st.composite
def tables(draw):
    ncols = draw(st.integers(min_value=1, max_value=5))
    columns = [(draw(TEXT.filter(lambda s: "\t" not in s)), draw(COLUMN)) for _ in range(ncols)]
    rows = draw(st.lists(st.lists(TEXT, min_size=ncols, max_size=ncols), max_size=6))
    boxed = draw(st.booleans())
    options = {
        "show_header": True if boxed else draw(st.booleans()),
        "pad_edge": draw(st.booleans()),
        "title": draw(st.one_of(st.none(), TEXT)),
        "caption": draw(st.one_of(st.none(), TEXT)),
        "title_justify": draw(st.sampled_from(["left", "center", "right"])),
        "caption_justify": draw(st.sampled_from(["left", "center", "right"])),
    }
    return columns, rows, boxed, options


def both(columns, rows, boxed, options):
    mine = plain.Table(**options, **({} if boxed else {"box": None}))
    theirs = RichTable(**options, **({} if boxed else {"box": None}))
    for header, kw in columns:
        mine.add_column(header, **kw)
        theirs.add_column(header, **kw)
    for row in rows:
        mine.add_row(*(plain.Text(c) for c in row))
        theirs.add_row(*(RichText(c) for c in row))
    return mine, theirs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=tables(), width=st.integers(min_value=30, max_value=160))
def test_a_table_is_laid_out_as_rich_lays_it_out(table, width):
    mine, theirs = both(*table)
    assert plain_bytes(width, mine) == rich_bytes(width, theirs)


def test_the_reports_tables_as_rich():
    """The two tables `info` prints, with strings from traces that wrap, fold and hold wide characters."""
    for width in (40, 57, 80, 200):
        grid = both([("", {"style": "bold"}), ("", {"overflow": "fold"})],
                    [["file", "/tmp/" + "very_long_directory_name/" * 4 + "trace.json.gz"],
                     ["GPU", "NVIDIA H100 80GB HBM3  [NVIDIA]"], ["device", "漢字 " * 30]],
                    False, {"show_header": False, "pad_edge": False})
        assert plain_bytes(width, grid[0]) == rich_bytes(width, grid[1])
        ops = both([("operation", {}), ("kernels", {"justify": "right"}), ("GPU time", {"justify": "right"}),
                    ("share", {"justify": "right"})],
                   [["Triton Fused " * 5, "132,344", "2.75s", "51.4%"], ["Attention (decode)", "7", "1.00µs", "0.0%"]],
                   True, {"title": "top operations", "title_justify": "left"})
        assert plain_bytes(width, ops[0]) == rich_bytes(width, ops[1])


@pytest.mark.parametrize("env,isatty,plain_out", [
    ({}, False, True), ({}, True, False),
    ({"FORCE_COLOR": "1"}, False, False), ({"FORCE_COLOR": ""}, True, True),
    ({"TTY_COMPATIBLE": "0"}, True, True), ({"TTY_COMPATIBLE": "1"}, False, False),
])
def test_plain_where_rich_would_print_no_styles(monkeypatch, env, isatty, plain_out):
    for k in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)

    class Stream(io.StringIO):
        encoding = "utf-8"

        def isatty(self):
            return isatty

    s = Stream()
    assert plain.shows_no_styles(s) is plain_out
    assert (RichConsole(file=s).color_system is None) is plain_out


def test_not_utf8_is_left_to_rich():
    class Latin(io.StringIO):
        encoding = "latin-1"
    assert not plain.shows_no_styles(Latin())   # Rich draws an ASCII box there


@pytest.mark.parametrize("columns", [None, "0", "47", "200", "x"])
def test_the_width_is_rich_width(monkeypatch, columns):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert plain.console_width() == RichConsole(file=io.StringIO()).width


# --- `info` of real traces, drawn both ways ----------------------------------------------------------

SMALL = ["a100_triton_example.json.gz", "mi300x_vllm_gptoss_decode.json.gz"]
ALL = sorted(p.name for p in TRACES.glob("*.json.gz")) if TRACES.is_dir() else []


def info_text(monkeypatch, capsys, trace: Path, width: int, rich: bool) -> str:
    from kerneldiff.cli import main as cli_main

    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setattr(plain, "shows_no_styles", lambda stream: not rich)
    cli_main.main(["info", str(trace)])
    out = capsys.readouterr().out
    return re.sub(r"loaded in\s+[0-9.]+\s+s", "loaded in T s", out)   # a timing: differs run to run


def check_info(monkeypatch, capsys, tmp_path, name):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))   # the second draw reads the first's load
    for width in (40, 80, 137):
        mine = info_text(monkeypatch, capsys, TRACES / name, width, rich=False)
        theirs = info_text(monkeypatch, capsys, TRACES / name, width, rich=True)
        assert mine == theirs, (name, width)
        assert "top operations" in mine or "kernels 0" in mine


@pytest.mark.skipif(not TRACES.is_dir(), reason="needs ../shared/traces")
@pytest.mark.parametrize("name", SMALL)
def test_info_of_a_real_trace_is_rich_bytes(monkeypatch, capsys, tmp_path, name):
    check_info(monkeypatch, capsys, tmp_path, name)


@pytest.mark.slow
@pytest.mark.skipif(not TRACES.is_dir(), reason="needs ../shared/traces")
@pytest.mark.parametrize("name", [n for n in ALL if n not in SMALL])
def test_info_of_every_real_trace_is_rich_bytes(monkeypatch, capsys, tmp_path, name):
    check_info(monkeypatch, capsys, tmp_path, name)
