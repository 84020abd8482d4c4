"""Kernel detail: both full names, category and rule, timing, cpu_op and Python stack."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, VerticalScroll
from textual.widgets import Static

from kerneldiff.core.session import demangle
from kerneldiff.core.report.format import percent as fmt_percent, rate as fmt_rate
from kerneldiff.core.session import KernelDetail
from kerneldiff.core.session import KernelRef as TraceKernel

from ..text import DIM, SIDE_STYLE, fmt_gap, fmt_pct, fmt_ratio, fmt_us, literal, shorten, span
from ..widgets.footer import Footer
from ..widgets.header import Breadcrumb
from .base import ExplorerScreen

WIDE = 110  # columns from which the two sides sit next to each other
SIDES = ("a", "b")


@dataclass
class KernelRef:
    """One side of what is being detailed: the kernel's figures and what the trace records about one
    of its launches (`detail`, from the session; None when this side runs no kernel here)."""

    side: str
    label: str
    name: str | None
    category: str | None
    rule: str
    stats: Any                          # kerneldiff.core.analysis.stats.Stats
    detail: KernelDetail | None = None
    cpu_op: str | None = None           # the cpu_op the launch is linked to
    where: str = ""                     # device and stream
    count_note: str = ""                # what the count counts, when not every launch (kernel pairs)
    roof: Any = None                    # its name's roofline reading (core.analysis.kernel_roof), None: unknown


def kernel_ref(session, index: int, label: str, name: str | None, category: str | None, rule: str, stats,
               row: int, detail: KernelDetail | None = None) -> KernelRef:
    """A KernelRef for kernel row `row` of trace `index` (row -1 or name None: no kernel on this side);
    `detail`: the session's KernelDetail of that row when the caller already holds it."""
    if name is None or row < 0:
        return KernelRef(SIDES[index], label, name, category, rule, stats)
    if detail is None:
        detail = session.kernel_detail(TraceKernel(index, row))
    return KernelRef(SIDES[index], label, name, category, rule, stats, detail, detail.cpu_op,
                     f"{detail.device} · stream {detail.stream}", roof=session.kernel_roof(TraceKernel(index, row)))


def _short(name: str) -> str:
    return shorten(name, 24)


def _kv(g: Table, key: str, value: Text | str) -> None:
    g.add_row(Text(key, style="bold"), value if isinstance(value, Text) else literal(value))


def side_summary(ref: KernelRef, single: bool = False) -> Group:
    """Name, category, rule, timing and CPU op of one side's kernel."""
    head = Text()
    if not single:
        head.append(ref.side.upper() + " ", style=f"bold {SIDE_STYLE[ref.side]}")
    head.append(literal(ref.label, f"bold {SIDE_STYLE[ref.side]}"))
    if ref.name is None:
        return Group(head, Text("no kernel at this position on this side: the other side's kernel has no "
                                "counterpart here (fused away or missing)", style=DIM))
    demangled = demangle(ref.name)
    if demangled != ref.name:   # the demangled signature first, the symbol as recorded under it
        parts: list[Any] = [head, literal(demangled, "bold"), literal(ref.name, DIM)]
    else:
        parts = [head, literal(ref.name, "bold")]
    g = Table.grid(padding=(0, 1))
    g.add_column(no_wrap=True)
    g.add_column(overflow="fold")
    _kv(g, "category", ref.category or "—")
    _kv(g, "rule", ref.rule or "—")
    s = ref.stats
    count = Text(f"{s.count:,}")
    if ref.count_note:
        count.append(f"  {ref.count_note}", style=DIM)
    _kv(g, "count", count)
    if s.count:
        _kv(g, "duration", Text(f"min {fmt_us(s.min_us)} · median {fmt_us(s.median_us)} · "
                                f"p95 {fmt_us(s.p95_us)} · max {fmt_us(s.max_us)}"))
        _kv(g, "total", Text(f"{fmt_us(s.total_us)} (mean {fmt_us(s.mean_us)}"
                             + (f", {fmt_pct(s.share)} of GPU time)" if s.share else ")")))
    if ref.detail is not None:
        op = ref.cpu_op
        _kv(g, "cpu_op", op if op is not None else Text("not linked (no correlation to a CPU op)", style=DIM))
        chain = ref.detail.cpu_ops
        if len(chain) > 1:
            _kv(g, "cpu ops", Text(" › ").join(literal(c) for c in chain))
        _kv(g, "device", Text(ref.where))
        d = ref.detail
        if d.ops and d.ops != [op]:
            _kv(g, "ops", literal(", ".join(d.ops)))
        if d.modules:
            _kv(g, "module", Text(" › ").join(literal(x) for x in d.modules))
        if d.input_dims is not None:
            _kv(g, "op inputs", literal(d.input_dims + (f"  {d.input_types}" if d.input_types else "")))
        launch = [f"grid {d.grid}" if d.grid else "", f"block {d.block}" if d.block else "",
                  f"{d.registers} registers" if d.registers is not None else "",
                  f"{d.shared_memory:,} B shared" if d.shared_memory is not None else "",
                  f"occupancy {d.occupancy}% (Kineto's estimate)" if d.occupancy is not None else ""]
        if any(launch):
            _kv(g, "launch", " · ".join(x for x in launch if x))
    if ref.detail is not None:
        _roof_rows(g, ref.roof)
    parts.append(g)
    return Group(*parts)


