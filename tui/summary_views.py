"""The Summary tab: the headline in words and the gap ledger (kerneldiff.core.compare.ledger), the
first thing the explorer shows. Presentation only: every figure comes from the Comparison."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from kerneldiff.core.session import Comparison, LedgerEntry
from kerneldiff.core.report.headline import HOST_PARTS, headline

from .text import DIM, SIDE_STYLE, fmt_gap, fmt_us, literal, slower_side, span
from .widgets.result_table import Column, Row, Sort, TableSpec

VERDICT_STYLE = {"comparable": "green", "partly": "yellow", "not comparable": "bold red"}


def summary_hint(comp: Comparison) -> Text:
    """Over the ledger: who the user waits longer for, and whether the traces are comparable."""
    h = headline(comp)
    t = literal(h.verdict)
    if comp.comparability is not None:
        t.append("\n")
        t.append_text(span(comp.comparability.verdict, VERDICT_STYLE.get(comp.comparability.verdict, "")))
        for r in comp.comparability.reasons:
            t.append("\n  · ")
            t.append_text(literal(r))
    for line in h.left_out:
        t.append("\n")
        t.append_text(literal(line, DIM))
    return t


def _num(s: str, style: str = "") -> Text:
    return span(s, style, "right")


def summary_spec(comp: Comparison) -> TableSpec:
    """The ledger: one row per cause, largest |gap| first; they sum to the wall-clock gap. A cause is
    shown whole: one wider than its column wraps onto a second line (a cut `exposed communica…`
    or `Gather/Scatter (fus…` no longer says which cause it is)."""
    # durations read at most 8 cells (999.99ms, 1234.56s) and gaps 9 (their sign): the cause gets
    # the rest, 23 cells at 80 columns
    cols = [Column("cause", "Cause", "name", None, 14, 40), Column("a", "A", "us", 8),
            Column("b", "B", "us", 8), Column("gap", "Gap", "gap", 9), Column("launches", "Launches", "gap", 9),
            Column("slower", "Slower", "gap", 9)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        for i, e in enumerate(comp.ledger):
            vals = (e.cause, e.a_us, e.b_us, e.gap_us, e.count_gap_us, e.speed_gap_us)
            cells = (literal(e.cause),
                     _num(fmt_us(e.a_us)), _num(fmt_us(e.b_us)), _num(fmt_gap(e.gap_us)),
                     _num(fmt_gap(e.count_gap_us) if e.count_gap_us is not None else ""),
                     _num(fmt_gap(e.speed_gap_us) if e.speed_gap_us is not None else ""))
            side = slower_side(e.gap_us)
            rows.append(Row(f"{i}:{e.cause}", vals, cells, payload=e, style=SIDE_STYLE[side] if side else "",
                            search=e.cause.lower(), height=1 if len(e.cause) <= w["cause"] else None))
        return rows

    sorts = {"gap": Sort("gap", lambda r: abs(r.values[3]), ("gap",), True, "largest |gap| first"),
             "time": Sort("time", lambda r: r.values[1] + r.values[2], ("a", "b"), True, "A + B, largest first"),
             "name": Sort("name", lambda r: r.values[0].lower(), ("cause",), False, "A to Z")}
    return TableSpec("summary", cols, build, default_sort="gap", sorts=sorts, fixed=1)


def _count(x: float) -> str:
    """A launch count: whole on a total basis, one decimal where a per-pass average is not whole."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,.1f}"


def ledger_detail(e: LedgerEntry, comp: Comparison):
    per = " per pass" if comp.basis == "per_pass" else ""
    head = Text()
    head.append_text(literal(e.cause, "bold"))
    head.append(f"   A {fmt_us(e.a_us)}  B {fmt_us(e.b_us)}  gap{per} {fmt_gap(e.gap_us)}")
    parts: list = [head]
    if e.detail:
        parts.append(literal(e.detail, DIM))
    if e.kind == "kernels":
        t = Text()
        t.append(f"launches{per}: A {_count(e.a_launches)}  B {_count(e.b_launches)}\n")
        t.append(f"more launches {fmt_gap(e.count_gap_us)}   slower kernels {fmt_gap(e.speed_gap_us)}\n", style="bold")
        t.append("Kernels are matched by name and launching operator, then by operator; "
                 + (e.split_basis or "extra launches priced at the extra kernels' own mean duration")
                 + ", the rest at the launches both sides make. "
                 "Enter on this operation in the Operations tab (2) lists its kernels.", style=DIM)
        parts.append(t)
    ha, hb = (comp.host.a, comp.host.b) if comp.host else (None, None)
    if e.cause == "idle: launch-bound" and ha and hb:
        t = Table(box=None, show_header=True, title=f"host time of the passes{per}", title_justify="left")
        for col in ("", "A", "B", "gap"):
            t.add_column(col, justify="left" if not col else "right", no_wrap=True)
        for key, label in HOST_PARTS:
            a, b = getattr(ha, key), getattr(hb, key)
            t.add_row(label, fmt_us(a), fmt_us(b), fmt_gap(a - b))
        parts.append(t)
        for side, h in (("A", ha), ("B", hb)):
            if h.compile_ids:
                parts.append(Text(f"{side} compiled regions {', '.join(h.compile_ids)}: "
                                  f"{h.recompiles} recompile{'s' if h.recompiles != 1 else ''}"))
    if comp.comparability is not None and comp.comparability.notes:
        parts.append(Text("\n".join("· " + n for n in comp.comparability.notes), style=DIM))
    return Group(*parts)
