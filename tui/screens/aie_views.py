"""AIE analysis results → explorer table specs, header and detail text. Presentation only: every
number was computed by kerneldiff.core.aie.analysis (analyze_aie / compare_aie); this module formats and lays it out.

Absent figures show as "-" (GMAC/s without a GEMM shape, a side with no iteration). Tile names,
process names, file names and notes come from the trace and always go through `literal()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from kerneldiff.core.session import AieResult, AieSettings
from kerneldiff.core.report import format as fmt

from ..text import DIM, SIDE_LETTER, SIDE_STYLE, clean, literal, span
from ..widgets.result_table import Column, Row, TableSpec

ABSENT = fmt.ABSENT
PHASE_STYLE = {"warmup": DIM, "perf": "", "extra": "yellow"}
NOTE_STYLE = "bold yellow"
# comparison metrics that are fractions (shown as %) rather than counts or cycles
_FRACTION_METRICS = ("core busy fraction", "fraction of array peak")
SHAPE_METRIC = "GEMM / tiling"


@dataclass
class AieView:
    """What the AIE screens show: one run, or two runs and their comparison (an `AieResult` of the
    session, `AieView.of`)."""

    runs: list[Any]                  # kerneldiff.core.aie.analysis.AieRun, one or two
    settings: AieSettings
    comparison: Any = None           # kerneldiff.core.aie.analysis.AieComparison when two runs

    @classmethod
    def of(cls, result: AieResult) -> "AieView":
        return cls(result.runs, result.settings, result.comparison)

    @property
    def compare(self) -> bool:
        return len(self.runs) == 2

    def side(self, index: int) -> str:
        return "a" if index == 0 else "b"

    def who(self, index: int, tile: str | None = None) -> str:
        """How a note or row names its run and core: "tile0,2", or "A tile0,2" in a comparison."""
        parts = [SIDE_LETTER[self.side(index)]] if self.compare else []
        if tile:
            parts.append(tile)
        return " ".join(parts) or "trace"

    def notes(self) -> list[tuple[str, str]]:
        """(where, note) for every note of the analysis: run, cores, system, comparison."""
        out: list[tuple[str, str]] = []
        for i, run in enumerate(self.runs):
            out += [(self.who(i), n) for n in run.notes]
            out += [(self.who(i, c.tile), n) for c in run.cores for n in c.notes]
            out += [(self.who(i, "system"), n) for n in run.aggregate.notes]
        if self.comparison is not None:
            out += [("compare", n) for n in self.comparison.notes]
        return out


# --- formatting -------------------------------------------------------------------------------

fmt_cycles = fmt.cycles
fmt_num = fmt.num
fmt_frac = fmt.pct
fmt_times = fmt.ratio


def clip(s: str, width: int) -> str:
    """Fit trace text into a cell: controls escaped, cut with an ellipsis (no kernel-name shortening:
    tiles and notes are not C++ names)."""
    s = clean(s)
    return s if len(s) <= width else s[: max(width - 1, 0)] + "…"


def _num(s: str, style: str = "") -> Text:
    return span(s, style, "right")


def side_cell(view: AieView, index: int) -> Text:
    side = view.side(index)
    return span(SIDE_LETTER[side], f"bold {SIDE_STYLE[side]}")


def _run_col(view: AieView) -> list[Column]:
    return [Column("run", "", "text", 1)] if view.compare else []  # A/B: one letter


def _iters_text(core) -> Text:
    """detected/expected; a "!" marks a mismatch so it reads without colour too."""
    s = fmt.iterations(core.detected_iterations, core.expected_iterations)
    if core.mismatch:
        return span(s + "!", NOTE_STYLE, "right")
    return _num(s)


perf_window = fmt.perf_window


# --- header -----------------------------------------------------------------------------------

def shape_text(settings: AieSettings) -> Text:
    if settings.shape is None:
        return span("no GEMM shape: GMAC/s shown as - (give --M --K --N --rows --cols)", "yellow")
    s = settings.shape
    return Text(f"GEMM {s.M}×{s.K}×{s.N} on {s.rows}×{s.cols} cores")


def settings_text(settings: AieSettings) -> Text:
    perf = "all" if settings.iterations is None else str(settings.iterations)
    return span(f"{settings.params.clock_mhz:g} MHz · warm-up {settings.warmup} · perf {perf}", DIM)


def _notes_badge(n: int) -> Text:
    return span(f"⚠ {n} note{'s' if n != 1 else ''}", "bold yellow" if n else DIM)


def _system_line(run) -> Text:
    agg = run.aggregate
    if not agg.per_iteration:
        return span("no perf iteration on every core (see Notes)", "yellow")
    t = Text(f"{fmt_cycles(agg.mean_runtime_cycles)} cyc · {fmt_num(agg.mean_runtime_us)} µs · "
             f"{fmt_num(agg.mean_gmacs)} GMAC/s")
    return t


def header_text(view: AieView) -> Text:
    """Three lines: what is shown, how it was analysed, the system result (or both runs). File names
    come last on their line: the header clips long lines, and the figures matter more."""
    runs = view.runs
    t = Text()
    if not view.compare:
        run = runs[0]
        used = sum(1 for c in run.cores if c.iterations)
        t.append("AMD AIE ", style="bold")
        t.append(f"{len(run.cores)} cores" + (f" ({used} with kernels)" if used != len(run.cores) else "") + " · ")
        t.append_text(settings_text(view.settings))
        t.append("  ")
        t.append_text(literal(run.label, f"bold {SIDE_STYLE['a']}"))
        t.append("\n")
        t.append_text(shape_text(view.settings))
        t.append("\nsystem ", style="bold")
        t.append_text(_system_line(run))
        t.append("  ")
        t.append_text(_notes_badge(len(view.notes())))
        return t
    for i, run in enumerate(runs):
        side = view.side(i)
        t.append(SIDE_LETTER[side] + " ", style=f"bold {SIDE_STYLE[side]}")
        t.append_text(_system_line(run))
        t.append("  ")
        t.append_text(literal(run.label, f"bold {SIDE_STYLE[side]}"))
        t.append("\n")
    cmp = view.comparison
    runtime = next((r for r in cmp.rows if r.metric == "system runtime (slowest core)"), None)
    t.append("B/A runtime ", style="bold")
    t.append(fmt_times(runtime.ratio if runtime else None))
    t.append("  ")
    t.append_text(_notes_badge(len(view.notes())))
    t.append("  ")
    if view.settings.shape is None:
        t.append("no GEMM shape: GMAC/s shown as -", style="yellow")
    else:
        t.append_text(shape_text(view.settings))
    t.append(" · ")
    t.append_text(settings_text(view.settings))
    return t


# --- cores ------------------------------------------------------------------------------------

def cores_spec(view: AieView) -> TableSpec:
    tiles = [clean(c.tile) for r in view.runs for c in r.cores]  # escaped controls take more cells
    widest = max((len(t) for t in tiles), default=8)
    cols = [*_run_col(view),
            Column("tile", "Tile", "name", min_width=min(8, max(widest, 4)), max_width=max(widest, 4)),
            Column("iterations", "Iters", "int", 6), Column("perf", "Perf", "text", 5),
            Column("kernels", "Kernels", "int", 7), Column("median_cycles", "Median", "num", 6),
            Column("perf_span_cycles", "Span", "num", 7), Column("gmacs", "GMAC/s", "num", 7),
            Column("busy", "Busy", "pct", 5), Column("dropped", "Drop.", "int", 5)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        for i, run in enumerate(view.runs):
            for c in run.cores:
                run_v = (SIDE_LETTER[view.side(i)],) if view.compare else ()
                run_c = (side_cell(view, i),) if view.compare else ()
                busy = c.perf_mean_busy
                vals = (*run_v, c.tile, c.detected_iterations, perf_window(c) if c.perf_iterations else None,
                        c.stats.pairs, c.median_kernel_cycles, c.perf_mean_span_cycles, c.perf_mean_gmacs, busy,
                        c.dropped)
                cells = (*run_c, literal(clip(c.tile, w["tile"])), _iters_text(c), Text(perf_window(c)),
                         _num(f"{c.stats.pairs:,}"), _num(fmt_cycles(c.median_kernel_cycles)),
                         _num(fmt_cycles(c.perf_mean_span_cycles)), _num(fmt_num(c.perf_mean_gmacs)),
                         _num(fmt_frac(busy)), _num(f"{c.dropped:,}"))
                search = f"{view.who(i, c.tile)}\n{c.process}".lower()
                rows.append(Row(f"{i}|{c.tile}", vals, cells, payload=(i, c), search=search))
        return rows

    return TableSpec("cores", cols, build)


def cores_hint(view: AieView) -> Text:
    t = span("cycles · Span: mean perf iteration · Drop.: dropped events · ", DIM)
    t.append("Enter", style="bold")
    t.append(": iterations", style=DIM)
    return t


def _note_lines(notes: list[str]) -> list[Text]:
    out = []
    for n in notes:
        t = span("note ", NOTE_STYLE)
        t.append_text(literal(n))
        out.append(t)
    return out


def core_detail(view: AieView, index: int, core) -> Group:
    """Where a core's kernels came from: pairing, boundaries, and its notes (mismatch explanations)."""
    s = core.stats
    head = Text()
    if view.compare:
        head.append_text(side_cell(view, index))
        head.append(" ")
    head.append_text(literal(core.tile, "bold"))
    head.append("  ")
    head.append_text(literal(core.process or "(no process name)", DIM))
    head.append(f"  pid {core.pid}", style=DIM)
    lines: list[Any] = [head]
    lines += _note_lines(core.notes)
    lines.append(Text(f"kernels kept {s.pairs:,} of {s.starts:,} starts / {s.ends:,} ends · duplicates "
                      f"{s.duplicate_starts}+{s.duplicate_ends} · lost {s.orphan_starts}+{s.orphan_ends} · "
                      f"outliers {s.outliers}" + (" (window skipped)" if s.outlier_filter_skipped else "")))
    if core.median_kernel_cycles is not None:
        factor = view.runs[index].params.lock_stall_factor
        lines.append(Text(f"median kernel {fmt_cycles(core.median_kernel_cycles)} cyc · iteration boundary: "
                          f"LOCK_STALL ≥ {fmt_cycles(core.boundary_threshold_cycles)} cyc ({factor:g}× median) · "
                          f"{core.n_stalls} stalls, longest {fmt_cycles(core.longest_stall_cycles)}"))
    expected = ABSENT if core.expected_iterations is None else str(core.expected_iterations)
    lines.append(Text(f"iterations {core.detected_iterations} detected, {expected} expected · perf window "
                      f"{perf_window(core)}"))
    return Group(*lines)