def _roof_rows(g: Table, r) -> None:
    """Achieved TFLOP/s and TB/s of the kernel's launches, the roof it sits under, and the peak used."""
    if r is None:
        _kv(g, "achieved", Text("unknown: its operator's shapes give no work (record_shapes off, or an "
                                "operator whose work is not counted)", style=DIM))
        return
    cover = (f" over its {r.launches:,} launches in the trace" if r.covered == r.launches else
             f" over {r.covered:,} of its {r.launches:,} launches (those whose work is known)")
    _kv(g, "achieved", Text(f"{fmt_rate(r.tflops)} TFLOP/s · {fmt_rate(r.tbps)} TB/s{cover}"))
    if r.bound is not None:
        other = f"{fmt_percent(r.pct_peak)} of compute peak, {fmt_percent(r.pct_peak_bw)} of bandwidth"
        _kv(g, "roofline", Text(f"{r.bound}-bound, {fmt_percent(r.pct_roofline)} of its roof ({other})"))
    elif not r.gpu:
        _kv(g, "roofline", Text("unknown: no peak figures for this GPU (--peak / --peaks)", style=DIM))
    peak = (f"{r.peak_figure} {fmt_rate(r.peak_tflops)} TFLOP/s" if r.peak_tflops else
            f"{r.peak_figure or 'compute'} peak unknown")
    if r.gpu:
        t = Text(f"{peak}, {fmt_rate(r.peak_tbps)} TB/s on ")
        t.append_text(literal(r.gpu))
        if r.source:
            t.append("  source: ", style=DIM)
            t.append_text(literal(r.source, DIM))
        _kv(g, "peak", t)


def side_stack(ref: KernelRef, single: bool = False) -> Group:
    """The Python stack that launched one side's kernel (resolved for this one row)."""
    head = Text()
    if not single:
        head.append(ref.side.upper() + " ", style=f"bold {SIDE_STYLE[ref.side]}")
    head.append("Python stack (innermost first)", style="bold")
    frames = ref.detail.python_stack if ref.detail is not None else []
    if not frames:
        why = "no kernel on this side" if ref.name is None else \
            "none recorded for this launch (trace without with_stack, or launch not linked)"
        return Group(head, Text("  " + why, style=DIM))
    stack = Table.grid()
    stack.add_column(width=2)
    stack.add_column(overflow="fold")  # long frames wrap under themselves, not under the margin
    for f in frames:
        stack.add_row(Text(""), literal(f))
    return Group(head, stack)


