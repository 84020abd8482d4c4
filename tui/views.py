"""Comparison parts → table specs and detail text. Presentation only: every number shown here
was computed by core (kerneldiff.core.compare.engine); this module formats and lays it out. One
trace on its own (browse) has its own views: kerneldiff.tui.trace_views.
"""

from __future__ import annotations

from functools import partial
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from kerneldiff.core.session import (Comparison, FusionFinding, KernelPair, LayerAlignment,
                                            OperationRow, SameKernel)

from kerneldiff.core.session import operation_counterpart
from kerneldiff.core.report import labels

from kerneldiff.core.session import critical
from kerneldiff.core.report import format as fmt

from .text import (DIM, SIDE_LETTER, SIDE_STYLE, clean, cut, readable, span, fmt_bytes, fmt_gap, fmt_pct, fmt_ratio, fmt_us,
                   literal, shorten, shortener, slower_side, two_bars)
from .widgets.result_table import Column, Row, Sort, TableSpec

if TYPE_CHECKING:
    from kerneldiff.core.compare.side_timeline import PassTimeline

CHART_WIDTH = 16  # the smallest per-layer chart that still shows a 10% difference
NONE_CELL = "· none ·"
KIND_LABEL = {"op_fusion": "ops", "fused_category": "fused op", "sequence": "sequence", "count_imbalance": "count", "launch_count": "launches",
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


def _slower_cell(gap_us: float, noise: bool = False, by: str = "") -> Text:
    """A or B (the slower side), = for a tie; ≈ after it when the layer does not depart from the
    typical layer. `by`: a layer's kernel time and span disagreeing ("A kernels, B span") says so."""
    side = slower_side(gap_us)
    if by and len(by) > 1:
        t = Text(by.replace(" kernels", "k").replace(" span", "s"))   # "Ak, Bs": kernels A, span B
        if noise:
            t.append(" ≈", style=DIM)
        return t
    t = Text(SIDE_LETTER[side]) if side else span("=", DIM)
    if noise:
        t.append(" ≈", style=DIM)
    return t


def _name_cell(name: str | None, width: int, short=None) -> Text:
    if name is None:
        return span(NONE_CELL, f"{DIM} italic")
    return literal(short(name) if short is not None else shorten(name, width))


def searchable(*parts: str | None) -> str:
    """What `/` matches: names as recorded and as shown (demangled), and categories."""
    out = []
    for p in parts:
        if p:
            out.append(p.lower())
            if p.startswith("_Z"):
                out.append(readable(p).lower())
    return "\n".join(out)


def _side_search(k, side: str) -> str:
    return searchable(k.name, k.category) + f"\n{side}"


# --- the named orders of the `s` (gap), `t` (time) and `n` (name) keys ----------------------------

def _add(*xs):
    vals = [x for x in xs if x is not None]
    return sum(vals) if vals else None


def gap_sort(i: int, column: str = "gap", words: str = "largest |gap| first (the most time lost or won)") -> Sort:
    """By the magnitude of value `i` (a gap), largest first: where one side loses the most."""
    return Sort("gap", lambda r: None if r.values[i] is None else abs(r.values[i]), (column,), True, words)


def time_sort(idx: tuple[int, ...], columns: tuple[str, ...], words: str = "largest A + B first") -> Sort:
    return Sort("time", lambda r: _add(*(r.values[i] for i in idx)), columns, True, words)


def name_sort(i: int, column: str, alt: int | None = None) -> Sort:
    def key(r):
        v = r.values[i] if r.values[i] is not None or alt is None else r.values[alt]
        return None if v is None else readable(str(v)).lower()
    return Sort("name", key, (column,), False, "A to Z")


def compare_sorts(gap: int, a: int, b: int, name: int, name_col: str, time_cols: tuple[str, str] = ("a_total", "b_total"),
                  alt: int | None = None) -> dict[str, Sort]:
    return {"gap": gap_sort(gap), "time": time_sort((a, b), time_cols), "name": name_sort(name, name_col, alt)}


# --- layers ---------------------------------------------------------------------------------

OUTSIDE = "outside"   # the Layer cell of the kernels outside every layer


def layers_spec(comp: Comparison) -> TableSpec:
    """Layers slowest first (largest |gap|), with the kernels outside every layer as one more row.
    When only one side has layers the rows hold that side alone: no ratio, no gap."""
    compared = comp.layers_from == "both"
    layers = sorted(comp.layers, key=lambda r: r.layer)
    if comp.outside_layers is not None:
        layers.append(comp.outside_layers)
    scale = max((max(r.a.total_us, r.b.total_us) for r in layers), default=0.0)
    names = {id(r): labels.layer_name(r) for r in layers}    # `vision 7` in a model of several stacks
    cols = [Column("layer", "Layer", "int", max([7, *(len(n) for n in names.values())])),
            Column("a_total", "A total", "us", 8),
            Column("b_total", "B total", "us", 8), Column("ratio", "A/B", "ratio", 6),
            Column("gap", "Gap", "gap", 9), Column("slower", "Slower", "text", 6),
            Column("chart", "A▀ B▄", "bar", None, CHART_WIDTH),
            # the span (first to last kernel): the wall clock the headline leads with
            Column("span_gap", "Span gap", "gap", 9), Column("spread", "±passes", "us", 8),
            # the per-pass gap over its standard error; and this layer's against the typical layer's
            Column("t", "t", "num", 7), Column("t_typical", "t vs typ", "num", 8),
            Column("a_kernels", "A kernels", "int", 9), Column("b_kernels", "B kernels", "int", 9),
            Column("a_median", "A med/pass", "us", 10), Column("b_median", "B med/pass", "us", 10),
            # GPU idle inside the layer (first to last kernel, all passes): the text report had it, the explorer not
            Column("a_idle", "A idle", "us", 8), Column("b_idle", "B idle", "us", 8)]

    def build(_w: dict[str, int]) -> list[Row]:
        rows = []
        for r in layers:
            outside = r.layer < 0
            gap = r.gap_us if compared else None
            a = r.a.total_us if (r.a.kernels or compared) else None
            b = r.b.total_us if (r.b.kernels or compared) else None
            noise = " ≈" if r.noise else ""
            vals = (None if outside else r.layer, a, b, r.ratio, gap,
                    (SIDE_LETTER.get(slower_side(gap or 0), "=") + noise) if compared else "", None,
                    r.span_gap_us if compared else None, r.spread_us,
                    r.t, r.departure_t,
                    r.a.kernels, r.b.kernels, r.a.median_us, r.b.median_us,
                    *_idle(r))
            cells = (span(OUTSIDE, "italic", "right") if outside else _num(names[id(r)]), _num(fmt_us(a)),
                     _num(fmt_us(b)), _num(fmt_ratio(r.ratio)), _num(fmt_gap(gap)),
                     _slower_cell(r.gap_us, r.noise, r.slower_by) if compared else Text(""),
                     two_bars(r.a.total_us, r.b.total_us, scale, _w["chart"]),
                     _num(fmt_gap(r.span_gap_us if compared else None)),
                     _num("±" + fmt_us(r.spread_us) if r.spread_us is not None else "—"),
                     _num(fmt.t_value(r.t)), _num(fmt.t_value(r.departure_t) + ("*" if r.departs else "")),
                     _num(f"{r.a.kernels:,}"), _num(f"{r.b.kernels:,}"), _num(fmt_us(r.a.median_us if r.a.kernels else None)),
                     _num(fmt_us(r.b.median_us if r.b.kernels else None)),
                     *(_num(fmt_us(x)) for x in _idle(r)))
            key = OUTSIDE if outside else str(r.layer)
            search = "outside layers embedding lm_head sampling" if outside else f"layer {names[id(r)]}"
            rows.append(Row(key, vals, cells, payload=r, style=_row_style(gap or 0), search=search))
        return rows

    sorts = compare_sorts(4, 1, 2, 0, "layer")
    sorts["name"] = Sort("layer", lambda r: r.values[0], ("layer",), False, "in order")
    return TableSpec("layers", cols, build, default_sort="gap" if compared else "time", sorts=sorts, fixed=1)


def _idle(r) -> tuple[float | None, float | None]:
    """Each side's GPU idle inside the layer; none for `outside` (not one span: no idle is measured)."""
    if r.layer < 0:
        return None, None
    return (r.a.idle_us if r.a.kernels else None), (r.b.idle_us if r.b.kernels else None)


def layers_hint(comp: Comparison) -> Text:
    """The line over the layers: whose is which bar, and what the rows can say."""
    t = Text()
    if not comp.layers:
        t.append("no transformer layers were found (see Warnings); the other tabs still compare", style=DIM)
        return t
    if comp.layers_from != "both":
        have = comp.layers_from
        lack = "b" if have == "a" else "a"
        t.append(f"only {SIDE_LETTER[have]} has layers", style="bold yellow")
        t.append(f" ({SIDE_LETTER[lack]}: none found, see Warnings): {SIDE_LETTER[have]} alone, nothing compared",
                 style="yellow")
        return t
    noise = sum(r.noise for r in comp.layers)
    if noise:
        if noise == len(comp.layers):
            t.append(f"≈ none of the {noise} layers departs from the typical layer: no layer stands out", style="bold")
        else:
            t.append(f"≈ {noise} of {len(comp.layers)} layers do not depart from the typical layer "
                     f"(* |t vs typ| > {critical(len(comp.layers)):.2f}: 5%, corrected for {len(comp.layers)} layers)")
        t.append("   ")
    # the way on before the legend: at 80 columns the hint's two lines end inside the legend, which
    # the bar column's header (A▀ B▄) repeats
    t.append("Enter: kernel pairs   ", style=DIM)
    t.append("▀ ", style=SIDE_STYLE["a"])
    t.append("A ", style=f"bold {SIDE_STYLE['a']}")
    t.append(literal(comp.a.label))
    t.append("   ▄ ", style=SIDE_STYLE["b"])
    t.append("B ", style=f"bold {SIDE_STYLE['b']}")
    t.append(literal(comp.b.label))
    if comp.layers and all(r.spread_us is None for r in comp.layers):
        t.append("   ±passes —: under 3 passes, no spread to judge layer differences by", style=DIM)
    return t


# --- operations -----------------------------------------------------------------------------

def operations_spec(comp: Comparison) -> TableSpec:
    """Operations, largest |gap| first. When the traces hold different numbers of passes the
    comparison is of an average pass: the time columns are per pass too (A/pass, B/pass), so that
    A/B and Gap are computed from the figures beside them."""
    ops = comp.operations
    per_pass = comp.basis == "per_pass"
    na, nb = (max(comp.a.passes, 1), max(comp.b.passes, 1)) if per_pass else (1, 1)
    split = any(o.phase != comp.phase for o in ops)
    phase_col = [Column("phase", "Phase", "text", 7)] if split else []
    widest = max((len(o.category) for o in ops), default=14)
    ta, tb = ("A/pass", "B/pass") if per_pass else ("A total", "B total")
    cols = [Column("category", "Operation", "name", min_width=min(14, max(widest, 9)), max_width=max(widest, 9)), *phase_col,
            Column("a_total", ta, "us", 8), Column("b_total", tb, "us", 8),
            Column("ratio", "A/B", "ratio", 6), Column("gap", "Gap", "gap", 9),
            Column("a_count", "A n", "int", 6), Column("b_count", "B n", "int", 6),
            Column("a_share", "A %GPU", "pct", 7), Column("b_share", "B %GPU", "pct", 7),
            Column("a_median", "A median", "us", 8), Column("b_median", "B median", "us", 8),
            Column("only_in", "Only in", "text", 7)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        for o in ops:
            ph = (o.phase,) if split else ()
            found = operation_counterpart(comp, o)
            a = o.a if o.a.count else None
            b = o.b if o.b.count else None
            at = a.total_us / na if a else None
            bt = b.total_us / nb if b else None
            # one-sided: the fusion finding in which the other side runs the same work unfused
            only = (SIDE_LETTER[o.only_in] + (f" #{found + 1}" if found is not None else "")) if o.only_in else ""
            vals = (o.category, *ph, at, bt, o.ratio, o.gap_us, o.a.count, o.b.count,
                    a and a.share, b and b.share, a and a.median_us, b and b.median_us, only)
            cells = (literal(o.category), *(literal(p) for p in ph),
                     _num(fmt_us(at)), _num(fmt_us(bt)),
                     _num(fmt_ratio(o.ratio)), _num(fmt_gap(o.gap_us)), _num(f"{o.a.count:,}"), _num(f"{o.b.count:,}"),
                     _num(fmt_pct(a.share) if a else "—"), _num(fmt_pct(b.share) if b else "—"),
                     _num(fmt_us(a.median_us) if a else "—"), _num(fmt_us(b.median_us) if b else "—"),
                     Text(only))
            # a name wider than its column wraps at a word (`Attention (pr…` said less)
            rows.append(Row(f"{o.category}|{o.phase}", vals, cells, payload=o, style=_row_style(o.gap_us),
                            search=o.category.lower(), height=1 if len(o.category) <= w["category"] else None))
        return rows

    g = 3 + len(phase_col)
    sorts = compare_sorts(g + 1, g - 2, g - 1, 0, "category")
    return TableSpec("operations", cols, build, select=None, default_sort="gap", sorts=sorts, fixed=1)


def operations_hint(comp: Comparison) -> Text:
    t = Text()
    if comp.basis == "per_pass":
        t.append(f"per pass: A {comp.a.passes} passes, B {comp.b.passes}", style="bold")
        t.append("   ")
    example = next(((o, i) for o in comp.operations if (i := operation_counterpart(comp, o)) is not None), None)
    if example is not None:   # what `B #2` in the Only-in column says
        o, i = example
        other = SIDE_LETTER["a" if o.only_in == "b" else "b"]
        t.append(f"Only in {SIDE_LETTER[o.only_in]} #{i + 1}: {other} runs it unfused (fusion #{i + 1})", style=DIM)
        t.append(" · ", style=DIM)
    t.append("Enter: the operation's kernels on each side", style=DIM)
    return t


def stats_grid(stats: dict[str | None, Any]) -> Table:
    """count · total · min · median · p95 · max · share, one line per side ("a", "b"; None: one trace,
    no label). The values are Stats (kerneldiff.core.analysis.stats)."""
    g = Table.grid(padding=(0, 2))
    g.add_column()
    for _ in range(7):
        g.add_column(justify="right")
    g.add_row(Text(""), *[Text(h, style="bold") for h in ("count", "total", "min", "median", "p95", "max", "% GPU")])
    for side, s in stats.items():
        label = Text("") if side is None else side_text(side)
        if not s.count:
            g.add_row(label, Text("—"), *[Text("") for _ in range(6)])
            continue
        g.add_row(label, Text(f"{s.count:,}"), Text(fmt_us(s.total_us)), Text(fmt_us(s.min_us)),
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
    found = operation_counterpart(comp, o)
    if found is not None:
        f = comp.fusions[found]
        other = SIDE_LETTER[f.component_side]
        head.append(f"\n{other} runs the same work unfused: ")
        head.append_text(literal(", ".join(f.component_categories), "bold"))
        head.append_text(literal(f" ({f.module})" if f.module else ""))
        head.append(f" — fusion #{found + 1}", style=DIM)
    g = labelled_grid()
    for side in ("a", "b"):
        prefix = f"{SIDE_LETTER[side]} "
        ops = o.top_cpu_ops.get(side) or []
        if ops:
            g.add_row(Text(f"{prefix}cpu_ops"), literal(", ".join(clean(x) for x in ops)))
        for i, name in enumerate(o.examples.get(side) or []):
            g.add_row(Text(f"{prefix}kernels" if i == 0 else ""), literal(readable(name)))
    return Group(head, stats_grid({"a": o.a, "b": o.b}), g)


# --- aligned kernel pairs -------------------------------------------------------------------

def pairs_spec(al: LayerAlignment) -> TableSpec:
    """A layer's aligned kernels in the order a pass runs them. Every figure is per launch and a
    mean over the passes the pairs come from: A/B = A mean / B mean, Gap = A mean − B mean."""
    widest = max((len(pair_category(p)) for p in al.pairs), default=8)
    cols = [Column("pos", "#", "int", 3), Column("a_name", "A kernel", "name", min_width=14),
            Column("b_name", "B kernel", "name", min_width=14), Column("a_mean", "A mean", "us", 7),
            Column("b_mean", "B mean", "us", 7), Column("ratio", "A/B", "ratio", 6), Column("gap", "Gap", "gap", 8),
            Column("note", "G", "text", 1), Column("category", "Category", "text", max(8, min(widest, 28)))]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        # each column's names told apart from that column's (A's hip and B's nv kernel may read alike)
        short_a = shortener([p.a_name for p in al.pairs], w["a_name"])
        short_b = shortener([p.b_name for p in al.pairs], w["b_name"])
        for p in al.pairs:
            a = p.a.mean_us if p.a_name is not None else None
            b = p.b.mean_us if p.b_name is not None else None
            note = pair_mark(p)
            cat = pair_category(p)
            vals = (p.position, p.a_name, p.b_name, a, b, p.ratio, p.gap_us, note, cat)
            cells = (_num(str(p.position)), _name_cell(p.a_name, w["a_name"], short_a), _name_cell(p.b_name, w["b_name"], short_b),
                     _num(fmt_us(a)), _num(fmt_us(b)), _num(fmt_ratio(p.ratio)), _num(fmt_gap(p.gap_us)),
                     span(note, "bold" if note not in ("=", "") else DIM), literal(cut(cat, cols[-1].width)))
            search = searchable(p.a_name, p.b_name, p.a_category, p.b_category)
            rows.append(Row(str(p.position), vals, cells, payload=p, style=_row_style(p.gap_us), search=search))
        return rows

    sorts = compare_sorts(6, 3, 4, 1, "a_name", ("a_mean", "b_mean"), alt=2)
    return TableSpec(f"layer{al.layer}_pairs", cols, build, sorts=sorts, fixed=3)   # #, both names


def pair_category(p: KernelPair) -> str:
    """One category for the row: the shared one, or A's → B's when they differ."""
    a, b = p.a_category, p.b_category
    if a and b and a != b:
        return f"{a} → {b}"
    return a or b or ""


def pair_mark(p: KernelPair) -> str:
    """The pairs table's G column: the op-level fusion group (1-9, + beyond), else F for a fusion
    note, = for the same kernel on both sides; the line under the table says which it is."""
    return group_mark(p) or ("F" if p.fusion_note else ("=" if p.same_kernel else ""))


def group_mark(p: KernelPair) -> str:
    """The pairs table's mark of an op-level fusion group: 1-9 (its number in the layer), "+" beyond."""
    if p.group < 0:
        return ""
    return str(p.group + 1) if p.group < 9 else "+"


def group_text(p: KernelPair, comp: Comparison | None, layer: int | None) -> str:
    """"group 1 = fusion #1 (RMSNorm): 1 kernel on B for 9 on A", "" outside a group."""
    if p.group < 0 or comp is None or layer is None:
        return ""
    al = comp.alignment(layer)
    if al is None or p.group >= len(al.groups):
        return ""
    g = al.groups[p.group]
    f = comp.fusions[g.finding] if 0 <= g.finding < len(comp.fusions) else None
    which = f" = fusion #{g.finding + 1} ({f.fused_category})" if f is not None else ""
    return f"group {group_mark(p)}{which}: {g.note}"


def pair_status(p: KernelPair, width: int = 80, comp: Comparison | None = None, layer: int | None = None) -> Text:
    """Under the pairs table: the highlighted pair's names as wide as the screen allows, categories,
    fusion note and the op-level fusion group the pair belongs to."""
    t = Text()
    for side in ("a", "b"):
        name = getattr(p, f"{side}_name")
        cat = getattr(p, f"{side}_category")
        t.append_text(side_text(side))
        t.append(" ")
        tail = f"  ({cat})" if cat else ""
        if name is None:
            t.append(NONE_CELL, style=f"{DIM} italic")
        else:
            t.append(literal(shorten(name, max(width - 4 - len(tail), 10))))
        t.append(tail, style=DIM)
        t.append("\n")
    mark = pair_mark(p)
    if mark:
        t.append(f"G {mark}", style="bold")
        t.append(": ", style=DIM)
    if p.same_kernel:
        t.append("same kernel", style=DIM)
    group = group_text(p, comp, layer)
    if group:
        t.append("  " if p.same_kernel else "")
        t.append(literal(group, "bold"))
    elif p.fusion_note:
        t.append("  " if p.same_kernel else "")
        t.append(literal(p.fusion_note, "bold"))
    return t


# --- fusion ---------------------------------------------------------------------------------

def _kind_text(f: FusionFinding) -> str:
    """The finding's kind, with the phase its passes ran in where phase `all` spans several."""
    return f"{KIND_LABEL.get(f.kind, f.kind)} {f.phase}" if f.phase else KIND_LABEL.get(f.kind, f.kind)


def fusion_spec(comp: Comparison) -> TableSpec:
    phased = any(f.phase for f in comp.fusions)   # the kind says the phase: "ops prefill" (11 columns)
    cols = [Column("n", "#", "int", 3), Column("fused_side", "Fused", "text", 5),
            Column("kind", "Kind", "text", 11 if phased else 8),
            Column("category", "Fused op", "name", min_width=10 if phased else 14,
                   max_width=max((len(f.fused_category) for f in comp.fusions), default=14)),
            Column("cost", "Comp. cost", "us", 10), Column("measured", "Measured", "gap", 9),
            Column("saving", "Est.", "us", 9), Column("conf", "Conf.", "pct", 5)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        for i, f in enumerate(comp.fusions, 1):
            saving = f.estimated_saving.total_all_us if f.estimated_saving else None
            vals = (i, SIDE_LETTER.get(f.fused_side, f.fused_side), _kind_text(f), f.fused_category,
                    f.component_cost_us, f.measured_saving_us, saving, f.confidence)
            fused = span("—", DIM) if f.kind == "launch_count" else \
                span(SIDE_LETTER.get(f.fused_side, "?"), f"bold {SIDE_STYLE.get(f.fused_side, '')}")
            cells = (_num(str(i)), fused,
                     Text(_kind_text(f)), literal(cut(f.fused_category, w["category"])),
                     _num(fmt_us(f.component_cost_us)), _num(fmt_gap(f.measured_saving_us)),
                     _num(fmt_us(saving)), _num(f"{f.confidence:.0%}"))
            search = " ".join([f.fused_category, f.module, *f.fused_kernels, *f.component_kernels,
                               *f.component_categories, *f.fused_ops, *f.component_ops]).lower()
            rows.append(Row(str(i), vals, cells, payload=f, search=search))
        return rows

    sorts = {"gap": Sort("gap", lambda r: r.values[5], ("measured",), True,
                         "largest measured saving first (components' time − fused time)"),
             "time": Sort("time", lambda r: r.values[4], ("cost",), True, "largest component cost first"),
             "name": name_sort(3, "category")}
    return TableSpec("fusion", cols, build, select="1" if comp.fusions else None, sorts=sorts)


def fusion_evidence(f: FusionFinding, comp: Comparison) -> Group:
    fs, cs = f.fused_side, f.component_side
    if f.kind == "launch_count":   # extra memsets: nothing is fused
        head = span("Not a fusion: more launches on ", "bold")
        head.append_text(side_text(cs, comp))
    else:
        head = span("Fused on ", "bold")
        head.append_text(side_text(fs, comp))
    head.append(f"   {KIND_LABEL.get(f.kind, f.kind)}{', ' + f.phase if f.phase else ''}, confidence {f.confidence:.0%}",
                style=DIM)
    parts: list[Any] = [head, literal(f.evidence)]
    g = Table.grid(padding=(0, 1))
    g.add_column(no_wrap=True)
    g.add_column(overflow="fold")
    if f.fused_group or f.component_group:
        _group_rows(g, f)
        _saving_rows(g, f)
        parts.append(g)
        return Group(*parts)
    fused_label = side_text(fs)
    fused_label.append(" runs")
    if f.fused_kernels:
        for i, k in enumerate(f.fused_kernels):
            g.add_row(fused_label if i == 0 else Text(""), literal(readable(k)))
    else:
        g.add_row(fused_label, Text("fewer kernels (no single fused kernel)", style=DIM))
    g.add_row(Text("  category"), literal(f.fused_category))
    comp_label = side_text(cs)
    comp_label.append(" runs")
    for i, k in enumerate(f.component_kernels or ["—"]):
        g.add_row(comp_label if i == 0 else Text(""), literal(readable(k)))
    if f.component_categories:
        g.add_row(Text("  categories"), literal(", ".join(f.component_categories)))
    g.add_row(Text("occurrences"), Text(f"{f.occurrences:,}"))
    cost = side_text(cs)
    if f.kind in ("count_imbalance", "launch_count"):     # the finding holds the extra launches only (see fusion.py)
        cost.append(f" {f.occurrences} extra launches {fmt_us(f.component_cost_us)}; the rest of the category's "
                    "gap is speed, not counted")
    else:
        cost.append(f" components {fmt_us(f.component_cost_us)}   ")
        cost.append_text(side_text(fs))
        cost.append(f" fused {fmt_us(f.fused_cost_us)}")
    g.add_row(Text("measured"), cost)
    _saving_rows(g, f, measured=False)
    parts.append(g)
    return Group(*parts)


def _group_rows(g: Table, f: FusionFinding) -> None:
    """An op-level finding: both sides' kernels of one occurrence, in order, with the operations
    behind each and its time per occurrence."""
    for side, kernels in ((f.fused_side, f.fused_group), (f.component_side, f.component_group)):
        head = side_text(side)
        head.append(" runs")
        short = shortener([k.name for k in kernels], 56)   # two `Mul ew` of other dtypes read apart
        for i, k in enumerate(kernels):
            line = Text()
            line.append(f"{fmt_us(k.mean_us):>8}  ")
            line.append_text(literal(", ".join(k.ops) if k.ops else k.category, "bold"))
            line.append("  ")
            line.append_text(literal(short(k.name), DIM))
            g.add_row(head if i == 0 else Text(""), line)
        total = Text(f"{fmt_us(sum(k.mean_us for k in kernels)):>8}  {len(kernels)} kernel"
                     f"{'s' if len(kernels) != 1 else ''} per occurrence", style=DIM)
        g.add_row(Text(""), total)
    if f.module:
        g.add_row(Text("module"), literal(f.module))
    where = f"{f.occurrences_per_pass} per pass over {f.passes} pass{'es' if f.passes != 1 else ''}"
    if f.layers:
        where += f", layers {f.layers[0]}–{f.layers[-1]}" if len(f.layers) > 1 else f", layer {f.layers[0]}"
    g.add_row(Text("occurrences"), Text(f"{f.occurrences} ({where})"))
    cost = side_text(f.component_side)
    cost.append(f" components {fmt_us(f.component_cost_us)}   ")
    cost.append_text(side_text(f.fused_side))
    cost.append(f" fused {fmt_us(f.fused_cost_us)}")
    g.add_row(Text("measured"), cost)


def _saving_rows(g: Table, f: FusionFinding, measured: bool = True) -> None:
    """The measured saving first, then the benefit model that explains it (capped at the components' time)."""
    if measured or f.measured_saving_us:
        per = f" ({fmt_gap(f.measured_saving_us / f.passes)} per pass)" if f.passes else ""
        g.add_row(Text("saving"), Text(f"{fmt_gap(f.measured_saving_us)} measured{per}: components' time − fused time",
                                       style="bold"))
    s = f.estimated_saving
    if s is None:
        g.add_row(Text("est. saving"), Text("not estimated", style=DIM))
    else:
        gate = "passes the minimum-gain gate" if s.passes_gate else "below the minimum-gain gate"
        g.add_row(Text("est. saving"), Text(f"{fmt_us(s.total_us)} per occurrence, {fmt_us(s.total_all_us)} in all ({gate})"))
        if s.capped:
            said = f" ({fmt_us(s.model_all_us)} in all)" if s.model_all_us is not None else ""
            g.add_row(Text(""), Text(f"only the measured cost: the model says more{said} than the component kernels "
                                     "take, so the estimate is their measured time", style="bold"))
        per_launch = s.params.dispatch_ns if s.params else None
        launch = f" at {fmt_us(per_launch / 1e3)} each" if per_launch is not None else ""
        g.add_row(Text(""), Text(f"{s.launches_saved} launches saved{launch} → {fmt_us(s.launch_ns / 1e3)}", style=DIM))
        g.add_row(Text(""), Text(f"{s.sync_points_saved} sync points saved → {fmt_us(s.sync_ns / 1e3)}", style=DIM))
        if s.device_bytes_saved is None:
            g.add_row(Text(""), Text(f"device traffic: the shapes do not give its bytes; priced from the memory-bound "
                                     f"kernels' time → {fmt_us(s.traffic_ns / 1e3)}", style=DIM))
        else:
            g.add_row(Text(""), Text(f"{fmt_bytes(s.device_bytes_saved)} device traffic saved (from the shapes) → "
                                     f"{fmt_us(s.traffic_ns / 1e3)}", style=DIM))
        g.add_row(Text(""), Text(f"{fmt_bytes(s.readback_bytes_saved)} host read-back saved → {fmt_us(s.readback_ns / 1e3)}",
                                 style=DIM))
        if s.params and s.params.dispatch_basis:
            g.add_row(Text("launch cost"), literal(s.params.dispatch_basis, DIM))
        if s.params:
            g.add_row(Text("model"), literal(", ".join(f"{k}={v}" for k, v in s.params.to_dict().items() if k != "dispatch_basis"), DIM))


# --- same kernels ---------------------------------------------------------------------------

def same_kernels_spec(comp: Comparison) -> TableSpec:
    """Kernels both traces run by name. A mean, B mean and A/B are per launch; Total gap is the time
    the kernel costs A more than B over the phase (A total − B total: counts can differ)."""
    items = comp.same_kernels
    cols = [Column("name", "Kernel", "name", min_width=16), Column("a_count", "A n", "int", 5),
            Column("b_count", "B n", "int", 5), Column("a_mean", "A mean", "us", 8),
            Column("b_mean", "B mean", "us", 8), Column("ratio", "A/B", "ratio", 6),
            Column("gap", "Total gap", "gap", 9), Column("category", "Category", "text", 12)]

    def build(w: dict[str, int]) -> list[Row]:
        short = shortener([k.name for k in items], w["name"])
        # cells made when a row is first drawn: two traces can share 100,000 distinct kernels
        return [Row(f"{i}", (k.name, k.a.count, k.b.count, k.a.mean_us, k.b.mean_us, k.ratio, k.gap_us, k.category),
                    lambda k=k: (literal(short(k.name)), _num(f"{k.a.count:,}"), _num(f"{k.b.count:,}"),
                                 _num(fmt_us(k.a.mean_us)), _num(fmt_us(k.b.mean_us)), _num(fmt_ratio(k.ratio)),
                                 _num(fmt_gap(k.gap_us)), literal(cut(k.category, 12))),
                    payload=k, style=_row_style(k.gap_us), search=partial(searchable, k.name, k.category))
                for i, k in enumerate(items)]

    sorts = {"gap": gap_sort(6, words="largest |total gap| first"),
             "time": Sort("time", lambda r: r.payload.a.total_us + r.payload.b.total_us, (), True,
                          "largest A + B total first"),
             "name": name_sort(0, "name")}
    return TableSpec("same_kernels", cols, build, default_sort="gap", sorts=sorts, fixed=1)


def same_kernels_hint() -> Text:
    return Text("A/B: of the means (per launch) · Total gap: A total − B total", style=DIM)


def same_kernel_detail(k: SameKernel, comp: Comparison) -> Group:
    head = literal(readable(k.name), "bold")
    sub = Text()
    sub.append(literal(k.category))
    sub.append(f"   A/B {fmt_ratio(k.ratio)} (means)   total gap {fmt_gap(k.gap_us)}")
    return Group(head, sub, stats_grid({"a": k.a, "b": k.b}))


# --- warnings -------------------------------------------------------------------------------

def warnings_spec(warnings: list[str]) -> TableSpec:
    """One row per warning, wrapped to the width (never cut)."""
    cols = [Column("n", "#", "int", 3), Column("warning", "Warning", "name", min_width=20,
                                                max_width=max((len(w) for w in warnings), default=20))]

    def build(w: dict[str, int]) -> list[Row]:
        return [Row(str(i), (i, s), (_num(str(i)), literal(s)), payload=s, search=s.lower(), height=None)
                for i, s in enumerate(warnings, 1)]

    return TableSpec("warnings", cols, build)


# --- the kernels behind a row, on each side ------------------------------------------------------

def side_kernels_spec(name: str, sides: dict[str, list], totals: dict[str, float]) -> TableSpec:
    """Both sides' kernels (kerneldiff.core.analysis.trace_totals.KernelTotal) in one table, A's then B's,
    each largest first; Share is of that side's time in the row drilled into (`totals`)."""
    items = [(side, k) for side in ("a", "b") for k in sides.get(side, [])]
    cols = [Column("side", "", "text", 1), Column("name", "Kernel", "name", min_width=16,
                                                  max_width=max((len(readable(k.name)) for _s, k in items), default=16)),
            Column("count", "Count", "int", 6), Column("total", "Total", "us", 8), Column("mean", "Mean", "us", 8),
            Column("share", "% row", "pct", 6), Column("category", "Category", "text", 12)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        short = shortener([k.name for _s, k in items], w["name"])

        def cells(side: str, k, share: float | None) -> tuple:
            st = k.stats
            return (span(SIDE_LETTER[side], f"bold {SIDE_STYLE[side]}"), literal(short(k.name)),
                    _num(f"{st.count:,}"), _num(fmt_us(st.total_us)), _num(fmt_us(st.mean_us)),
                    _num(fmt_pct(share)), literal(cut(k.category, 12)))
        # cells made when a row is first drawn (every column has a width): an operation can hold
        # 100,000 distinct kernels
        for i, (side, k) in enumerate(items):
            st = k.stats
            share = st.total_us / totals[side] if totals.get(side) else None
            rows.append(Row(f"{side}{i}", (SIDE_LETTER[side], k.name, st.count, st.total_us, st.mean_us, share, k.category),
                            partial(cells, side, k, share),
                            payload=(side, k), search=partial(_side_search, k, side)))
        return rows

    sorts = {"time": Sort("time", lambda r: r.values[3], ("total",), True, "largest total first"),
             "name": name_sort(1, "name")}
    return TableSpec(name, cols, build, sorts=sorts, fixed=2)


# --- timeline -------------------------------------------------------------------------------

def busy_idle_bar(busy: float | None, span_us: float | None, scale: float, width: int, side: str) -> Text:
    """One side's pass as a bar: '█' busy, '░' idle (the span's rest), `scale` (µs) across `width`."""
    if busy is None or span_us is None or scale <= 0 or width <= 0:
        return Text(" " * max(width, 0))
    n_span = min(width, round(width * span_us / scale))
    n_busy = min(n_span, round(width * busy / scale))
    t = Text()
    t.append("█" * n_busy, style=SIDE_STYLE[side])
    t.append("░" * (n_span - n_busy), style=DIM)
    t.append(" " * (width - n_span))
    return t


def timeline_passes(comp: Comparison) -> list[tuple[int, PassTimeline | None, PassTimeline | None]]:
    """The passes of both sides' timelines, paired by their order in the phase (n, A pass, B pass)."""
    pa = comp.a.timeline.passes if comp.a.timeline else ()
    pb = comp.b.timeline.passes if comp.b.timeline else ()
    return [(i, pa[i] if i < len(pa) else None, pb[i] if i < len(pb) else None)
            for i in range(max(len(pa), len(pb)))]


def pass_number(a: PassTimeline | None, b: PassTimeline | None) -> int:
    """The one number a pass has everywhere (explorer, text, JSON, CSV): its index among all the
    trace's passes, from 0, whatever the phase filter (side A's, B's when A has no such pass)."""
    return int((a or b).pass_)


def _idle_share(p: PassTimeline | None) -> float | None:
    return p.idle_us / p.span_us if p and p.span_us else None


def timeline_spec(comp: Comparison) -> TableSpec:
    """Per forward pass: wall span, busy and idle of each side, the largest |span gap| first.
    The bars of a row share its longer span as their scale (prefill and decode passes differ by far)."""
    passes = timeline_passes(comp)
    cols = [Column("pass", "Pass", "int", 6), Column("a_span", "A span", "us", 8), Column("b_span", "B span", "us", 8),
            Column("gap", "Gap", "gap", 9), Column("a_idle_pct", "A idle", "pct", 6),
            Column("b_idle_pct", "B idle", "pct", 6),
            Column("a_bar", "A ░idle", "bar", None, 10), Column("b_bar", "B ░idle", "bar", None, 10),
            Column("a_busy", "A busy", "us", 8), Column("b_busy", "B busy", "us", 8),
            Column("a_idle", "A idle µs", "us", 9), Column("b_idle", "B idle µs", "us", 9),
            Column("a_launch", "A launch-bd", "us", 11), Column("b_launch", "B launch-bd", "us", 11),
            Column("a_sync", "A sync", "us", 8), Column("b_sync", "B sync", "us", 8),
            Column("a_kernels", "A kernels", "int", 9), Column("b_kernels", "B kernels", "int", 9)]

    figures = attrgetter("span_us", "busy_us", "idle_us", "launch_bound_us", "sync_us", "kernels")
    absent = (None,) * 6

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        for i, a, b in passes:
            n = pass_number(a, b)
            gap = a.span_us - b.span_us if a and b else None
            ai, bi = _idle_share(a), _idle_share(b)
            fa = figures(a) if a else absent
            fb = figures(b) if b else absent
            scale = max(fa[0] if a else 0.0, fb[0] if b else 0.0)   # the longer span of the two
            vals = (n, fa[0], fb[0], gap, ai, bi, None, None,
                    fa[1], fb[1], fa[2], fb[2], fa[3], fb[3], fa[4], fb[4], fa[5], fb[5])
            na, nb = a.name if a else "", b.name if b else ""
            names = f"{na} {nb}" if na and nb else na or nb
            # cells made when a row is first drawn (every column has a width): a long decode run
            # holds 100,000 passes
            rows.append(Row(str(n), vals, partial(cells, n, a, b, vals, gap, ai, bi, scale, w), payload=(a, b),
                            style=_row_style(gap or 0), search=f"pass {n} {names}".lower()))
        return rows

    def cells(n, a, b, vals, gap, ai, bi, scale, w) -> tuple:
        return (_num(f"{n} {kind_marks(a, b)}".rstrip()), _num(fmt_us(vals[1])), _num(fmt_us(vals[2])),
                _num(fmt_gap(gap)), _num(fmt_pct(ai)), _num(fmt_pct(bi)),
                busy_idle_bar(vals[8], vals[1], scale, w["a_bar"], "a"),
                busy_idle_bar(vals[9], vals[2], scale, w["b_bar"], "b"),
                *(_num(fmt_us(v)) for v in vals[8:16]),
                *(_num("—" if v is None else f"{v:,}") for v in vals[16:18]))

    # largest |span gap| first, as the CLI's timeline; `t`: the longer of the two spans, which is
    # neither column alone, so no header carries the arrow (the notification says the order)
    sorts = {"time": Sort("time", lambda r: max((v for v in r.values[1:3] if v is not None), default=None),
                          (), True, "the slowest pass (the longer of A span and B span) first"),
             "gap": gap_sort(3, words="largest |span gap| first"),
             "name": Sort("pass", lambda r: r.values[0], ("pass",), False, "in order")}
    return TableSpec("timeline", cols, build, default_sort="gap", sorts=sorts, fixed=1)


# a pass that is not steady (kerneldiff.core.analysis.pass_kinds), marked after its number
KIND_MARKS = {"warmup": "w", "capture": "c", "compile": "k"}
KIND_WORDS = {"warmup": "warm-up", "capture": "CUDA-graph capture", "compile": "compile"}


def kind_marks(a: PassTimeline | None, b: PassTimeline | None) -> str:
    """The marks of a pass row's kinds that are not steady (either side's), in KIND_MARKS order."""
    kinds = {p.kind for p in (a, b) if p}
    return "".join(m for k, m in KIND_MARKS.items() if k in kinds)


def pass_crumb(n: int, a: PassTimeline | None, b: PassTimeline | None) -> str:
    """The pass timeline's breadcrumb: `Pass 1`, with the kinds that are not steady (`Pass 1 (CUDA-graph
    capture)`)."""
    kinds = {p.kind for p in (a, b) if p}
    words = [w for k, w in KIND_WORDS.items() if k in kinds]
    return f"Pass {n}" + (f" ({', '.join(words)})" if words else "")


def timeline_hint(comp: Comparison) -> Text:
    """The line over the passes: the marks of the passes that are not steady, or what was left out
    (first: the line is cut at the pane's width), then the phase's wall clock against its kernel time."""
    t = Text()
    if comp.a.timeline is None and comp.b.timeline is None:
        t.append("no timeline in this comparison", style=DIM)
        return t
    kinds = {p.kind for s in (comp.a, comp.b) for p in (s.timeline.passes if s.timeline else ())}
    marked = [f"{m} {KIND_WORDS[k]}" for k, m in KIND_MARKS.items() if k in kinds]
    if marked:
        t.append(f"marks: {', '.join(marked)} (not steady)  ", style=DIM)
    left = [f"{lab} " + ", ".join(k if n == 1 else f"{k} ×{n}" for k, n in s.passes_left_out.kinds.items())
            for lab, s in (("A", comp.a), ("B", comp.b)) if getattr(s, "passes_left_out", None)]
    if left:
        t.append(f"left out: {'; '.join(left)} (--all-passes keeps them)  ", style=DIM)
    w = comp.wall
    if w is not None:
        t.append(f"wall A {fmt_us(w.a_wall_us)} B {fmt_us(w.b_wall_us)} A/B {fmt_ratio(w.wall_ratio)} "
                 f"(kernels {fmt_ratio(w.kernel_ratio)})  idle A {fmt_us(w.a_idle_us)} B {fmt_us(w.b_idle_us)}")
        if w.basis == "per_pass":
            t.append(" per pass", style=DIM)
    return t
