"""`compare --format html`: one self-contained page whose numbers are the text report's, every trace
string inert, drawn to the passes' scale; checked on the demo pair and a real cross-vendor pair, and
(when Chromium is installed) rendered by a real browser at a phone's and a desktop's width."""

from __future__ import annotations

import dataclasses
import io
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from rich.console import Console

from kerneldiff.cli.text_report import render_text
from kerneldiff.cli.main import main
from kerneldiff.core.compare.engine import compare
from kerneldiff.core.compare.result import Comparability, LedgerEntry
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.report import format as fmt
from kerneldiff.core.report import labels
from kerneldiff.core.report.html import esc, render_html
from kerneldiff.core.session import Session

from conftest import real_trace

A, B = str(DEMO_A), str(DEMO_B)


@pytest.fixture(scope="module")
def demo_session(demo_models):
    s = Session([A, B], use_cache=False)
    s.models = [demo_models[A], demo_models[B]]
    return s


@pytest.fixture(scope="module")
def demo_cmp(demo_session):
    """The demo comparison, computed once (tests change copies: dataclasses.replace)."""
    return demo_session.compare()


@pytest.fixture(scope="module")
def qwen_session():
    s = Session([str(real_trace("mi300x_qwen1.5-0.5b_hf.json.gz")), str(real_trace("h100_qwen1.5-0.5b_hf.json.gz"))],
                use_cache=False)
    s.load_all()
    return s


def _page(session, cmp) -> str:
    n = cmp.gap_pass()
    return render_html(cmp, session.pass_pairs(cmp, [n]) if n is not None else None)


def _text(cmp) -> str:
    out = Console(file=io.StringIO(), width=200, color_system=None, highlight=False, markup=False, emoji=False)
    render_text(cmp, out)
    return out.file.getvalue()