class KernelDetailScreen(ExplorerScreen):
    BINDINGS = [
        Binding("j", "scroll('down')", "Scroll down", show=False),
        Binding("k", "scroll('up')", "Scroll up", show=False),
    ]

    DEFAULT_CSS = """
    KernelDetailScreen #context { height: auto; max-height: 3; padding: 0 1; background: $boost; }
    KernelDetailScreen #sides { height: auto; layout: grid; grid-size: 1; grid-rows: auto; grid-gutter: 1 2; }
    KernelDetailScreen.-wide #sides { grid-size: 2; }
    KernelDetailScreen #sides > Static { height: auto; padding: 0 1; }
    KernelDetailScreen #detail { height: 1fr; }
    """

    def __init__(self, refs: list[KernelRef], context: Text, crumbs: list[str]) -> None:
        """Two refs (A, B) side by side, or one: a kernel of one trace (then no side letters)."""
        super().__init__()
        self.refs = refs
        self.context = context
        self.crumbs = crumbs
        self.single = len(refs) == 1

    def compose(self) -> ComposeResult:
        yield Breadcrumb(*self.crumbs)
        yield Static(self.context, id="context")
        with VerticalScroll(id="detail"):
            # summaries first, stacks after: stacked at 80 columns, side by side (a 2-column grid) when wide
            with Container(id="sides"):
                for ref in self.refs:
                    yield Static(side_summary(ref, self.single), classes=f"summary side-{ref.side}")
                for ref in self.refs:
                    yield Static(side_stack(ref, self.single), classes=f"stack side-{ref.side}")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#detail").focus()

    def on_resize(self) -> None:
        self.set_class(self.size.width >= WIDE and len(self.refs) > 1, "-wide")

    def action_scroll(self, direction: str) -> None:
        d = self.query_one("#detail", VerticalScroll)
        d.scroll_down() if direction == "down" else d.scroll_up()


def pair_context(pair, layer: int | None, group: str = "") -> Text:
    t = Text()
    if layer is not None:
        t.append(f"Layer {layer}", style="bold")
        t.append(f" · position {pair.position}")
    t.append(f"   A/B {fmt_ratio(pair.ratio)}   gap {fmt_gap(pair.gap_us)} (means per launch)")
    t.append("   same kernel" if pair.same_kernel else "   different kernels", style=DIM)
    if group or pair.fusion_note:
        t.append("\n")
        t.append(literal(group or pair.fusion_note, "bold"))
    return t


# --- the detail screens, from what a table row holds ---------------------------------------------

def pair_screen(session, comp, pair, layer: int | None, crumbs: list[str], alignment=None) -> KernelDetailScreen:
    """An aligned kernel pair of a comparison: both sides."""
    refs = [kernel_ref(session, 0, comp.a.label, pair.a_name, pair.a_category, pair.a_rule, pair.a, pair.a_row),
            kernel_ref(session, 1, comp.b.label, pair.b_name, pair.b_category, pair.b_rule, pair.b, pair.b_row)]
    if alignment is not None and layer is not None:
        row = next((r for r in comp.layers if r.layer == layer), None)
        for ref, side in zip(refs, ("a", "b")):
            passes = getattr(row, side).passes if row is not None else 0
            if ref.stats.count and passes:
                ref.count_note = (f"one per pass, over {ref.stats.count} of the layer's {passes} passes (those "
                                  "running its usual kernel sequence)" if ref.stats.count != passes
                                  else f"one per pass ({passes} pass{'' if passes == 1 else 'es'})")
    from ..views import group_text

    return KernelDetailScreen(refs, pair_context(pair, layer, group_text(pair, comp, layer)),
                              [*crumbs, f"#{pair.position}"])


def same_kernel_screen(session, comp, k, crumbs: list[str]) -> KernelDetailScreen:
    """A kernel name both traces run: both sides, each with one of its launches."""
    refs = []
    for i, (label, stats) in enumerate(((comp.a.label, k.a), (comp.b.label, k.b))):
        found = session.kernel_ref(i, k.name)
        row = found.row if found is not None else -1
        detail = session.kernel_detail(found) if found is not None else None
        refs.append(kernel_ref(session, i, label, k.name, k.category, detail.rule if detail else "", stats, row,
                               detail))
    context = span("Same kernel on both sides", "bold")
    context.append(f"   A/B {fmt_ratio(k.ratio)}   gap {fmt_gap(k.gap_us)}")
    return KernelDetailScreen(refs, context, [*crumbs, _short(k.name)])


def trace_kernel_screen(session, index: int, label: str, k, crumbs: list[str],
                        context: Text | None = None) -> KernelDetailScreen:
    """A kernel of one trace (browse): `k` is a kerneldiff.core.analysis.trace_totals.KernelTotal."""
    ref = kernel_ref(session, index, label, k.name, k.category, k.rule, k.stats, k.row)
    return KernelDetailScreen([ref], context if context is not None else span("Kernel", "bold"),
                              [*crumbs, _short(k.name)])
