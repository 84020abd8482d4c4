"""The explorer's first screen for runs of rank traces: the ranks of both runs side by side (slowest
first) and their collectives (kind × size, A against B), with the runs' stragglers and notes above
them. The tables filter (`/`), sort (`s`, `t`, `n`, `o`, `S`) and export (`e` CSV, `E` JSON, in the
CLI's `--table ranks|collectives` schema) like the other explorer tables; `?` lists the keys.

Enter on a rank ends this app with that rank chosen; the launcher then opens that rank's comparison
in the usual explorer, and comes back here when it is closed. It renders
`kerneldiff.core.ranks.run.RunFindings`; no analysis here."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import App
from textual.binding import Binding
from textual.widgets import Static

from kerneldiff.core.report import format as fmt
from kerneldiff.core.report.run_report import gbps, ranks_slowest_first, size, where_cell

from .screens.base import TabbedExplorerScreen
from .text import DIM, SIDE_LETTER, SIDE_STYLE, literal, span
from .views import gap_sort, name_sort, searchable, time_sort
from .widgets.result_table import Column, Row, Sort, TableSpec
from .widgets.table_pane import TablePane

RUN_TABS = (("ranks", "Ranks"), ("collectives", "Collectives"))


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
    files = [r["file"].replace("\\", "/").rsplit("/", 1)[-1] for _k, r in rows]
    cols = [Column("run", "run", "text", 3), Column("rank", "rank", "int", 5),
            *(Column(key, label, "us", max(9, len(label))) for key, label, _f in RANK_FIGURES),
            Column("collectives", "coll.", "int", 6),
            Column("file", "file", "name", min_width=12, max_width=max((len(f) for f in files), default=12))]

    def build(w: dict[str, int]) -> list[Row]:
        out = []
        for (k, r), name in zip(rows, files):
            figs = [r[f] for _k, _l, f in RANK_FIGURES]
            out.append(Row(f"{k}{r['rank']}", (SIDE_LETTER[k], r["rank"], *figs, r["collectives"], name),
                           (span(SIDE_LETTER[k], f"bold {SIDE_STYLE[k]}"), _num(str(r["rank"])),
                            *(_num(_us(x)) for x in figs), _num(f"{r['collectives']:,}"),
                            literal(fmt_name(name, w.get("file", 12)))),
                           payload=(k, r), search=searchable(name) + f"\nrun {k}\nrank {r['rank']}"))
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
                              f"representative rank {rep[key]} · wall {fmt.us(sp.wall_min_us)}…"
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


class RunsScreen(TabbedExplorerScreen):
    """Ranks and Collectives of two runs, in tabs (keys 1 and 2)."""

    BINDINGS = [Binding("1", "show_tab(0)", "Ranks", show=False, tooltip="Ranks tab: both runs' ranks, slowest first"),
                Binding("2", "show_tab(1)", "Collectives", show=False,
                        tooltip="Collectives tab: kind × message size, A against B"),
                Binding("x", "sort_named('exposed')", "By exposed comm", show=False,
                        tooltip="Ranks: sort by exposed communication, most first (again: reverse)")]
    tabs = RUN_TABS
    crumb_root = "runs"

    def __init__(self, found) -> None:
        super().__init__()
        self.found = found

    def _rows(self) -> int:
        """The rows of the taller table."""
        return max(len(rank_rows(self.found)), len(self.found.collectives))

    def _header(self) -> Static:
        return Static(runs_head(self.found, head_lines(self.app.size.height, self._rows())), id="runs-head")

    def on_resize(self, event) -> None:
        super().on_resize(event)
        for head in self.query("#runs-head"):
            head.update(runs_head(self.found, head_lines(self.app.size.height, self._rows())))

    def _pane(self, key: str) -> TablePane:
        if key == "ranks":
            rep = self.found.representative
            hint = (f"⏎ compares that rank with the other run's (same rank, else its slowest) · representative: "
                    f"A rank {rep['a']}, B rank {rep['b']} ({rep['how']})")
            return TablePane("ranks", hint=hint, id="pane-ranks", empty="no ranks")
        return TablePane("collectives", id="pane-collectives", empty="no collectives in either run",
                         hint="busbw GB/s (% of the link's peak) · wait: beyond the fastest rank's · skew: last start − "
                              "first (median) · gap: A − B of time per rank")

    def on_mount(self) -> None:
        self.query_one("#pane-ranks", TablePane).show(ranks_spec(self.found))
        self.query_one("#pane-collectives", TablePane).show(collectives_spec(self.found))
        self.call_after_refresh(self.focus_active_table)

    def open_row(self, table, row) -> bool:
        if table.id != "ranks":
            return False
        key, r = row.payload
        self.app.exit((key, int(r["rank"])))
        return True

    def action_sort_named(self, name: str) -> None:
        table = self.current_table()
        if name == "exposed" and (table is None or table.spec is None or "exposed" not in table.spec.sorts):
            self.notify("x sorts the Ranks table by exposed communication", timeout=2)
            return
        super().action_sort_named(name)

    def action_export(self, fmt: str = "csv") -> None:
        """The table as shown (filter and order), in the CLI's `--table` schema."""
        from kerneldiff.core.report.run_tables import run_table

        from .export import write_table
        from .messages import Exported

        table = self.current_table()
        if table is None or table.spec is None:
            return
        head, rows = run_table(self.found, table.spec.name)
        if table.spec.name == "ranks":
            by = {(side, r["rank"]): row for side, r, row in
                  zip([s for s in ("a", "b") for _ in self.found.ranks[s]],
                      [r for s in ("a", "b") for r in self.found.ranks[s]], rows)}
            shown = [by[(k, r["rank"])] for k, r in (x.payload for x in table.rows_shown)]
        else:
            by = {id(c): row for c, row in zip(self.found.collectives, rows)}
            shown = [by[id(x.payload)] for x in table.rows_shown]
        try:
            path = write_table(f"runs-{table.spec.name}", head, [[None if v == "" else v for v in r] for r in shown],
                               fmt)
        except OSError as e:
            self.notify(f"export failed: {e.strerror or e}", severity="error", markup=False)
            return
        self.post_message(Exported(path))
        self.notify(f"{len(shown)} rows → {path}", title="Exported", markup=False, timeout=6)


