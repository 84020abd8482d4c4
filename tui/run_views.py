"""What the runs screen (kerneldiff.tui.screens.runs) shows of two runs of rank traces: the ranks of
both runs side by side (slowest first), their collectives (kind × size, A against B), and the runs'
stragglers and notes in a few lines above them. It renders `kerneldiff.core.ranks.run.RunFindings`;
no analysis here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Group
from rich.text import Text

from kerneldiff.core.report import format as fmt
from kerneldiff.core.report.run_report import gbps, ranks_slowest_first, size, where_cell

from .text import DIM, SIDE_LETTER, SIDE_STYLE, literal, span
from .views import gap_sort, name_sort, searchable, time_sort
from .widgets.result_table import Column, Row, Sort, TableSpec

RUN_TABS = (("ranks", "Ranks"), ("collectives", "Collectives"))


@dataclass(frozen=True)
class RunsView:
    """The explorer's result for two runs (its type picks the runs screen): the runs' findings,
    made before the explorer opens (every rank summarised), and the ranks of both runs, slowest first."""

    found: Any
    rows: list[tuple[str, dict]]     # (run key, rank row)

    @classmethod
    def of(cls, found) -> RunsView:
        return cls(found, rank_rows(found))


def _num(s: str, style: str = "") -> Text:
    return span(s, style, "right")


def _us(x) -> str:
    return fmt.ABSENT if x is None else fmt.us(x)


def rank_rows(found) -> list[tuple[str, dict]]:
    """(run key, rank row) of both runs, slowest first."""
    return ranks_slowest_first(found)


RANK_FIGURES = (("wall", "wall", "wall_us"), ("busy", "busy", "busy_us"), ("compute", "compute", "compute_us"),
                ("comm", "comm", "comm_us"), ("exposed", "exposed comm", "exposed_comm_us"), ("idle", "idle", "idle_us"))


def ranks_spec(found) -> TableSpec:
    rows = rank_rows(found)
    files = [r.file.replace("\\", "/").rsplit("/", 1)[-1] for _k, r in rows]
    cols = [Column("run", "run", "text", 3), Column("rank", "rank", "int", 5),
            *(Column(key, label, "us", max(9, len(label))) for key, label, _f in RANK_FIGURES),
            Column("collectives", "coll.", "int", 6),
            Column("file", "file", "name", min_width=12, max_width=max((len(f) for f in files), default=12))]

    def build(w: dict[str, int]) -> list[Row]:
        out = []
        for (k, r), name in zip(rows, files):
            figs = [getattr(r, f) for _k, _l, f in RANK_FIGURES]
            out.append(Row(f"{k}{r.rank}", (SIDE_LETTER[k], r.rank, *figs, r.collectives, name),
                           (span(SIDE_LETTER[k], f"bold {SIDE_STYLE[k]}"), _num(str(r.rank)),
                            *(_num(_us(x)) for x in figs), _num(f"{r.collectives:,}"),
                            literal(fmt_name(name, w.get("file", 12)))),
                           payload=(k, r), search=searchable(name) + f"\nrun {k}\nrank {r.rank}"))
        return out

    sorts = {"time": Sort("time", lambda r: r.values[2], ("wall",), True, "slowest rank first (largest wall clock)"),
             "name": name_sort(len(cols) - 1, "file"),
             "exposed": Sort("exposed", lambda r: r.values[6], ("exposed",), True, "most exposed communication first")}
    return TableSpec("ranks", cols, build, default_sort="time", sorts=sorts, fixed=2)


def fmt_name(name: str, width: int) -> str:
    return name if len(name) <= width else name[:max(width - 1, 1)] + "…"


def collectives_spec(found) -> TableSpec:
    items = list(found.collectives)
    where_w = max((len(where_cell(c)) for c in items), default=5)
    cols = [Column("kind", "kind", "name", min_width=10, max_width=max((len(c.kind) for c in items), default=10)),
            Column("size", "size", "num", 9),
            # `backward` whole (not `back…`) where it fits in ten cells; longer places share what is left
            Column("where", "where", "name", min_width=max(5, min(10, where_w)), max_width=where_w),
            Column("n", "n A/B", "text", 9),
            Column("a_total", "A time", "us", 9), Column("b_total", "B time", "us", 9),
            Column("a_wait", "A wait", "us", 9), Column("b_wait", "B wait", "us", 9),
            Column("a_exposed", "A exposed", "us", 9), Column("b_exposed", "B exposed", "us", 9),
            Column("a_busbw", "A busbw", "num", 12), Column("b_busbw", "B busbw", "num", 12),
            Column("a_skew", "A skew", "us", 9), Column("b_skew", "B skew", "us", 9), Column("gap", "gap", "gap", 10)]

    def get(side, key):
        return getattr(side, key) if side is not None else None

    def build(w: dict[str, int]) -> list[Row]:
        out = []
        for i, c in enumerate(items):
            a, b = c.a, c.b
            vals = (c.kind, c.nbytes if c.nbytes >= 0 else None, where_cell(c), f"{a.count if a else 0}/{b.count if b else 0}",
                    get(a, "total_us"), get(b, "total_us"), get(a, "wait_us"), get(b, "wait_us"),
                    get(a, "exposed_us"), get(b, "exposed_us"),
                    get(a, "busbw_gbps"), get(b, "busbw_gbps"), get(a, "skew_p50_us"), get(b, "skew_p50_us"), c.gap_us)
            side = "a" if c.gap_us > 0 else "b" if c.gap_us < 0 else None
            cells = (literal(fmt_name(c.kind, w.get("kind", 10))), _num(size(c.nbytes)),
                     literal(fmt_name(vals[2], w.get("where", 5))), _num(vals[3]),
                     *(_num(_us(x)) for x in vals[4:10]),
                     _num(gbps(vals[10], get(a, "pct_link_peak"))), _num(gbps(vals[11], get(b, "pct_link_peak"))),
                     _num(_us(vals[12])), _num(_us(vals[13])),
                     _num(fmt.gap(c.gap_us), f"bold {SIDE_STYLE[side]}" if side else DIM))
            algo = " ".join(x for x in {get(a, "algorithm") or "", get(b, "algorithm") or "",
                                        get(a, "dtype") or "", get(b, "dtype") or ""} if x)
            out.append(Row(f"c{i}", vals, cells, payload=c, search=searchable(c.kind, vals[2], algo)))
        return out

    sorts = {"gap": gap_sort(14), "time": time_sort((4, 5), ("a_total", "b_total")), "name": name_sort(0, "kind")}
    # kind and size stay when the table scrolls sideways: the row's identity
    return TableSpec("collectives", cols, build, default_sort="gap", sorts=sorts, fixed=2)


HEAD_LINES = 5          # at 80×24: the tables keep the rest
TABLE_LINES = 19        # the lines the screen keeps below the head (tabs, a table, the footer)


TABLE_FRAME = 9         # the lines around a table's rows: crumb, tabs, hint (two), header, footer, margin


def head_lines(height: int, rows: int | None = None) -> int:
    """The head's lines on a screen `height` rows high: 5 at 24 rows, more where there is room,
    and the room the tables leave when their `rows` are fewer than the screen holds (two runs of
    two ranks at 80×24: the notes rather than eight empty rows)."""
    room = height - TABLE_FRAME - rows if rows is not None else 0
    return max(HEAD_LINES, height - TABLE_LINES, room)


def runs_head(found, max_lines: int = HEAD_LINES) -> Group:
    """The runs in a few lines, one line each (cut with … at the width; the full text is in
    `kerneldiff compare RUN_A RUN_B`): each run, the stragglers, the notes."""
    rep = found.representative
    lines = []
    for key in ("a", "b"):
        sp = found.spread[key]
        t = span(f"{SIDE_LETTER[key]}", f"bold {SIDE_STYLE[key]}")
        t.append_text(literal(f" {sp.ranks} rank{'s' if sp.ranks != 1 else ''} ({found.rank_source[key]}) · "
                              f"representative rank {rep.side(key)} · wall {fmt.us(sp.wall_min_us)}…"
                              f"{fmt.us(sp.wall_max_us)} · exposed comm {fmt.us(sp.exposed_comm_min_us)}…"
                              f"{fmt.us(sp.exposed_comm_max_us)}"))
        lines.append(t)
    for key, st in found.stragglers.items():
        if st is not None:
            t = span(f"{SIDE_LETTER[key]}", f"bold {SIDE_STYLE[key]}")
            t.append(f" straggler: rank {st.rank}, last at {st.last} of {st.collectives} collectives, "
                     f"{fmt.us(st.late_us)} late; compute before {fmt.us(st.compute_before_us)} against "
                     f"{fmt.us(st.others_compute_before_us)}")
            lines.append(t)
    notes = [Text.assemble(("note: ", "yellow"), literal(n)) for n in found.notes]
    room = max_lines - len(lines)
    if len(notes) > room:
        notes = notes[:max(room - 1, 0)] + [span(f"{len(notes) - max(room - 1, 0)} more notes: "
                                                 f"kerneldiff compare RUN_A RUN_B prints them", DIM)]
    lines += notes
    for t in lines:
        t.no_wrap, t.overflow = True, "ellipsis"
    return Group(*lines)


def export_rows(found, table) -> tuple[list[str], list[list]]:
    """(head, rows) of `table` (the Ranks or the Collectives) as shown, filtered and ordered, in the
    CLI's `--table ranks|collectives` schema."""
    from kerneldiff.core.report.run_tables import run_table

    head, rows = run_table(found, table.spec.name)
    if table.spec.name == "ranks":
        by = {(side, r.rank): row for side, r, row in
              zip([s for s in ("a", "b") for _ in found.ranks[s]], [r for s in ("a", "b") for r in found.ranks[s]],
                  rows)}
        shown = [by[(k, r.rank)] for k, r in (x.payload for x in table.rows_shown)]
    else:
        by = {id(c): row for c, row in zip(found.collectives, rows)}
        shown = [by[id(x.payload)] for x in table.rows_shown]
    return head, [[None if v == "" else v for v in r] for r in shown]
