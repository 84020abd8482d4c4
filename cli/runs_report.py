"""`kerneldiff compare RUN_A RUN_B`: runs of rank traces — the ranks, the collectives and the
stragglers of both runs, then the usual report of their representative ranks."""

from __future__ import annotations

import sys

from kerneldiff.core.errors import shown_path
from kerneldiff.core.numbers import strict_json

from .output import csv_files, csv_text, emit, fusion_overrides, peak_table, rows_csv, table_json, without_trailing_blanks
from .text_report import render_text


def run_runs(args) -> int:
    from kerneldiff.core.report.run_tables import RUN_TABLES, run_document, run_table
    from kerneldiff.core.report.table_names import TABLES
    from kerneldiff.core.session import RunSession

    if getattr(args, "passes", None) and args.format not in ("html", "perfetto"):
        print("kerneldiff: --pass picks passes for --format perfetto or html", file=sys.stderr)
        return 2
    if args.table and args.format == "text":
        print("kerneldiff: --table picks one table for --format csv or json; the text report shows them all",
              file=sys.stderr)
        return 2
    if args.table and args.format in ("markdown", "html", "perfetto"):
        print(f"kerneldiff: --table picks one table for --format csv or json; {args.format} shows its own choice",
              file=sys.stderr)
        return 2
    session = RunSession([args.a, args.b], registry=args.registry, use_cache=not args.no_cache,
                         device=args.device, rank=args.rank, peaks=peak_table(args),
                         fusion_overrides=fusion_overrides(args.fusion_param), jobs=args.jobs,
                         scheduler=args.scheduler)
    session.load()
    absent = session.load_pair().absent_phase(args.phase)   # the representative ranks, as for two traces
    if absent:
        print(f"kerneldiff: {absent}", file=sys.stderr)
        return 2
    try:
        cmp, found = session.compare(args.phase)
    except ValueError as e:
        from kerneldiff.core.session import visible

        print(f"kerneldiff: {visible(str(e))}", file=sys.stderr)
        return 2
    try:
        if args.format in ("markdown", "html", "perfetto"):
            return _pictures(session, cmp, found, args)
        if args.table == "modules":   # the representative ranks' module tree
            from .module_report import model_table

            return model_table(session.load_pair(), args)
        if args.format == "json":
            if args.table in RUN_TABLES:
                return emit(table_json(*run_table(found, args.table)), args.output)
            if args.table and args.table != "all":
                from kerneldiff.core.report.tables import table

                return emit(table_json(*table(cmp, args.table)), args.output)
            return emit(strict_json(run_document(cmp, found)), args.output)
        if args.format == "csv":
            return _csv(cmp, found, args, TABLES, RUN_TABLES, run_table)
        return _text(cmp, found, args)
    except BrokenPipeError:
        raise
    except OSError as e:
        print(f"kerneldiff: {shown_path(e.filename or args.output or 'stdout')}: cannot write: {e.strerror or e}",
              file=sys.stderr)
        return 2


def _pictures(session, cmp, found, args) -> int:
    """--format markdown, html or perfetto: the runs' own part, then the representative ranks' report
    (perfetto: the representative ranks' two traces, each named by its rank)."""
    from kerneldiff.core.session import visible

    if args.format == "markdown":
        from kerneldiff.core.report.markdown import render_markdown
        from kerneldiff.core.report.run_report import runs_markdown

        return emit(("\n".join(runs_markdown(found)) + render_markdown(cmp)).rstrip("\n"), args.output)
    pair = session.pair
    try:
        passes = pair.select_passes(args.passes, args.phase) if args.passes else None
        if args.format == "html" and passes and len(passes) > 1:
            raise ValueError(f"--pass {args.passes}: the HTML report draws one pass; give one number")
    except ValueError as e:
        print(f"kerneldiff: {visible(str(e))}", file=sys.stderr)
        return 2
    if args.format == "html":
        from kerneldiff.core.report.html import render_html
        from kerneldiff.core.report.run_report import runs_html, runs_intro

        drawn = passes or ([n] if (n := cmp.gap_pass()) is not None else None)
        return emit(render_html(cmp, pair.pass_pairs(cmp, drawn) if drawn else None, before=runs_html(found),
                                intro=runs_intro(found)), args.output)
    return _perfetto(session, cmp, args, passes)


def _perfetto(session, cmp, args, passes) -> int:
    """The representative ranks' two traces lined up pass by pass, with every rank's collectives."""
    from kerneldiff.core.report.perfetto import write_perfetto
    from kerneldiff.core.report.run_report import RankCollectives

    pairs = session.pair.pass_pairs(cmp, passes)
    extra = RankCollectives(pairs, session.sides)
    if not args.output:
        write_perfetto(pairs, sys.stdout.buffer, extra)
        sys.stdout.buffer.write(b"\n")
        sys.stdout.flush()
        return 0
    if args.output.endswith(".gz"):   # Perfetto's UI opens .json.gz as it is
        import gzip

        with gzip.open(args.output, "wb", compresslevel=6) as fh:
            write_perfetto(pairs, fh, extra)
    else:
        with open(args.output, "wb") as fh:
            write_perfetto(pairs, fh, extra)
    print(f"wrote {shown_path(args.output)}", file=sys.stderr)
    return 0


def _csv(cmp, found, args, tables, run_tables, run_table) -> int:
    def text_of(name: str) -> str:
        return rows_csv(*run_table(found, name)) if name in run_tables else csv_text(cmp, name)

    which = args.table or ("all" if args.output else "ranks")
    if which != "all":
        return emit(text_of(which).rstrip("\n"), args.output)
    return csv_files(args.output, (*run_tables, *tables), text_of)


