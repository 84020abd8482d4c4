"""Comparison parts → table specs and detail text. Presentation only: every number shown here
was computed by core (kerneldiff.core.compare.engine); this module formats and lays it out. One
trace on its own (browse) has its own views: kerneldiff.tui.trace_views.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from kerneldiff.core.compare.result import (Comparison, FusionFinding, KernelPair, LayerAlignment, OperationRow,
                                            SameKernel)

from .text import (DIM, SIDE_LETTER, SIDE_STYLE, clean, span, fmt_bytes, fmt_gap, fmt_pct, fmt_ratio, fmt_us, literal,
                   one_bar, shorten, slower_side, two_bars)
from .widgets.result_table import Column, Row, TableSpec

CHART_WIDTH = 16  # the smallest per-layer chart that still shows a 10% difference
NONE_CELL = "· none ·"
KIND_LABEL = {"fused_category": "fused op", "sequence": "sequence", "count_imbalance": "count",
              "missing_kernel": "missing"}


def side_text(side: str, with_label: Comparison | None = None) -> Text:
    t = span(SIDE_LETTER[side], f"bold {SIDE_STYLE[side]}")
    if with_label is not None:
        t.append(" ")
        t.append(literal(getattr(with_label, side).label, SIDE_STYLE[side]))
    return t


def _num(s: str, style: str = "") -> Text:
    return span(s, style, "right")


def _row_style(gap_us: float) -> str:
    side = slower_side(gap_us)
    return SIDE_STYLE[side] if side else ""


def _slower_cell(gap_us: float) -> Text:
    side = slower_side(gap_us)
    return Text(SIDE_LETTER[side]) if side else span("=", DIM)


def _name_cell(name: str | None, width: int) -> Text:
    if name is None:
        return span(NONE_CELL, f"{DIM} italic")
    return literal(shorten(name, width))


# --- layers ---------------------------------------------------------------------------------

def layers_spec(comp: Comparison) -> TableSpec:
    layers = sorted(comp.layers, key=lambda r: r.layer)
    slowest = comp.layers[0].layer if comp.layers else None
    scale = max((max(r.a.total_us, r.b.total_us) for r in layers), default=0.0)
    cols = [Column("layer", "Layer", "int", 5), Column("a_total", "A total", "us", 8),
            Column("b_total", "B total", "us", 8), Column("ratio", "A/B", "ratio", 6),
            Column("gap", "Gap", "gap", 9), Column("slower", "Slower", "text", 6),
            Column("chart", "A▀ B▄", "bar", None, CHART_WIDTH),
            Column("a_kernels", "A kernels", "int", 9), Column("b_kernels", "B kernels", "int", 9),
            Column("a_median", "A med/pass", "us", 10), Column("b_median", "B med/pass", "us", 10)]

    def build(_w: dict[str, int]) -> list[Row]:
        rows = []
        for r in layers:
            vals = (r.layer, r.a.total_us, r.b.total_us, r.ratio, r.gap_us, SIDE_LETTER.get(slower_side(r.gap_us), "="),
                    None, r.a.kernels, r.b.kernels, r.a.median_us, r.b.median_us)
            cells = (_num(str(r.layer)), _num(fmt_us(r.a.total_us)), _num(fmt_us(r.b.total_us)),
                     _num(fmt_ratio(r.ratio)), _num(fmt_gap(r.gap_us)), _slower_cell(r.gap_us),
                     two_bars(r.a.total_us, r.b.total_us, scale, _w["chart"]),
                     _num(str(r.a.kernels)), _num(str(r.b.kernels)), _num(fmt_us(r.a.median_us)),
                     _num(fmt_us(r.b.median_us)))
            rows.append(Row(str(r.layer), vals, cells, payload=r, style=_row_style(r.gap_us), search=f"layer {r.layer}"))
        return rows

    return TableSpec("layers", cols, build, select=None if slowest is None else str(slowest), default_sort=(0, False))


# --- operations -----------------------------------------------------------------------------

def operations_spec(comp: Comparison) -> TableSpec:
    ops = comp.operations
    split = any(o.phase != comp.phase for o in ops)
    phase_col = [Column("phase", "Phase", "text", 7)] if split else []
    widest = max((len(o.category) for o in ops), default=14)
    cols = [Column("category", "Operation", "name", min_width=min(14, max(widest, 9)), max_width=max(widest, 9)), *phase_col,
            Column("a_total", "A total", "us", 8), Column("b_total", "B total", "us", 8),
            Column("ratio", "A/B", "ratio", 6), Column("gap", "Gap", "gap", 9),
            Column("a_count", "A n", "int", 6), Column("b_count", "B n", "int", 6),
            Column("a_share", "A share", "pct", 7), Column("b_share", "B share", "pct", 7),
            Column("a_median", "A median", "us", 8), Column("b_median", "B median", "us", 8),
            Column("only_in", "Only in", "text", 7)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        for o in ops:
            ph = (o.phase,) if split else ()
            a = o.a if o.a.count else None
            b = o.b if o.b.count else None
            only = SIDE_LETTER[o.only_in] if o.only_in else ""
            vals = (o.category, *ph, a and a.total_us, b and b.total_us, o.ratio, o.gap_us, o.a.count, o.b.count,
                    a and a.share, b and b.share, a and a.median_us, b and b.median_us, only)
            cells = (literal(shorten(o.category, w["category"])), *(literal(p) for p in ph),
                     _num(fmt_us(a.total_us) if a else "—"), _num(fmt_us(b.total_us) if b else "—"),
                     _num(fmt_ratio(o.ratio)), _num(fmt_gap(o.gap_us)), _num(str(o.a.count)), _num(str(o.b.count)),
                     _num(fmt_pct(a.share) if a else "—"), _num(fmt_pct(b.share) if b else "—"),
                     _num(fmt_us(a.median_us) if a else "—"), _num(fmt_us(b.median_us) if b else "—"),
                     Text(only))
            rows.append(Row(f"{o.category}|{o.phase}", vals, cells, payload=o, style=_row_style(o.gap_us),
                            search=o.category.lower()))
        return rows

    return TableSpec("operations", cols, build, select=None)


def stats_grid(stats: dict[str | None, Any]) -> Table:
    """count · total · min · median · p95 · max · share, one line per side ("a", "b"; None: one trace,
    no label). The values are compare.result.Stats or analysis.browse.Durations."""
    g = Table.grid(padding=(0, 2))
    g.add_column()
    for _ in range(7):
        g.add_column(justify="right")
    g.add_row(Text(""), *[Text(h, style="bold") for h in ("count", "total", "min", "median", "p95", "max", "share")])
    for side, s in stats.items():
        label = Text("") if side is None else side_text(side)
        if not s.count:
            g.add_row(label, Text("—"), *[Text("") for _ in range(6)])
            continue
        g.add_row(label, Text(str(s.count)), Text(fmt_us(s.total_us)), Text(fmt_us(s.min_us)),
                  Text(fmt_us(s.median_us)), Text(fmt_us(s.p95_us)), Text(fmt_us(s.max_us)), Text(fmt_pct(s.share)))
    return g


def labelled_grid() -> Table:
    """Label | value rows; long values (kernel names) wrap under themselves."""
    g = Table.grid(padding=(0, 2))
    g.add_column(no_wrap=True, style="bold")
    g.add_column(overflow="fold")
    return g


def operation_detail(o: OperationRow, comp: Comparison) -> Group:
    head = literal(o.category, "bold")
    if o.phase != "all":
        head.append(f"  phase {o.phase}", style=DIM)
    head.append(f"   A/B {fmt_ratio(o.ratio)}   gap {fmt_gap(o.gap_us)}")
    if o.only_in:
        head.append(f"   only {SIDE_LETTER[o.only_in]} runs it", style="bold")
    g = labelled_grid()
    for side in ("a", "b"):
        prefix = f"{SIDE_LETTER[side]} "
        ops = o.top_cpu_ops.get(side) or []
        if ops:
            g.add_row(Text(f"{prefix}cpu_ops"), literal(", ".join(clean(x) for x in ops)))
        for i, name in enumerate(o.examples.get(side) or []):
            g.add_row(Text(f"{prefix}kernels" if i == 0 else ""), literal(name))
    return Group(head, stats_grid({"a": o.a, "b": o.b}), g)


# --- aligned kernel pairs -------------------------------------------------------------------

def pairs_spec(al: LayerAlignment) -> TableSpec:
    cols = [Column("pos", "#", "int", 3), Column("a_name", "A kernel", "name", min_width=14),
            Column("b_name", "B kernel", "name", min_width=14), Column("a_median", "A µs", "us", 7),
            Column("b_median", "B µs", "us", 7), Column("ratio", "A/B", "ratio", 6), Column("gap", "Gap", "gap", 8),
            Column("note", "", "text", 1)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        for p in al.pairs:
            a = p.a.median_us if p.a_name is not None else None
            b = p.b.median_us if p.b_name is not None else None
            note = "F" if p.fusion_note else ("=" if p.same_kernel else "")
            vals = (p.position, p.a_name, p.b_name, a, b, p.ratio, p.gap_us, note)
            cells = (_num(str(p.position)), _name_cell(p.a_name, w["a_name"]), _name_cell(p.b_name, w["b_name"]),
                     _num(fmt_us(a)), _num(fmt_us(b)), _num(fmt_ratio(p.ratio)), _num(fmt_gap(p.gap_us)),
                     span(note, "bold" if note == "F" else DIM))
            search = f"{p.a_name or ''}\n{p.b_name or ''}".lower()
            rows.append(Row(str(p.position), vals, cells, payload=p, style=_row_style(p.gap_us), search=search))
        return rows

    return TableSpec(f"layer{al.layer}_pairs", cols, build)


def pair_status(p: KernelPair) -> Text:
    """One line under the pairs table: categories and the fusion note of the highlighted pair."""
    t = Text()
    t.append_text(side_text("a"))
    t.append(" ")
    t.append(literal(p.a_category or "—"))
    t.append("  ")
    t.append_text(side_text("b"))
    t.append(" ")
    t.append(literal(p.b_category or "—"))
    if p.same_kernel:
        t.append("  same kernel", style=DIM)
    if p.fusion_note:
        t.append("  ")
        t.append(literal(p.fusion_note, "bold"))
    return t


# --- fusion ---------------------------------------------------------------------------------

def fusion_spec(comp: Comparison) -> TableSpec:
    cols = [Column("n", "#", "int", 3), Column("fused_side", "Fused", "text", 5),
            Column("kind", "Kind", "text", 8),
            Column("category", "Fused op", "name", min_width=14,
                   max_width=max((len(f.fused_category) for f in comp.fusions), default=14)),
            Column("occ", "Occ.", "int", 5), Column("cost", "Comp. cost", "us", 10),
            Column("saving", "Est. saving", "us", 11), Column("conf", "Conf.", "pct", 5)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        for i, f in enumerate(comp.fusions, 1):
            saving = f.estimated_saving.total_all_us if f.estimated_saving else None
            vals = (i, SIDE_LETTER.get(f.fused_side, f.fused_side), f.kind, f.fused_category, f.occurrences,
                    f.component_cost_us, saving, f.confidence)
            cells = (_num(str(i)), span(SIDE_LETTER.get(f.fused_side, "?"), f"bold {SIDE_STYLE.get(f.fused_side, '')}"),
                     Text(KIND_LABEL.get(f.kind, f.kind)), literal(shorten(f.fused_category, w["category"])),
                     _num(str(f.occurrences)), _num(fmt_us(f.component_cost_us)), _num(fmt_us(saving)),
                     _num(f"{f.confidence:.0%}"))
            search = " ".join([f.fused_category, *f.fused_kernels, *f.component_kernels, *f.component_categories]).lower()
            rows.append(Row(str(i), vals, cells, payload=f, search=search))
        return rows

    return TableSpec("fusion", cols, build, select="1" if comp.fusions else None)


def fusion_evidence(f: FusionFinding, comp: Comparison) -> Group:
    fs, cs = f.fused_side, f.component_side
    head = span("Fused on ", "bold")
    head.append_text(side_text(fs, comp))
    head.append(f"   {KIND_LABEL.get(f.kind, f.kind)}, confidence {f.confidence:.0%}", style=DIM)
    parts: list[Any] = [head, literal(f.evidence)]
    g = Table.grid(padding=(0, 1))
    g.add_column(no_wrap=True)
    g.add_column(overflow="fold")
    fused_label = side_text(fs)
    fused_label.append(" runs")
    if f.fused_kernels:
        for i, k in enumerate(f.fused_kernels):
            g.add_row(fused_label if i == 0 else Text(""), literal(k))
    else:
        g.add_row(fused_label, Text("fewer kernels (no single fused kernel)", style=DIM))
    g.add_row(Text("  category"), literal(f.fused_category))
    comp_label = side_text(cs)
    comp_label.append(" runs")
    for i, k in enumerate(f.component_kernels or ["—"]):
        g.add_row(comp_label if i == 0 else Text(""), literal(k))
    if f.component_categories:
        g.add_row(Text("  categories"), literal(", ".join(f.component_categories)))
    g.add_row(Text("occurrences"), Text(str(f.occurrences)))
    cost = side_text(cs)
    cost.append(f" components {fmt_us(f.component_cost_us)}   ")
    cost.append_text(side_text(fs))
    cost.append(f" fused {fmt_us(f.fused_cost_us)}")
    g.add_row(Text("measured"), cost)
    s = f.estimated_saving
    if s is None:
        g.add_row(Text("est. saving"), Text("not estimated", style=DIM))
    else:
        gate = "passes the minimum-gain gate" if s.passes_gate else "below the minimum-gain gate"
        g.add_row(Text("est. saving"), Text(f"{fmt_us(s.total_us)} per occurrence, {fmt_us(s.total_all_us)} in all ({gate})"))
        g.add_row(Text(""), Text(f"{s.launches_saved} launches saved → {fmt_us(s.launch_ns / 1e3)}", style=DIM))
        g.add_row(Text(""), Text(f"{s.sync_points_saved} sync points saved → {fmt_us(s.sync_ns / 1e3)}", style=DIM))
        g.add_row(Text(""), Text(f"{fmt_bytes(s.device_bytes_saved)} device traffic saved → {fmt_us(s.traffic_ns / 1e3)}",
                                 style=DIM))
        g.add_row(Text(""), Text(f"{fmt_bytes(s.readback_bytes_saved)} host read-back saved → {fmt_us(s.readback_ns / 1e3)}",
                                 style=DIM))
        if s.params:
            g.add_row(Text("model"), literal(", ".join(f"{k}={v}" for k, v in s.params.items()), DIM))
    parts.append(g)
    return Group(*parts)


# --- same kernels ---------------------------------------------------------------------------

def same_kernels_spec(comp: Comparison) -> TableSpec:
    items = comp.same_kernels
    cols = [Column("name", "Kernel", "name", min_width=16), Column("a_count", "A n", "int", 5),
            Column("b_count", "B n", "int", 5), Column("a_median", "A median", "us", 8),
            Column("b_median", "B median", "us", 8), Column("ratio", "A/B", "ratio", 6), Column("gap", "Gap", "gap", 9),
            Column("category", "Category", "text", 12)]

    def build(w: dict[str, int]) -> list[Row]:
        return [Row(f"{i}", (k.name, k.a.count, k.b.count, k.a.median_us, k.b.median_us, k.ratio, k.gap_us, k.category),
                    (literal(shorten(k.name, w["name"])), _num(str(k.a.count)), _num(str(k.b.count)),
                     _num(fmt_us(k.a.median_us)), _num(fmt_us(k.b.median_us)), _num(fmt_ratio(k.ratio)),
                     _num(fmt_gap(k.gap_us)), literal(shorten(k.category, 12))),
                    payload=k, style=_row_style(k.gap_us), search=k.name.lower())
                for i, k in enumerate(items)]

    return TableSpec("same_kernels", cols, build)


def same_kernel_detail(k: SameKernel, comp: Comparison) -> Group:
    head = literal(k.name, "bold")
    sub = Text()
    sub.append(literal(k.category))
    sub.append(f"   A/B {fmt_ratio(k.ratio)}   gap {fmt_gap(k.gap_us)}")
    return Group(head, sub, stats_grid({"a": k.a, "b": k.b}))


# --- warnings -------------------------------------------------------------------------------

def warnings_spec(warnings: list[str]) -> TableSpec:
    cols = [Column("n", "#", "int", 3), Column("warning", "Warning", "name", min_width=20,
                                                max_width=max((len(w) for w in warnings), default=20))]

    def build(w: dict[str, int]) -> list[Row]:
        return [Row(str(i), (i, s), (_num(str(i)), literal(shorten(s, w["warning"]))), payload=s, search=s.lower())
                for i, s in enumerate(warnings, 1)]

    return TableSpec("warnings", cols, build)


def warning_detail(s: str) -> Text:
    return literal(s)