# --- one core's iterations --------------------------------------------------------------------

def iterations_spec(view: AieView, index: int, core) -> TableSpec:
    cols = [Column("iteration", "Iter", "int", 4), Column("phase", "Phase", "text", 6),
            Column("kernels", "Kernels", "int", 7), Column("mean_cycles", "Mean", "num", 6),
            Column("min_cycles", "Min", "int", 6), Column("max_cycles", "Max", "int", 6),
            Column("span_cycles", "Span", "int", 7), Column("gmacs", "GMAC/s", "num", 7),
            Column("busy", "Busy", "pct", 5)]

    def build(_w: dict[str, int]) -> list[Row]:
        rows = []
        for it in core.iterations:
            vals = (it.index, it.phase, it.n_kernels, it.mean_cycles, it.min_cycles, it.max_cycles, it.span_cycles,
                    it.gmacs, it.busy_fraction)
            cells = (_num(str(it.index)), Text(it.phase), _num(f"{it.n_kernels:,}"), _num(fmt_cycles(it.mean_cycles)),
                     _num(fmt_cycles(it.min_cycles)), _num(fmt_cycles(it.max_cycles)),
                     _num(fmt_cycles(it.span_cycles)), _num(fmt_num(it.gmacs)), _num(fmt_frac(it.busy_fraction)))
            rows.append(Row(str(it.index), vals, cells, payload=it, style=PHASE_STYLE.get(it.phase, ""),
                            search=f"{it.index} {it.phase}"))
        return rows

    side = f"{SIDE_LETTER[view.side(index)]}-" if view.compare else ""
    return TableSpec(f"{side}{core.tile}-iterations", cols, build)


