"""Explorer building blocks without a terminal: literal text, formatting, bars, export."""

from __future__ import annotations

import csv
import json

from rich.text import Text

from kerneldiff.tui.export import write_table
from kerneldiff.tui.text import clean, fmt_gap, fmt_ratio, fmt_us, literal, shorten, two_bars


def test_literal_escapes_controls_and_ignores_markup():
    s = "evil\x1b[31m[bold]red[/bold]\x07\n\u202eend"
    t = literal(s)
    assert isinstance(t, Text)
    assert "\x1b" not in t.plain and "\x07" not in t.plain and "\u202e" not in t.plain
    assert "\\x1b" in t.plain and "\\x07" in t.plain and "\\n" in t.plain and "\\u202e" in t.plain
    assert "[bold]red[/bold]" in t.plain  # markup stays text
    assert not t.spans  # and styles nothing
    assert clean("plain name<int, 4>") == "plain name<int, 4>"


def test_literal_style_covers_only_its_own_text():
    t = literal("A", "bold")
    t.append(" rest")
    assert t.style == "" and t.spans[0].end == 1


def test_shorten_fits_width_and_keeps_short_names():
    long = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int)"
    for w in (8, 14, 30):
        assert len(shorten(long, w)) <= w
    assert shorten("nvjet_hsh_128x64", 30) == "nvjet_hsh_128x64"
    assert "\x1b" not in shorten("k\x1bname", 30)


def test_number_formats():
    assert fmt_us(812.34) == "812.3µs"
    assert fmt_us(12_340.0) == "12.34ms"
    assert fmt_us(2_500_000.0) == "2.50s"
    assert fmt_us(None) == "—"
    assert fmt_gap(1500.0).startswith("+") and fmt_gap(-1500.0).startswith("−")
    assert fmt_ratio(None) == "—" and fmt_ratio(1.234) == "1.23×"


def test_two_bars_read_without_colour():
    t = two_bars(10.0, 5.0, 10.0, 10)
    assert t.plain == "█" * 5 + "▀" * 5           # B reaches half way, A all the way
    t = two_bars(2.0, 8.0, 10.0, 10)
    assert t.plain == "█" * 2 + "▄" * 6 + " " * 2
    assert two_bars(1.0, 1.0, 0.0, 4).plain == "    "


def test_export_csv_quotes_template_names_and_never_overwrites(tmp_path):
    header = ["name", "a_total_us", "ratio"]
    rows = [["void k<int, 4>(float, int)", 12.5, None], ["plain", 3.0, 1.5]]
    p1 = write_table("layer 3/pairs", header, rows, "csv", directory=tmp_path)
    p2 = write_table("layer 3/pairs", header, rows, "csv", directory=tmp_path)
    assert p1 != p2 and p1.exists() and p2.exists()
    assert "/" not in p1.name.removeprefix("kerneldiff-")
    back = list(csv.reader(p1.open()))
    assert back[0] == header
    assert back[1] == ["void k<int, 4>(float, int)", "12.5", ""]
    pj = write_table("pairs", header, rows, "json", directory=tmp_path)
    data = json.loads(pj.read_text())
    assert data[0]["name"] == rows[0][0] and data[0]["ratio"] is None and data[1]["ratio"] == 1.5
