"""One trace's overview (browse) → table specs and detail text. Presentation only: every number
was computed by kerneldiff.core.analysis.trace_totals; this module formats and lays it out.
"""

from __future__ import annotations

from functools import partial

from rich.console import Group
from rich.text import Text

from kerneldiff.core.session import KernelTotal, LayerTotal, OperationTotal, StepTotal, TraceOverview

from .text import DIM, SIDE_STYLE, clean, cut, fmt_pct, fmt_us, literal, one_bar, readable, shortener, span
from .views import CHART_WIDTH, labelled_grid, name_sort, searchable, stats_grid
from .widgets.result_table import Column, Row, Sort, TableSpec


def _time(i: int, column: str) -> Sort:
    return Sort("time", lambda r: r.values[i], (column,), True, "largest first")


def _num(s: str) -> Text:
    return span(s, "", "right")


def _count(n: float) -> str:
    return f"{n:.0f}" if float(n).is_integer() else f"{n:.2f}"


# --- operations ---------------------------------------------------------------------------------

def operations_spec(ov: TraceOverview, side: str = "a") -> TableSpec:
    ops = ov.operations
    scale = max((o.stats.total_us for o in ops), default=0.0)
    widest = max((len(o.category) for o in ops), default=14)
    cols = [Column("category", "Operation", "name", min_width=min(14, max(widest, 9)), max_width=max(widest, 9)),
            Column("count", "Count", "int", 6), Column("total", "Total", "us", 8),
            Column("mean", "Mean", "us", 8), Column("median", "Median", "us", 8),
            Column("share", "Share", "pct", 6), Column("chart", "Time", "bar", 10)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        for o in ops:
            s = o.stats
            vals = (o.category, s.count, s.total_us, s.mean_us, s.median_us, s.share, None)
            cells = (literal(o.category), _num(f"{s.count:,}"), _num(fmt_us(s.total_us)),
                     _num(fmt_us(s.mean_us)), _num(fmt_us(s.median_us)), _num(fmt_pct(s.share)),
                     one_bar(s.total_us, scale, 10, SIDE_STYLE[side]))
            # a name wider than its column wraps at a word (`Attention (prefil…` said less)
            rows.append(Row(o.category, vals, cells, payload=o, search=o.category.lower(),
                            height=1 if len(o.category) <= w["category"] else None))
        return rows

    return TableSpec("operations", cols, build, default_sort="time",
                     sorts={"time": _time(2, "total"), "name": name_sort(0, "category")}, fixed=1)


def operation_detail(o: OperationTotal, ov: TraceOverview) -> Group:
    head = literal(o.category, "bold")
    if ov.phase != "all":
        head.append(f"  phase {ov.phase}", style=DIM)
    names = o.kernel_names
    head.append(f"   {names} kernel name{'s' if names != 1 else ''}", style=DIM)
    g = labelled_grid()
    if o.top_cpu_ops:
        g.add_row(Text("cpu_ops"), literal(", ".join(clean(x) for x in o.top_cpu_ops)))
    for i, name in enumerate(o.top_kernels):
        g.add_row(Text("kernels" if i == 0 else ""), literal(readable(name)))
    return Group(head, stats_grid({None: o.stats}), g)


# --- layers -------------------------------------------------------------------------------------

def layers_spec(ov: TraceOverview, side: str = "a") -> TableSpec:
    layers = ov.layers
    scale = max((r.total_us for r in layers), default=0.0)
    cols = [Column("layer", "Layer", "int", 5), Column("total", "Total", "us", 8),
            Column("kernels", "Kernels", "int", 7), Column("passes", "Passes", "int", 6),
            Column("median", "Med/pass", "us", 8), Column("p90", "p90/pass", "us", 8),
            Column("share", "Share", "pct", 6), Column("chart", "Time", "bar", None, CHART_WIDTH)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        for r in layers:
            vals = (r.layer, r.total_us, r.kernels, r.passes, r.median_us, r.p90_us, r.share, None)
            cells = (_num(str(r.layer)), _num(fmt_us(r.total_us)), _num(f"{r.kernels:,}"), _num(f"{r.passes:,}"),
                     _num(fmt_us(r.median_us)), _num(fmt_us(r.p90_us)), _num(fmt_pct(r.share)),
                     one_bar(r.total_us, scale, w["chart"], SIDE_STYLE[side]))
            rows.append(Row(str(r.layer), vals, cells, payload=r, search=f"layer {r.layer}"))
        return rows

    sorts = {"time": _time(1, "total"), "name": Sort("layer", lambda r: r.values[0], ("layer",), False, "in order")}
    # in order from the top (layer 0 in view); L opens the busiest
    return TableSpec("layers", cols, build, default_sort=(0, False), sorts=sorts, fixed=1)


def busiest_layer(ov: TraceOverview) -> int | None:
    return max(ov.layers, key=lambda r: r.total_us).layer if ov.layers else None


def layers_hint(ov: TraceOverview) -> Text:
    if not ov.layers:
        return Text("no transformer layers were found (see Warnings); the other tabs still show the trace", style=DIM)
    return Text("Enter: the layer's kernels", style=DIM)


def layer_summary(r: LayerTotal | None, layer: int, phase: str) -> Text:
    t = span(f"Layer {layer}", "bold")
    if r is None:
        t.append(f"  no kernels in phase {phase}", style=DIM)
        return t
    passes = f"{r.passes} pass" if r.passes == 1 else f"{r.passes} passes"
    t.append(f"   {fmt_us(r.total_us)} over {passes} · {r.kernels_per_pass} kernels/pass"
             f" · median {fmt_us(r.median_us)}/pass   phase {phase}")
    return t


def _cat_width(kernels) -> int:
    """The Category column as wide as its longest category (`Attention (prefill)`), 8 to 24."""
    return max(8, min(max((len(k.category) for k in kernels), default=8), 24))


def layer_kernels_spec(layer: int, kernels: list[KernelTotal]) -> TableSpec:
    """A layer's kernels in the order a pass runs them."""
    cols = [Column("pos", "#", "int", 3), Column("kernel", "Kernel", "name", min_width=16,
                                                  max_width=max((len(k.name) for k in kernels), default=16)),
            Column("category", "Category", "text", cw := _cat_width(kernels)), Column("per_pass", "/pass", "num", 5),
            Column("median", "Median", "us", 8), Column("total", "Total", "us", 8), Column("share", "Share", "pct", 6)]

    def build(w: dict[str, int]) -> list[Row]:
        short = shortener([k.name for k in kernels], w["kernel"])

        def cells(k: KernelTotal) -> tuple:
            s = k.stats
            return (_num(str(k.position)), literal(short(k.name)), literal(cut(k.category, cw)),
                    _num(_count(k.per_pass)), _num(fmt_us(s.median_us)), _num(fmt_us(s.total_us)),
                    _num(fmt_pct(s.share)))
        # cells made when a row is first drawn (every column has a width)
        return [Row(k.name, (k.position, k.name, k.category, k.per_pass, k.stats.median_us, k.stats.total_us,
                             k.stats.share),
                    partial(cells, k), payload=k, search=partial(searchable, k.name, k.category))
                for k in kernels]

    sorts = {"time": _time(5, "total"), "name": name_sort(1, "kernel")}
    return TableSpec(f"layer{layer}_kernels", cols, build, sorts=sorts, fixed=1)


# --- kernels ------------------------------------------------------------------------------------

def kernels_spec(ov: TraceOverview) -> TableSpec:
    items = ov.kernel_totals
    cols = [Column("name", "Kernel", "name", min_width=16, max_width=max((len(k.name) for k in items), default=16)),
            Column("category", "Category", "text", cw := _cat_width(items)), Column("count", "Count", "int", 6),
            Column("total", "Total", "us", 8), Column("mean", "Mean", "us", 8), Column("share", "Share", "pct", 6)]

    def build(w: dict[str, int]) -> list[Row]:
        short = shortener([k.name for k in items], w["name"])
        # cells made when a row is first drawn: a trace can hold 100,000 distinct kernels
        return [Row(k.name, (k.name, k.category, k.stats.count, k.stats.total_us, k.stats.mean_us, k.stats.share),
                    lambda k=k: (literal(short(k.name)), literal(cut(k.category, cw)), _num(f"{k.stats.count:,}"),
                                 _num(fmt_us(k.stats.total_us)), _num(fmt_us(k.stats.mean_us)),
                                 _num(fmt_pct(k.stats.share))),
                    payload=k, search=partial(searchable, k.name, k.category))
                for k in items]

    return TableSpec("kernels", cols, build, default_sort="time",
                     sorts={"time": _time(3, "total"), "name": name_sort(0, "name")}, fixed=1)


def kernel_detail(k: KernelTotal) -> Group:
    sub = literal(k.category)
    if k.rule:
        sub.append(f"   rule {clean(k.rule)}", style=DIM)
    sub.append("   Enter: launches, cpu_op and Python stack", style=DIM)
    return Group(literal(readable(k.name), "bold"), sub, stats_grid({None: k.stats}))


# --- steps (the timeline) -----------------------------------------------------------------------

def steps_spec(ov: TraceOverview) -> TableSpec:
    items = ov.steps
    cols = [Column("step", "#", "int", 4), Column("phase", "Phase", "text", 7), Column("start", "Start", "us", 8),
            Column("span", "Span", "us", 8), Column("kernels", "Kernels", "int", 7), Column("gpu", "GPU time", "us", 8),
            Column("busy", "Busy", "pct", 5),
            Column("name", "Step", "name", min_width=8, max_width=max((len(s.name) for s in items), default=8))]

    def build(w: dict[str, int]) -> list[Row]:
        def cells(s: StepTotal) -> tuple:
            return (_num(str(s.index)), literal(s.phase), _num(fmt_us(s.start_us)), _num(fmt_us(s.span_us)),
                    _num(f"{s.kernels:,}"), _num(fmt_us(s.gpu_us)), _num(fmt_pct(s.busy)),
                    literal(cut(s.name, w["name"])))
        # cells made when a row is first drawn (every column has a width): a run can hold 100,000 steps
        return [Row(str(s.index), (s.index, s.phase, s.start_us, s.span_us, s.kernels, s.gpu_us, s.busy, s.name),
                    partial(cells, s), payload=s, search=f"{s.name}\n{s.phase}".lower())
                for s in items]

    sorts = {"time": _time(5, "gpu"), "name": Sort("step", lambda r: r.values[0], ("step",), False, "in order")}
    return TableSpec("steps", cols, build, default_sort=(0, False), sorts=sorts)


def steps_hint() -> Text:
    return Text("Start/Span: first kernel to last · Busy: GPU time over the span · ⏎ timeline",
                style=DIM)


def step_detail(s: StepTotal) -> Group:
    head = span(f"Step {s.index}", "bold")
    head.append(f"  {s.phase}", style="bold")
    head.append(f"   from {s.source} annotations" if s.source not in ("inferred", "whole-trace")
                else f"   {s.source}", style=DIM)
    g = labelled_grid()
    g.add_row(Text("name"), literal(s.name))
    bits = [f"batch {s.batch}" if s.batch is not None else "", f"{s.tokens} tokens" if s.tokens is not None else ""]
    if any(bits):
        g.add_row(Text("size"), Text(" · ".join(b for b in bits if b)))
    g.add_row(Text("GPU"), Text(f"{s.kernels} kernels · {fmt_us(s.gpu_us)} over a span of {fmt_us(s.span_us)}"
                                f" (busy {fmt_pct(s.busy)}) · starts at {fmt_us(s.start_us)}"))
    g.add_row(Text("host"), Text(f"the annotation lasts {fmt_us(s.cpu_us)}"))
    for i, (cat, us) in enumerate(s.top_operations):
        g.add_row(Text("heaviest" if i == 0 else ""),
                  Text(f"{clean(cat)} {fmt_us(us)} ({fmt_pct(us / s.gpu_us if s.gpu_us else None)})"))
    return Group(head, g)