def core_summary(view: AieView, index: int, core) -> Text:
    """Two lines above a core's iterations."""
    t = Text()
    if view.compare:
        t.append_text(side_cell(view, index))
        t.append(" ")
    t.append_text(literal(core.tile, "bold"))
    t.append("  ")
    t.append_text(literal(view.runs[index].label, DIM))
    t.append(f"\n{core.detected_iterations} iterations")
    if core.expected_iterations is not None:
        t.append(f" ({core.expected_iterations} expected)", style=NOTE_STYLE if core.mismatch else "")
    t.append(f" · perf {perf_window(core)} · median kernel {fmt_cycles(core.median_kernel_cycles)} cyc · "
             f"GMAC/s {fmt_num(core.perf_mean_gmacs)}")
    return t


def iteration_detail(view: AieView, index: int, core, it) -> Group:
    params = view.runs[index].params
    head = span(f"iteration {it.index}", "bold")
    head.append(f"  {it.phase}", style=PHASE_STYLE.get(it.phase) or "bold")
    head.append(f"  {it.n_kernels} kernels")
    lines: list[Any] = [head, *_note_lines(core.notes)]
    lines.append(Text(f"span {fmt_cycles(it.span_cycles)} cyc = {fmt_num(it.span_us)} µs at {params.clock_mhz:g} MHz"
                      f" · busy {fmt_frac(it.busy_fraction)} (kernel cycles / span) · cycles "
                      f"{it.first_start:,} → {it.last_end:,}"))
    lines.append(Text(f"GMAC/s {fmt_num(it.gmacs)} · {fmt_frac(it.peak_fraction)} of the "
                      f"{params.peak_macs_per_cycle} MAC/cycle core peak"))
    if it.kernels:
        lines.append(Text("kernel cycles: " + " ".join(f"{k.duration:,}" for k in it.kernels), style=DIM))
    return Group(*lines)


