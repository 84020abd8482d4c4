"""The text report of one comparison (what `kerneldiff compare` prints, and what the report of two
runs prints for their representative ranks): the headline, the gap ledger, the timeline, then the
operations, layers, fusions and same-kernel tables. Rich is imported by the functions that draw, so
`--format json` and `csv` never load it."""

from __future__ import annotations

from .output import without_trailing_blanks


def print_text(cmp, out) -> None:
    """The text report without the blanks Rich pads lines with (titles, wrapped evidence)."""
    from .render import FittingConsole

    with out.capture() as cap:
        render_text(cmp, FittingConsole(out))
    out.file.write(without_trailing_blanks(cap.get()))
    out.file.flush()


def render_text(cmp, out) -> None:
    from rich.table import Table
    from rich.text import Text

    from kerneldiff.core.session import distinct_short_names
    from kerneldiff.core.report import format as fmt
    from kerneldiff.core.report import labels

    from .ledger_report import render_headline, render_ledger
    from .render import literal, us
    from .timeline_report import render_timeline
    from .work_report import render_work

    _ratio = fmt.ratio
    A, B = cmp.a.label, cmp.b.label
    w = out.width
    name_w = max(16, w - 52)
    head = Text()
    head.append("A ", style="bold")
    head.append_text(literal(A))
    head.append(f"  {us(cmp.a.gpu_time_us)}  {cmp.a.kernels:,} kernels  {cmp.a.passes} pass{'es' if cmp.a.passes != 1 else ''}\n")
    head.append("B ", style="bold")
    head.append_text(literal(B))
    head.append(f"  {us(cmp.b.gpu_time_us)}  {cmp.b.kernels:,} kernels  {cmp.b.passes} pass{'es' if cmp.b.passes != 1 else ''}\n")
    nwarn = len(cmp.warnings)
    head.append(f"phase {cmp.phase}   layers {cmp.a.layers_per_step}/{cmp.b.layers_per_step}   "
                f"{nwarn} warning{'s' if nwarn != 1 else ''}\n")
    for side in (cmp.a, cmp.b):
        head.append(f"{side.key.upper()} read from: passes ", style="dim")
        head.append_text(literal(side.pass_source or "—"))
        head.append("; phases ", style="dim")
        head.append_text(literal(side.phase_source or "—"))
        head.append("; layers ", style="dim")
        head.append_text(literal(side.layer_source or "—"))
        head.append("\n")
    head.rstrip()
    if cmp.wall is not None:
        render_headline(cmp, out)
    out.print(head)
    render_ledger(cmp, out)
    render_timeline(cmp, out)

    per_pass = cmp.basis == "per_pass"
    t = Table(title="Operations (largest gap first" + (", per pass)" if per_pass else ")"), title_justify="left",
              expand=False)
    t.add_column("operation", overflow="ellipsis", no_wrap=True, max_width=name_w)
    for col in (("A/pass", "B/pass") if per_pass else ("A total", "B total")) + ("A/B", "gap"):
        t.add_column(col, justify="right", no_wrap=True)
    for o in cmp.operations[:15]:
        t.add_row(literal(labels.operation_label(o)), *(us(x) for x in labels.operation_times(cmp, o)),
                  _ratio(o.ratio), fmt.gap(o.gap_us))
    out.print(t)

    if cmp.layers:
        compared = getattr(cmp, "layers_from", "both") == "both"
        if not compared:
            have = cmp.layers_from.upper()
            out.print(Text(f"Layers only on {have} (none found on {'B' if have == 'A' else 'A'}, see the warnings): "
                           f"{have} alone, nothing compared", style="yellow"))
        t = Table(title="Layers (largest gap first)" if compared else "Layers (largest first)", title_justify="left")
        # compared: the spread and the tests beside the gap (the medians go first at a narrow width)
        cols = (("layer", "A total", "B total", "A/B", "gap", "span gap", "slower", "±", "t", "vs typ", "A med/pass",
                 "B med/pass")
                if compared else ("layer", "A total", "B total", "A med/pass", "B med/pass", "A/B", "gap"))
        for col in cols:
            t.add_column(col, justify="right", no_wrap=True)
        rows = list(cmp.layers[:10])
        outside = getattr(cmp, "outside_layers", None)
        for l in rows + ([outside] if outside is not None else []):
            name, ta, tb = (labels.layer_name(l), us(l.a.total_us if l.a.kernels else None),
                            us(l.b.total_us if l.b.kernels else None))
            ma, mb = us(l.a.median_us if l.a.kernels else None), us(l.b.median_us if l.b.kernels else None)
            if compared:
                t.add_row(name, ta, tb, _ratio(l.ratio), fmt.gap(l.gap_us), fmt.gap(l.span_gap_us),
                          (l.slower_by or "").replace(" kernels", "k").replace(" span", "s"),
                          us(l.spread_us), fmt.t_value(l.t),
                          fmt.t_value(l.departure_t) + ("*" if l.departs else ""), ma, mb)
            else:
                t.add_row(name, ta, tb, ma, mb, _ratio(l.ratio), fmt.ABSENT)
        out.print(t)
        if compared and any(l.t is not None for l in cmp.layers):
            from kerneldiff.core.session import critical

            out.print(Text(f"gap: kernel time A − B; span gap: the layers' first-to-last-kernel spans (the wall "
                           f"clock) A − B; slower: by both, or by each when they disagree (Ak, Bs: A by kernel time, B by span). "
                           f"±: the gap's spread over the passes; t: the per-pass gap over its standard error "
                           f"√(σA²/nA + σB²/nB) (steady passes); vs typ: against the typical layer's gap, * where "
                           f"|t| > {critical(len(cmp.layers)):.2f} (5 %, corrected for {len(cmp.layers)} layers)",
                           style="dim"))

    fusions, launch_counts = labels.fusions_and_launch_counts(cmp.fusions)
    if launch_counts:
        t = Table(title="Launch-count differences (not fusions)", title_justify="left")
        t.add_column("more on", no_wrap=True)   # the side's letter: a GPU name cut at 14 columns reads as a number
        t.add_column("what", overflow="fold", max_width=max(20, w - 32))
        t.add_column("n", justify="right")
        t.add_column("time", justify="right", no_wrap=True)
        for f in launch_counts:
            t.add_row(f.component_side.upper(), literal(labels.fusion_what(f)), str(f.occurrences),
                      fmt.us(f.component_cost_us))
        out.print(t)
        for f in launch_counts:
            out.print(Text("• ", style="bold") + literal(f.evidence))
    if fusions:
        t = Table(title="Fusion differences", title_justify="left")
        t.add_column("kind", no_wrap=True)
        t.add_column("fused on", no_wrap=True, overflow="ellipsis", max_width=14)
        t.add_column("what", overflow="fold", max_width=max(20, w - 50))
        t.add_column("n", justify="right")
        t.add_column("measured", justify="right", no_wrap=True)
        t.add_column("est.", justify="right", no_wrap=True)
        for f in fusions:
            side = A if f.fused_side == "a" else B
            what = labels.fusion_what(f)
            capped = f.estimated_saving is not None and f.estimated_saving.capped
            t.add_row(f.kind, literal(side), literal(what), str(f.occurrences), fmt.gap(f.measured_saving_us),
                      labels.estimated_saving(f) + ("*" if capped else ""))
        out.print(t)
        if any(f.estimated_saving and f.estimated_saving.capped for f in fusions):
            out.print(Text("* only the measured cost: the model says more than the component kernels take, so the "
                           "estimate is their measured time", style="dim"))
        for f in fusions:
            out.print(Text("• ", style="bold") + literal(f.evidence) + Text(f"  (confidence {f.confidence:.2f})"))
            for key, group in ((f.fused_side, f.fused_group), (f.component_side, f.component_group)):
                if group:
                    line = Text(f"    {key.upper()} ", style="bold")
                    short = distinct_short_names([k.name for k in group], 44)
                    line.append_text(literal("  ·  ".join(labels.group_kernel(k, short) for k in group)))
                    out.print(line)

    if cmp.same_kernels:
        t = Table(title="Same kernels on both sides (largest total gap first; A/B of the means)", title_justify="left")
        t.add_column("kernel", overflow="ellipsis", no_wrap=True, max_width=max(16, name_w - 12))
        for col in ("A n", "B n", "A mean", "B mean", "A/B", "total gap"):
            t.add_column(col, justify="right", no_wrap=True)
        shown = cmp.same_kernels[:10]
        short = distinct_short_names([k.name for k in shown], max(16, name_w - 12))   # what tells them apart
        for s in shown:
            t.add_row(literal(short[s.name]), f"{s.a.count:,}", f"{s.b.count:,}", us(s.a.mean_us), us(s.b.mean_us),
                      ("≠ " if s.shapes_differ else "") + _ratio(s.ratio), fmt.gap(s.gap_us))
        out.print(t)
        for s in shown:
            if s.shapes_differ:
                out.print(Text("≠ ", style="dim") + literal(short[s.name]) + Text(": " + s.shapes_differ
                                                                                + " (its A/B is not a speed)", style="dim"))
    render_work(cmp, out, name_w)
    for wmsg in cmp.warnings:
        out.print(Text("warning: ", style="yellow") + literal(wmsg))
