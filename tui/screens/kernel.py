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
from textual.widgets import Footer, Static

from kerneldiff.core.analysis.attribution import cpu_op_stack
from kerneldiff.core.analysis.classify import demangle
from kerneldiff.core.compare.result import Stats

from ..text import DIM, SIDE_STYLE, fmt_gap, fmt_pct, fmt_ratio, fmt_us, literal, span
from ..widgets.header import Breadcrumb
from .base import ExplorerScreen

WIDE = 110  # columns from which the two sides sit next to each other


@dataclass
class KernelRef:
    """One side of what is being detailed: the kernel's result stats and a row in its model."""

    side: str
    label: str
    name: str | None
    category: str | None
    rule: str
    stats: Stats
    row: int
    model: Any


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
    parts: list[Any] = [head, literal(ref.name, "bold")]
    demangled = demangle(ref.name)
    if demangled != ref.name:
        parts.append(literal(demangled, DIM))
    g = Table.grid(padding=(0, 1))
    g.add_column(no_wrap=True)
    g.add_column(overflow="fold")
    _kv(g, "category", ref.category or "—")
    _kv(g, "rule", ref.rule or "—")
    s = ref.stats
    _kv(g, "count", Text(str(s.count)))
    if s.count:
        _kv(g, "duration", Text(f"min {fmt_us(s.min_us)} · median {fmt_us(s.median_us)} · "
                                f"p95 {fmt_us(s.p95_us)} · max {fmt_us(s.max_us)}"))
        _kv(g, "total", Text(f"{fmt_us(s.total_us)} (mean {fmt_us(s.mean_us)}"
                             + (f", {fmt_pct(s.share)} of GPU time)" if s.share else ")")))
    model, row = ref.model, ref.row
    if model is not None and row >= 0:
        op = model.cpu_op_name(row)
        _kv(g, "cpu_op", op if op is not None else Text("not linked (no correlation to a CPU op)", style=DIM))
        chain = cpu_op_stack(model, row)
        if len(chain) > 1:
            _kv(g, "cpu ops", Text(" › ").join(literal(c) for c in chain))
        _kv(g, "device", Text(f"{int(model.kernels.device[row])} · stream {int(model.kernels.stream[row])}"))
    parts.append(g)
    return Group(*parts)


def side_stack(ref: KernelRef, single: bool = False) -> Group:
    """The Python stack that launched one side's kernel (resolved now, for this one row)."""
    head = Text()
    if not single:
        head.append(ref.side.upper() + " ", style=f"bold {SIDE_STYLE[ref.side]}")
    head.append("Python stack (innermost first)", style="bold")
    model, row = ref.model, ref.row
    frames = model.python_stack(row) if (model is not None and row >= 0) else []
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

    def __init__(self, refs: list[KernelRef], context: Text, crumbs: list[str], single: bool = False) -> None:
        super().__init__()
        self.refs = refs
        self.context = context
        self.crumbs = crumbs
        self.single = single

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


def pair_context(pair, layer: int | None, single: bool) -> Text:
    t = Text()
    if layer is not None:
        t.append(f"Layer {layer}", style="bold")
        t.append(f" · position {pair.position}")
    if single:
        return t
    t.append(f"   A/B {fmt_ratio(pair.ratio)}   gap {fmt_gap(pair.gap_us)}")
    t.append("   same kernel" if pair.same_kernel else "   different kernels", style=DIM)
    if pair.fusion_note:
        t.append("\n")
        t.append(literal(pair.fusion_note, "bold"))
    return t


def same_kernel_context(k, single: bool) -> Text:
    t = span("Same kernel on both sides" if not single else "Kernel", "bold")
    if not single:
        t.append(f"   A/B {fmt_ratio(k.ratio)}   gap {fmt_gap(k.gap_us)}")
    return t