class _Tags(HTMLParser):
    """The page's tags and the text inside <script> (what a browser would run)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in_script = tag == "script"
        for k, v in attrs:
            assert not k.startswith("on"), f"an event handler attribute {k}={v!r}"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def _self_contained(page: str) -> None:
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page), "a resource from the network"
    assert "@import" not in page and "url(" not in page and "<link" not in page and "<iframe" not in page
    p = _Tags()
    p.feed(page)
    assert p.tags.count("script") == 1 and p.tags.count("style") == 1
    assert "fetch(" not in "".join(p.scripts) and "XMLHttpRequest" not in "".join(p.scripts)


def _same_numbers(cmp, page: str, text: str) -> int:
    """Figures the text report prints appear in the page, written the same; returns how many."""
    w = cmp.wall
    figures = [fmt.ratio(cmp.ratio), fmt.gap(cmp.gap_us), fmt.ratio(w.wall_ratio), fmt.gap(w.wall_gap_us),
               fmt.us(w.a_wall_us), fmt.us(w.b_wall_us), fmt.us(cmp.a.gpu_time_us), fmt.us(cmp.b.gpu_time_us)]
    for o in cmp.operations[:8]:
        figures += [fmt.us(x) for x in labels.operation_times(cmp, o)] + [fmt.ratio(o.ratio), fmt.gap(o.gap_us)]
    for l in cmp.layers[:5]:
        figures += [fmt.us(l.a.total_us), fmt.us(l.b.total_us), fmt.ratio(l.ratio), fmt.gap(l.gap_us)]
    fusions, launch_counts = labels.fusions_and_launch_counts(cmp.fusions)
    for f in fusions[:5]:
        figures += [fmt.gap(f.measured_saving_us), labels.estimated_saving(f)]
    figures += [fmt.us(f.component_cost_us) for f in launch_counts]   # extra memsets: their time
    for e in cmp.ledger:
        figures += [fmt.gap(e.gap_us), fmt.us(e.a_us), fmt.us(e.b_us)]
    for g in cmp.gemm_shapes[:5]:
        figures += [labels.rate_cell(g.a), labels.rate_cell(g.b), labels.roof_cell(g.a), fmt.gap(g.gap_us)]
    figures = [f for f in figures if f != fmt.ABSENT]
    for f in figures:
        assert f in text, f"{f} not in the text report"
        assert _html_escape(f) in page, f"{f} not in the HTML report"
    return len(figures)


def _html_escape(s: str) -> str:
    import html

    return html.escape(s, quote=True)


def test_demo_page_is_self_contained_and_says_what_the_text_report_says(demo_session):
    cmp = demo_session.compare()
    page = _page(demo_session, cmp)
    _self_contained(page)
    assert _same_numbers(cmp, page, _text(cmp)) > 40
    assert cmp.ledger and cmp.comparability is not None
    for section in ("ledger", "layers", "operations", "fusion", "shapes", "timeline"):
        assert f'<section id="{section}">' in page
    assert esc(cmp.a.label) in page and esc(cmp.b.label) in page
    # every fusion finding, with each side's kernels named
    for f in cmp.fusions:
        assert esc(labels.fusion_what(f), 160) in page
        for k in f.fused_group + f.component_group:
            assert esc(labels.group_kernel(k), 200) in page
    # the pass drawn is the one with the largest wall-clock gap; its number is said
    assert f"Pass {cmp.gap_pass()} to scale" in page


@pytest.mark.slow
def test_real_cross_vendor_pair_numbers_equal_the_text_report(qwen_session):
    cmp = qwen_session.compare()
    page = _page(qwen_session, cmp)
    _self_contained(page)
    assert _same_numbers(cmp, page, _text(cmp)) > 40
    # 24 layers as paired bars, slowest first, then the kernels outside every layer
    order = [m.group(1) for m in re.finditer(r'<div class="lab">layer (\d+)', page)]
    assert order == [str(l.layer) for l in cmp.layers]
    # the one pass of each side drawn on one axis: both sides' lanes and a legend of categories
    assert page.count("busy/idle</div>") == 2 and '<div class="legend">' in page


def test_ledger_and_verdict_are_drawn_when_the_comparison_has_them(demo_session):
    """The ledger and the comparability verdict (issue 25) as the comparison will carry them: the
    waterfall ends at the wall-clock gap, every cause and reason is said, escaped."""
    cmp = dataclasses.replace(demo_session.compare())
    w = cmp.wall
    causes = [("kernel time", cmp.gap_us), ("launch-bound idle", w.launch_bound_gap_us),
              ("<b>other</b>", w.wall_gap_us - cmp.gap_us - w.launch_bound_gap_us)]
    cmp.ledger = [LedgerEntry(cause=c, a_us=1.0, b_us=2.0, gap_us=g, detail="why & how") for c, g in causes]
    cmp.comparability = Comparability(verdict="partly", reasons=["different GPUs <script>x</script>"])
    page = render_html(cmp)
    assert '<section id="ledger">' in page and 'class="verdict partly"' in page
    for c, g in causes:
        assert esc(c) in page and fmt.gap(g) in page
    assert "&lt;b&gt;other&lt;/b&gt;" in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert f"<b class=\"lose-a\">{fmt.gap(w.wall_gap_us)}</b>" in page or f"<b class=\"lose-b\">{fmt.gap(w.wall_gap_us)}</b>" in page
    _self_contained(page)


def test_mirrored_comparison_paints_the_same_rows_for_the_other_side(demo_models):
    """compare B A: the same figures, gaps negated, the colour of each gap the side that loses it."""
    ab = compare(demo_models[A], demo_models[B])
    ba = compare(demo_models[B], demo_models[A])
    pa, pb = render_html(ab), render_html(ba)
    assert pa.count('class="num lose-a"') == pb.count('class="num lose-b"')
    assert pa.count('class="num lose-b"') == pb.count('class="num lose-a"')
    assert fmt.gap(ab.gap_us) in pa and fmt.gap(ba.gap_us) in pb and fmt.gap(-ab.gap_us) == fmt.gap(ba.gap_us)


HOSTILE = st.text(alphabet=st.sampled_from(list("<>&\"'`/\\|=;:") + ["\x00", "\x1b", "\u202e", "\n", "\r", "\u2028",
                                                                   "a", "Z", "9", " ", "é", "\ud800"]),
                  min_size=1, max_size=60)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=HOSTILE)
def test_any_trace_string_stays_text(demo_cmp, name):
    """Labels, operation and kernel names, evidence and warnings hold anything a trace can: the page
    keeps exactly its own one script and style, no control character, nothing a browser would run."""
    cmp = dataclasses.replace(demo_cmp)
    cmp.a = dataclasses.replace(cmp.a, label=name + "<script>alert(1)</script>", path="/t/" + name)
    cmp.operations = [dataclasses.replace(o, category=name) for o in cmp.operations]
    cmp.fusions = [dataclasses.replace(f, evidence=name, fused_category=name) for f in cmp.fusions]
    cmp.warnings = [name, "</style><script>x()</script>"]
    page = render_html(cmp)
    p = _Tags()
    p.feed(page)
    assert p.tags.count("script") == 1 and p.tags.count("style") == 1 and "img" not in p.tags
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u202e]", page)
    assert esc(name, 40)[:5] in page


def test_ten_thousand_character_names_are_cut_in_cells(demo_session):
    cmp = dataclasses.replace(demo_session.compare())
    long = "k" * 10_000
    cmp.operations = [dataclasses.replace(o, category=long) for o in cmp.operations]
    cmp.warnings = []
    page = render_html(cmp)
    assert "k" * 2_100 not in page          # cells and titles are cut, the page stays small
    assert len(page) < len(render_html(demo_session.compare())) + 200 * len(cmp.operations) + 20_000


def test_cli_writes_html_and_refuses_what_it_cannot_draw(tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["compare", A, B, "--format", "html", "-o", str(out), "--no-cache", "--pass", "2"]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "Pass 2 to scale" in page
    capsys.readouterr()
    assert main(["compare", A, B, "--format", "html", "--pass", "1-2", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "draws one pass" in err
    assert main(["compare", A, B, "--format", "html", "--table", "layers", "--no-cache"]) == 2
    assert main(["compare", A, B, "--format", "text", "--pass", "1", "--no-cache"]) == 2
    assert "--pass picks passes" in capsys.readouterr().err


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium to render the page")
@pytest.mark.parametrize("width", [412, 1400])
def test_a_real_browser_renders_the_page_at_phone_and_desktop_width(demo_session, tmp_path, width):
    page = tmp_path / "report.html"
    page.write_text(_page(demo_session, demo_session.compare()), encoding="utf-8")
    png = tmp_path / f"report-{width}.png"
    run = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          "--enable-logging=stderr", "--v=0", f"--screenshot={png}", f"--window-size={width},1600",
                          page.as_uri()], capture_output=True, text=True, timeout=120)
    assert png.exists() and png.stat().st_size > 10_000, run.stderr[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Uncaught" not in run.stderr, run.stderr[-2000:]     # the sorting script runs without error


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium to run the page's script")
def test_clicking_a_column_head_sorts_the_table_in_a_real_browser(demo_session, tmp_path):
    """The page's own script, run by Chromium: one click on "A total" orders the operations by it,
    largest first; a second click, smallest first. (The clicks are a script appended to a copy.)"""
    page = _page(demo_session, demo_session.compare())
    probe = ("<script>var th=document.querySelectorAll('#t-operations th')[1];th.click();"
             "document.body.dataset.first=[].map.call(document.querySelectorAll('#t-operations tbody tr'),"
             "function(r){return r.cells[1].dataset.v}).join(',');th.click();"
             "document.body.dataset.second=[].map.call(document.querySelectorAll('#t-operations tbody tr'),"
             "function(r){return r.cells[1].dataset.v}).join(',');</script></body>")
    f = tmp_path / "probe.html"
    f.write_text(page.replace("</body>", probe, 1), encoding="utf-8")
    run = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", f.as_uri()],
                         capture_output=True, text=True, timeout=120)
    first = [float(v) for v in re.search(r'data-first="([^"]*)"', run.stdout).group(1).split(",")]
    second = [float(v) for v in re.search(r'data-second="([^"]*)"', run.stdout).group(1).split(",")]
    assert first == sorted(first, reverse=True) and second == sorted(second) and len(first) > 5
