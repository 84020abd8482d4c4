"""The text report's first sections: the headline in words and the gap ledger (core/report/headline,
core/compare/ledger), then the host time behind launch-bound idle."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from kerneldiff.core.report import format as fmt
from kerneldiff.core.report.headline import HOST_PARTS, headline

from .render import literal, us


def render_headline(cmp, out) -> None:
    h = headline(cmp)
    t = Text()
    t.append(h.wall + "\n", style="bold")
    t.append(h.kernels + "\n")
    t.append_text(literal(h.verdict))
    t.append("\ncomparability: ", style="bold")
    t.append_text(literal(h.comparability))
    for line in h.left_out:
        t.append("\n")
        t.append_text(literal(line))
    out.print(t)


def render_ledger(cmp, out) -> None:
    if not cmp.ledger:
        return
    per = " per pass" if cmp.basis == "per_pass" else ""
    t = Table(title=f"Gap ledger: the wall-clock gap{per}, cause by cause (they sum to "
                    f"{fmt.gap(cmp.wall.wall_gap_us)})", title_justify="left")
    # wrapped, never cut: "exposed communica…" said nothing at 80 columns
    t.add_column("cause", overflow="fold", max_width=max(14, out.width - 62))
    for col in ("A", "B", "gap", "launches", "slower"):
        t.add_column(col, justify="right", no_wrap=True)
    for e in cmp.ledger:
        t.add_row(literal(e.cause), us(e.a_us), us(e.b_us), fmt.gap(e.gap_us),
                  fmt.gap(e.count_gap_us) if e.count_gap_us is not None else "",
                  fmt.gap(e.speed_gap_us) if e.speed_gap_us is not None else "")
    out.print(t)
    out.print(Text("launches: the part of an operation's gap from launching more (or fewer) kernels; slower: "
                   "from the same kernels taking longer (kernels matched by name and launching operator, then by "
                   "operator; extra launches priced at the extra kernels' own mean). Overlap counts against the side with more of it."
                   + (" Exposed communication: communication kernels while no compute kernel ran; the part hidden "
                      "behind compute is in the overlap." if any(e.kind == "communication" for e in cmp.ledger)
                      else ""), style="dim"))
    seen: list[str] = []
    for e in cmp.ledger:
        if e.finding >= 0:      # a fused operation's own row: what it holds and where from
            out.print(Text(f"{e.cause}: ", style="dim") + literal(e.detail))
            seen += e.fusions
    for e in cmp.ledger:
        for text in e.fusions:
            if text not in seen:
                seen.append(text)
    for text in seen:
        if any(e.finding >= 0 and text in e.fusions for e in cmp.ledger):
            continue
        rows = ", ".join(e.cause for e in cmp.ledger if text in e.fusions)
        out.print(Text(f"fused: {rows} — ", style="dim") + literal(text))
    ha, hb = (cmp.host.a, cmp.host.b) if cmp.host else (None, None)
    if not ha or not hb:
        return
    t = Table(title=f"Host time of the passes{' (per pass)' if cmp.basis == 'per_pass' else ''}: what stands "
                    "behind launch-bound idle", title_justify="left")
    for col, just in (("", "left"), ("A", "right"), ("B", "right"), ("gap", "right")):
        t.add_column(col, justify=just, no_wrap=True)
    for key, label in HOST_PARTS:
        a, b = getattr(ha, key), getattr(hb, key)
        t.add_row(label, us(a), us(b), fmt.gap(a - b))
    out.print(t)
    for side, h in (("A", ha), ("B", hb)):
        if h.compile_ids:
            out.print(Text(f"{side} compiled regions: {', '.join(h.compile_ids)} ({h.recompiles} recompile"
                           f"{'s' if h.recompiles != 1 else ''})"))