# --- system aggregate -------------------------------------------------------------------------

def system_spec(view: AieView) -> TableSpec:
    tiles = [clean(s.slowest_tile) for r in view.runs for s in r.aggregate.per_iteration]
    widest = max((len(t) for t in tiles), default=8)
    cols = [*_run_col(view), Column("iteration", "Iter", "int", 4),
            Column("runtime_cycles", "Runtime", "int", 8), Column("runtime_us", "µs", "num", 7),
            Column("slowest", "Slowest core", "name", min_width=min(12, max(widest, 12)), max_width=max(widest, 12)),
            Column("gmacs", "GMAC/s", "num", 7), Column("peak", "Peak", "pct", 5), Column("mark", "", "text", 5)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        for i, run in enumerate(view.runs):
            agg = run.aggregate
            for s in agg.per_iteration:
                mark = "best" if s.index == agg.best_index else "worst" if s.index == agg.worst_index else ""
                run_v = (SIDE_LETTER[view.side(i)],) if view.compare else ()
                run_c = (side_cell(view, i),) if view.compare else ()
                vals = (*run_v, s.index, s.runtime_cycles, s.runtime_us, s.slowest_tile, s.gmacs, s.peak_fraction, mark)
                cells = (*run_c, _num(str(s.index)), _num(fmt_cycles(s.runtime_cycles)), _num(fmt_num(s.runtime_us)),
                         literal(clip(s.slowest_tile, w["slowest"])), _num(fmt_num(s.gmacs)),
                         _num(fmt_frac(s.peak_fraction)), span(mark, "green" if mark == "best" else DIM))
                rows.append(Row(f"{i}|{s.index}", vals, cells, payload=(i, s),
                                search=f"{view.who(i)} {s.index} {s.slowest_tile} {mark}".lower()))
        return rows

    return TableSpec("system", cols, build)


def system_hint(view: AieView) -> Text:
    t = Text()
    for i, run in enumerate(view.runs):
        agg = run.aggregate
        if view.compare:
            t.append_text(side_cell(view, i))
            t.append(" ")
        if not agg.per_iteration:
            t.append("no common perf iteration   ", style="yellow")
            continue
        lo, hi = agg.indices[0], agg.indices[-1]
        if view.compare:
            t.append(f"mean {fmt_cycles(agg.mean_runtime_cycles)} cyc · {fmt_num(agg.mean_gmacs)} GMAC/s   ", style=DIM)
        else:
            t.append(f"mean {fmt_cycles(agg.mean_runtime_cycles)} cyc · {fmt_num(agg.mean_runtime_us)} µs · "
                     f"{fmt_num(agg.mean_gmacs)} GMAC/s over perf {lo}–{hi} on {len(agg.cores_used)} cores", style=DIM)
    return t


def system_detail(view: AieView, index: int, s) -> Group:
    """Every core's span in this iteration: the slowest one sets the runtime."""
    run = view.runs[index]
    head = Text()
    if view.compare:
        head.append_text(side_cell(view, index))
        head.append(" ")
    head.append(f"iteration {s.index}", style="bold")
    head.append(f"  runtime {fmt_cycles(s.runtime_cycles)} cyc = {fmt_num(s.runtime_us)} µs (the slowest core) · "
                f"GMAC/s {fmt_num(s.gmacs)} · {fmt_frac(s.peak_fraction)} of array peak")
    g = Table.grid(padding=(0, 2))
    g.add_column()
    g.add_column(justify="right")
    g.add_column(justify="right")
    g.add_column()
    for c in run.cores:
        if s.index >= len(c.iterations):
            continue
        it = c.iterations[s.index]
        slowest = c.tile == s.slowest_tile
        g.add_row(literal(c.tile, "bold" if slowest else ""), Text(f"{fmt_cycles(it.span_cycles)} cyc"),
                  Text(f"{it.n_kernels} kernels"), span("slowest" if slowest else "", "bold"))
    return Group(head, g, *_note_lines(run.aggregate.notes))


# --- two runs ---------------------------------------------------------------------------------

def _metric_value(metric: str, unit: str, v: Any) -> str:
    if v is None:
        return ABSENT
    if isinstance(v, str):
        return v
    if metric in _FRACTION_METRICS:
        return fmt_frac(v)
    if unit == "cycles":
        return fmt_cycles(v)
    if isinstance(v, int):
        return f"{v:,}"
    return fmt_num(v, 2 if unit in ("µs", "GMAC/s") else 1)


def compare_spec(view: AieView) -> TableSpec:
    # the explorer analyses both runs with one GEMM shape, which the header shows: no row for it
    shown = [r for r in view.comparison.rows if r.metric != SHAPE_METRIC]
    widest = max((len(r.metric) + len(r.unit) + 3 for r in shown), default=20)
    cols = [Column("metric", "Metric", "name", min_width=20, max_width=widest),
            Column("a", "A", "num", 10), Column("b", "B", "num", 10), Column("ratio", "B/A", "ratio", 6),
            Column("better", "Better", "text", 6)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        for n, r in enumerate(shown):
            label = r.metric + (f" ({r.unit})" if r.unit else "")
            a, b = (literal(_metric_value(r.metric, r.unit, v)) for v in (r.a, r.b))
            a.justify = b.justify = "right"
            better = SIDE_LETTER.get(r.better or "", "")
            if r.better:
                (a if r.better == "a" else b).stylize("green")
            cells = (literal(clip(label, w["metric"])), a, b, _num(fmt_times(r.ratio)),
                     span(better, f"bold {SIDE_STYLE.get(r.better or '', '')}"))
            rows.append(Row(str(n), (label, r.a, r.b, r.ratio, better), cells, payload=r, search=label.lower()))
        return rows

    return TableSpec("compare", cols, build)


def compare_hint(view: AieView) -> Text:
    t = Text()
    for i, run in enumerate(view.runs):
        t.append_text(side_cell(view, i))
        t.append(" ")
        t.append_text(literal(run.label))
        t.append("   ")
    t.append("B/A > 1: B takes longer", style=DIM)
    return t


def paired_spec(view: AieView) -> TableSpec:
    cmp = view.comparison
    cols = [Column("ordinal", "#", "int", 3), Column("a_iteration", "A iter", "int", 6),
            Column("a_runtime_cycles", "A runtime", "int", 9), Column("a_gmacs", "A GMAC/s", "num", 8),
            Column("b_iteration", "B iter", "int", 6), Column("b_runtime_cycles", "B runtime", "int", 9),
            Column("b_gmacs", "B GMAC/s", "num", 8), Column("ratio", "B/A", "ratio", 6)]

    def build(_w: dict[str, int]) -> list[Row]:
        rows = []
        for p in cmp.per_iteration:
            vals = (p.ordinal, p.a_index, p.a_runtime_cycles, p.a_gmacs, p.b_index, p.b_runtime_cycles, p.b_gmacs,
                    p.ratio)
            cells = (_num(str(p.ordinal)), _num(ABSENT if p.a_index is None else str(p.a_index)),
                     _num(fmt_cycles(p.a_runtime_cycles)), _num(fmt_num(p.a_gmacs)),
                     _num(ABSENT if p.b_index is None else str(p.b_index)), _num(fmt_cycles(p.b_runtime_cycles)),
                     _num(fmt_num(p.b_gmacs)), _num(fmt_times(p.ratio)))
            rows.append(Row(str(p.ordinal), vals, cells, payload=p, search=f"{p.ordinal}"))
        return rows

    return TableSpec("paired-iterations", cols, build)


def paired_hint() -> Text:
    return span("the n-th perf iteration common to every core of each run · runtime in cycles", DIM)


# --- notes ------------------------------------------------------------------------------------

def notes_spec(view: AieView) -> TableSpec:
    notes = view.notes()
    widest = max((len(clean(w)) for w, _n in notes), default=6)
    cols = [Column("where", "Where", "text", min(max(widest, 5), 16)),
            Column("note", "Note", "name", min_width=20, max_width=max((len(clean(n)) for _w, n in notes), default=20))]

    def build(w: dict[str, int]) -> list[Row]:
        return [Row(str(k), (where, note), (literal(clip(where, cols[0].width)), literal(clip(note, w["note"]))),
                    payload=(where, note), search=f"{where}\n{note}".lower())
                for k, (where, note) in enumerate(notes)]

    return TableSpec("notes", cols, build)


def note_detail(where: str, note: str) -> Text:
    t = literal(where, "bold")
    t.append("\n")
    t.append_text(literal(note))
    return t


# --- the start screen ---------------------------------------------------------------------------

def card_summary(run) -> str:
    """The start screen's one-line result for an analysed AIE trace."""
    used = [c for c in run.cores if c.iterations]
    iters = max((c.detected_iterations for c in used), default=0)
    s = f"analysed: {len(run.cores)} AIE cores · {iters} iterations · {len(run.aggregate.indices)} perf on every core"
    n = count_notes(run)
    if n:
        s += f" · {n} notes"
    return s


def count_notes(run) -> int:
    return len(run.notes) + sum(len(c.notes) for c in run.cores) + len(run.aggregate.notes)