def _text(cmp, found, args) -> int:
    from .render import console

    width = args.width or min(console().width, 120)
    if args.output:
        from rich.console import Console

        with open(args.output, "w", encoding="utf-8", errors="backslashreplace") as fh:
            _print(cmp, found, Console(file=fh, width=width, highlight=False, markup=False, emoji=False,
                                       color_system=None))
        print(f"wrote {shown_path(args.output)}", file=sys.stderr)
        return 0
    out = console()
    out.width = width
    _print(cmp, found, out)
    return 0


def _print(cmp, found, out) -> None:
    from .render import FittingConsole

    with out.capture() as cap:
        render_runs(found, FittingConsole(out))     # tables laid out without cutting a number
        render_text(cmp, FittingConsole(out))
    out.file.write(without_trailing_blanks(cap.get()))
    out.file.flush()


def render_runs(found, out) -> None:
    from rich.table import Table
    from rich.text import Text

    from kerneldiff.core.report import format as fmt
    from kerneldiff.core.report.run_report import (gbps, where_cell, links_line, rank_cell, size, straggler_legend, straggler_lines,
                                                   wall_summary)

    from .render import literal, us

    rep = found.representative
    for key in ("a", "b"):
        sp = found.spread[key]
        line = Text(f"{key.upper()} run: {sp.ranks} rank{'s' if sp.ranks != 1 else ''} (ranks from ", style="bold")
        line.append_text(literal(found.rank_source[key]))
        line.append(f"), wall {us(sp.wall_min_us)} … {us(sp.wall_max_us)} (median {us(sp.wall_median_us)}); "
                    f"the report below is rank {rep.side(key)}'s")
        out.print(line)
    out.print(Text(f"representative rank: {rep.how}", style="dim"))
    from rich import box

    t = Table(title="Ranks (slowest first)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("run", "rank", "wall", "busy", "compute", "comm", "exposed comm", "idle", "file"):
        t.add_column(col, justify="left" if col in ("run", "file") else "right", no_wrap=col != "file",
                     overflow="ellipsis", max_width=40 if col == "file" else None)
    t.drop_order = (("file",), ("exposed comm",), ("comm",))   # the rank and its wall and idle stay
    rows = [(k, r) for k in ("a", "b") for r in found.ranks[k]]
    rows.sort(key=lambda kr: -kr[1].wall_us)
    for k, r in rows[:32]:
        t.add_row(k.upper(), rank_cell(found, k, r.rank), us(r.wall_us), us(r.busy_us), us(r.compute_us),
                  us(r.comm_us), us(r.exposed_comm_us), us(r.idle_us), literal(shown_path(r.file)))
    out.print(t)
    if len(rows) > 32:
        out.print(Text(f"… {len(rows) - 32} more ranks in --format json / csv", style="dim"))
        for k in ("a", "b"):
            out.print(Text(wall_summary(found, k)))
    if straggler_legend(found):
        out.print(Text(straggler_legend(found), style="dim"))
    if found.collectives:
        from rich import box

        def table(title, cols):
            t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
            for col in cols:
                # where wraps at its spaces rather than being cut (its last words tell attention from mlp)
                t.add_column(col, justify="left" if col in ("kind", "algorithm", "where") else "right",
                             no_wrap=col != "where")
            return t

        top = found.collectives[:15]
        # where: only when the traces place some collective (a pass with a phase, a layer)
        where = [where_cell(c) for c in top] if any(where_cell(c) != "?" for c in top) else None
        t = table("Collectives: time per rank (kind × message, largest gap first)",
                  ("kind", "size", *(("where",) if where else ()), "n A/B", "A time", "B time", "A wait", "B wait",
                   "A exposed", "B exposed", "gap"))
        t.drop_order = (("A wait", "B wait"), ("n A/B",), ("A exposed", "B exposed"), ("where",))
        for i, c in enumerate(top):
            a, b = c.a, c.b
            t.add_row(c.kind, size(c.nbytes), *((where[i],) if where else ()), f"{a.count if a else 0}/{b.count if b else 0}",
                      us(a.total_us) if a else "—", us(b.total_us) if b else "—",
                      us(a.wait_us) if a and a.wait_us is not None else "—",
                      us(b.wait_us) if b and b.wait_us is not None else "—",
                      us(a.exposed_us) if a else "—", us(b.exposed_us) if b else "—", fmt.gap(c.gap_us))
        out.print(t)
        t = table("Collectives: bus bandwidth (GB/s, % of the link's peak) and start skew",
                  ("kind", "size", *(("where",) if where else ()), "A busbw", "B busbw", "A skew", "B skew",
                   "algorithm"))
        t.drop_order = (("A skew", "B skew"), ("where",))
        for i, c in enumerate(top):
            a, b = c.a, c.b
            algo = " / ".join(x for x in {(a.algorithm if a else ""), (b.algorithm if b else "")} if x)
            t.add_row(c.kind, size(c.nbytes), *((where[i],) if where else ()), gbps(a.busbw_gbps, a.pct_link_peak) if a else fmt.ABSENT,
                      gbps(b.busbw_gbps, b.pct_link_peak) if b else fmt.ABSENT,
                      us(a.skew_p50_us) if a and a.skew_p50_us is not None else "—",
                      us(b.skew_p50_us) if b and b.skew_p50_us is not None else "—", algo or "—")
        out.print(t)
        out.print(Text(links_line(found), style="dim"))
    for line in straggler_lines(found):
        out.print(Text(line))
    for n in found.notes:
        out.print(Text("note: ", style="yellow") + literal(n))
    out.print()
