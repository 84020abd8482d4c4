"""Markdown, HTML and Perfetto reports of two runs of rank traces: the runs' part (ranks, collectives,
stragglers, notes) says what the JSON report says, and the representative ranks' report follows."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from conftest import real_trace
from kerneldiff.cli.main import main
from kerneldiff.core.report import format as fmt
from kerneldiff.core.synth.ranks import write_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs_reports")
    write_run(base / "a", ranks=4, passes=3, straggler=2, straggle_us=50, transfer_us=80, overlap_us=30)
    write_run(base / "b", ranks=4, passes=3, straggler=1, straggle_us=120, transfer_us=60, naming="vllm")
    return str(base / "a"), str(base / "b")


@pytest.fixture(scope="module")
def doc(runs):
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["compare", *runs, "--format", "json", "--no-cache"]) == 0
    return json.loads(buf.getvalue())


class _Tables(HTMLParser):
    """Rows (lists of cell texts) of every table by id, section ids, and any external reference."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.sections: list[str] = []
        self.external: list[str] = []
        self._table = None
        self._row = None
        self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("src", "href"):
            if a.get(k, "").startswith(("http:", "https:", "//")):
                self.external.append(a[k])
        if tag == "section":
            self.sections.append(a.get("id", ""))
        elif tag == "table":
            self._table = self.tables.setdefault(a.get("id", ""), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def test_markdown_holds_the_runs_then_the_representative_ranks(runs, doc, capsys):
    assert main(["compare", *runs, "--format", "markdown", "--no-cache"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("### kerneldiff: two runs of rank traces")
    rank_rows = [l for l in md.splitlines() if re.match(r"\| [AB] \| \d+\*? \|", l)]
    assert len(rank_rows) == 8
    # the slowest first, with the JSON's figures in the text report's format; the straggler marked
    walls = sorted(((r["wall_us"], k, r["rank"]) for k in "ab" for r in doc["ranks"][k]), key=lambda x: -x[0])
    mark = {k: (doc["stragglers"][k] or {}).get("rank") for k in "ab"}
    first = f"{walls[0][2]}{'*' if mark[walls[0][1]] == walls[0][2] else ''}"
    assert rank_rows[0].startswith(f"| {walls[0][1].upper()} | {first} | {fmt.us(walls[0][0])} |")
    marked = [l for l in rank_rows if re.match(r"\| [AB] \| \d+\* \|", l)]
    assert sorted(l[2] for l in marked) == sorted(k.upper() for k in "ab" if mark[k] is not None)
    (c,) = doc["collectives"]
    row = next(l for l in md.splitlines() if l.startswith("| all\\_reduce"))
    assert fmt.us(c["a"]["total_us"]) in row and fmt.us(c["b"]["wait_us"]) in row and fmt.gap(c["gap_us"]) in row
    assert "A straggler: rank 2" in md and "B straggler: rank 1" in md
    assert "Where the wall-clock gap goes" in md       # the representative ranks' report follows


def test_html_is_one_page_with_ranks_collectives_and_the_representative_ranks(runs, doc, tmp_path):
    out = tmp_path / "runs.html"
    assert main(["compare", *runs, "--format", "html", "--no-cache", "-o", str(out)]) == 0
    p = _Tables()
    p.feed(out.read_text(encoding="utf-8"))
    assert not p.external
    assert p.sections[:4] == ["ranks", "collectives", "stragglers", "representative"] and "ledger" in p.sections
    ranks = p.tables["t-ranks"][1:]
    assert len(ranks) == 8
    by = {(r[0].strip(), int(r[1])): r for r in ranks}
    for k in "ab":
        for r in doc["ranks"][k]:
            row = by[(k.upper(), r["rank"])]
            assert row[2:8] == [fmt.us(r[x]) for x in ("wall_us", "busy_us", "compute_us", "comm_us",
                                                      "exposed_comm_us", "idle_us")]
    (c,) = doc["collectives"]
    (crow,) = p.tables["t-collectives"][1:]
    assert crow[0] == "all_reduce" and crow[4] == fmt.us(c["a"]["total_us"]) and crow[-1] == fmt.gap(c["gap_us"])


def test_perfetto_is_the_representative_ranks_read_back(runs, doc, tmp_path):
    out = tmp_path / "runs.json"
    assert main(["compare", *runs, "--format", "perfetto", "--no-cache", "-o", str(out)]) == 0
    ev = json.loads(out.read_text())
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    kernels = {1: 0, 2: 0}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") != "pass" and e["pid"] in kernels:
            kernels[e["pid"]] += 1
    assert kernels == {1: doc["a"]["kernels"], 2: doc["b"]["kernels"]}
    names = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
    assert not any(n.startswith("A: A:") or n.startswith("B: B:") for n in names.values())
    # every rank's collectives on the same axis: the representative rank's track lies exactly on its
    # own collective kernels in the pair's process
    for key, pid, base in (("a", 1, 1000), ("b", 2, 2000)):
        rep = doc["runs"]["representative"][key]
        for r in doc["ranks"][key]:
            assert names[base + r["rank"]] == f"{key.upper()} rank {r['rank']}: collectives"
            track = [e for e in ev if e.get("ph") == "X" and e["pid"] == base + r["rank"]]
            assert len(track) == r["collectives"]
        mine = sorted((e["ts"], e["dur"]) for e in ev if e.get("ph") == "X" and e["pid"] == base + rep)
        kernels = sorted((e["ts"], e["dur"]) for e in ev if e.get("ph") == "X" and e["pid"] == pid
                         and e.get("cat") == "All-Reduce")
        assert mine == kernels
    other = (json.loads(out.read_text()))["otherData"]["rank_collectives"]
    assert other["outside_the_drawn_passes"] == {"a": 0, "b": 0} and other["placed"]["a"] == 4 * 12


@pytest.mark.slow
def test_report_flags_on_runs(runs, capsys, tmp_path):
    assert main(["compare", *runs, "--format", "markdown", "--table", "ranks", "--no-cache"]) == 2
    assert main(["compare", *runs, "--format", "markdown", "--pass", "1", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(e.startswith("kerneldiff: ") for e in err)
    assert main(["compare", *runs, "--format", "html", "--pass", "1-2", "--no-cache", "-o",
                 str(tmp_path / "x.html")]) == 2
    assert "draws one pass" in capsys.readouterr().err
    assert main(["compare", *runs, "--format", "html", "--pass", "2", "--no-cache", "-o",
                 str(tmp_path / "x.html")]) == 0


def test_a_phase_the_runs_lack_is_one_line(runs, capsys):
    assert main(["compare", *runs, "--phase", "decode", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "phase 'decode' is absent" in err[0]


@pytest.mark.slow
def test_real_two_rank_run_in_html_and_markdown(tmp_path, capsys):
    hta = str(real_trace("hta_two_ranks"))
    assert main(["compare", hta, hta, "--format", "markdown", "--no-cache"]) == 0
    md = capsys.readouterr().out
    assert "2 ranks (ranks from distributedInfo)" in md and "A straggler: rank 1" in md
    out = tmp_path / "hta.html"
    assert main(["compare", hta, hta, "--format", "html", "--no-cache", "-o", str(out)]) == 0
    p = _Tables()
    p.feed(out.read_text(encoding="utf-8"))
    assert len(p.tables["t-ranks"]) == 5 and len(p.tables["t-collectives"]) > 1