class RunsApp(App):
    """Ranks and Collectives of two runs; Enter on a rank returns ("a" | "b", rank)."""

    TITLE = "kerneldiff — runs"
    CSS_PATH = "app.tcss"     # the explorer's look (tables, tabs, focus marks)
    CSS = "#runs-head { height: auto; padding: 0 1; }"   # runs_head gives it its lines (head_lines)
    BINDINGS = [Binding("q", "quit", "Quit", tooltip="Quit kerneldiff"),
                Binding("question_mark", "help", "Help", key_display="?", tooltip="This list of keys")]

    def __init__(self, found) -> None:
        super().__init__()
        self.found = found
        self.rows = rank_rows(found)

    def get_default_screen(self) -> RunsScreen:
        return RunsScreen(self.found)

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(_runs_help())


def runs_binding_groups(app) -> list[tuple[str, list[tuple[str, str]]]]:
    """(context, [(keys, description)]) of the runs screen's keys."""
    from .screens.base import ExplorerScreen
    from .screens.help import _TABLE_ACTIONS, _TABLE_WORDS, HelpScreen, _bindings, binding_rows
    from .widgets.result_table import ResultTable

    table_bindings = _bindings(ResultTable)
    words = dict(_TABLE_WORDS, select_cursor="Ranks: compare that rank with the other run's in the usual explorer")
    return [
        ("Everywhere", binding_rows(app, _bindings(RunsApp))),
        ("Tables", binding_rows(app, table_bindings, words, _TABLE_ACTIONS)),
        ("Filter, sort, export", binding_rows(app, _bindings(ExplorerScreen))),
        ("Runs", binding_rows(app, _bindings(RunsScreen)) + [("tab", "Move focus: tab bar → table")]),
        ("Help", binding_rows(app, _bindings(HelpScreen))),
    ]


def _runs_help():
    from .screens.help import HelpScreen

    class RunsHelpScreen(HelpScreen):
        """`?` on the runs screen: its own keys."""

        def groups(self):
            return runs_binding_groups(self.app)

    return RunsHelpScreen()
