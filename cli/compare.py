"""`kerneldiff compare A B [--phase …] [--format text|json|csv|markdown|html|perfetto] [--table …] [--pass N] [-o FILE]`."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from kerneldiff.core.names.visible import visible
from kerneldiff.core.errors import TraceError, shown_path
from kerneldiff.core.numbers import safe_text, strict_json
from kerneldiff.core.phase_names import PHASE_FILTERS
from kerneldiff.core.report.table_names import TABLES
from kerneldiff.core.report.run_tables import RUN_TABLES

from .args import UsageError, flag_number

# The text report's modules (Rich, the throughput and timeline sections) are imported by the
# functions that draw it: `--format json` and `csv` never load Rich (~20 ms of a run's start).
# The comparison's own modules are imported once the traces are loading (see Session._pair_beside).


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="compare two traces and print a report")
    p.add_argument("a", help="first trace (side A); or a run of rank traces: a directory, a glob or comma-joined files")
    p.add_argument("b", help="second trace (side B); or a run, likewise")
    p.add_argument("--phase", default="all", choices=PHASE_FILTERS)
    p.add_argument("--format", default=None, choices=FORMATS,
                   help="text (default; csv with --table); markdown: a pull-request comment; html: one self-contained page with charts; "
                        "perfetto: both traces in one Chrome-trace JSON, passes lined up, kernel pairs joined")
    p.add_argument("--pass", dest="passes", metavar="N[-M]",
                   help="perfetto: the passes to write, by the number the Timeline shows (default: all); "
                        "html: the pass drawn to scale (default: the one with the largest wall-clock gap)")
    p.add_argument("--table", choices=list(TABLES) + list(RUN_TABLES) + ["all"], default=None,
                   help="one table as CSV (or JSON with --format json), keys a_<field>/b_<field> as the "
                        "explorer's export (CSV without --table: all tables, one file each, with -o; "
                        "operations on stdout; JSON without --table: the whole comparison)")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.add_argument("--registry", help="extra classifier rules (TOML), tried before the shipped ones")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the index cache")
    p.add_argument("--fusion-param", action="append", default=[], metavar="KEY=VALUE",
                   help="override a fusion-benefit parameter (dispatch_ns, roundtrip_ns, memory_bw, "
                        "readback_bw, unified_memory, achieved_fraction, min_gain_ns)")
    p.add_argument("--peaks", metavar="FILE", help="peak TFLOP/s and TB/s per GPU (TOML, the format of "
                   "core/analysis/peaks.toml), tried before the shipped table")
    p.add_argument("--peak", action="append", default=[], metavar="KEY=VALUE",
                   help="override a peak figure (bf16, fp16, fp8, fp4, int8, tf32, fp32, fp64 in TFLOP/s; hbm in "
                        "TB/s) on both sides or one (a.hbm=5.3), or pick the GPU by its key (b.gpu=h100_pcie)")
    # below 40 columns the tables have no room for a name; 10,000 is wider than any terminal
    p.add_argument("--device", type=flag_number(integer=True, lo=0, hi=2**62), default=None,
                   help="a file holding several GPUs: compare this device of each (default: the first)")
    p.add_argument("--rank", type=flag_number(integer=True, lo=0, hi=2**62), default=None,
                   help="runs of rank traces: compare this rank of each run in full (default: each run's slowest)")
    p.add_argument("--jobs", type=flag_number(integer=True, lo=1, hi=1024), default=None,
                   help="runs: ranks loaded at once (default: as many as the CPUs and the available memory allow)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="runs: summarise the ranks on a Dask cluster: tcp://HOST:PORT of its scheduler, or 'local' "
                        "for a LocalCluster here (default: $KERNELDIFF_SCHEDULER, else local processes; needs "
                        "kerneldiff[cluster])")
    p.add_argument("--width", type=flag_number(integer=True, lo=MIN_WIDTH, hi=10_000), default=None,
                   help=f"text width, {MIN_WIDTH} or more (default: terminal, at most 120)")


MIN_WIDTH = 40
FORMATS = ["text", "json", "csv", "markdown", "html", "perfetto"]


def _overrides(items: list[str]) -> dict[str, float | bool]:
    """--fusion-param items, checked before any trace is read (kerneldiff.core.compare.fusion_model)."""
    if not items:   # nothing to check: the fusion model (and the result types it imports) loads later
        return {}
    from kerneldiff.core.compare.fusion_model import check_overrides

    raw = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep:
            raise UsageError(f"--fusion-param wants KEY=VALUE, got {it!r}")
        raw[k.strip()] = v
    try:
        return check_overrides(raw)
    except ValueError as e:
        raise UsageError(f"--fusion-param {e}") from None


def peak_table(args):
    """The PeakTable --peaks / --peak ask for (None: the shipped table as it is)."""
    path, items = getattr(args, "peaks", None), getattr(args, "peak", None) or []
    if not path and not items:
        return None
    from kerneldiff.core.analysis.peaks import PeakTable

    try:
        return PeakTable.load(path, items)
    except ValueError as e:   # the message names --peak KEY or the file and entry
        raise UsageError(str(e)) from None


def run(args) -> int:
    from kerneldiff.core.ranks.session import RunSession

    if args.format is None:   # --table asks for a table: CSV unless told otherwise
        args.format = "csv" if args.table else "text"

    if RunSession.names_runs(args.a, args.b):
        from .runs_report import run_runs

        return run_runs(args)
    if args.table in RUN_TABLES:
        print(f"kerneldiff: --table {args.table} is a table of runs of rank traces (give a directory, a glob or "
              f"comma-joined files on each side)", file=sys.stderr)
        return 2
    if args.rank is not None:
        print("kerneldiff: --rank picks a rank of runs of rank traces (give a directory, a glob or comma-joined "
              "files on each side)", file=sys.stderr)
        return 2
    from kerneldiff.core.session import Session

    session = Session([args.a, args.b], registry=args.registry, use_cache=not args.no_cache,
                      fusion_overrides=_overrides(args.fusion_param), peaks=peak_table(args),
                      fork_pair=True, device=args.device)
    if args.table and args.format == "text":
        print("kerneldiff: --table picks one table for --format csv or json; the text report shows them all",
              file=sys.stderr)
        return 2
    if args.table and args.format in ("markdown", "html", "perfetto"):
        print(f"kerneldiff: --table picks one table for --format csv or json; {args.format} shows its own choice",
              file=sys.stderr)
        return 2
    if args.passes and args.format not in ("html", "perfetto"):
        print("kerneldiff: --pass picks passes for --format perfetto or html", file=sys.stderr)
        return 2
    if args.format == "csv" and args.output and (args.table or "all") == "all":
        _table_base(Path(args.output))   # before minutes of loading
    session.load_all()   # probes both first: a bad or foreign B is reported before A is loaded
    absent = session.absent_phase(args.phase)
    if absent:
        print(f"kerneldiff: {absent}", file=sys.stderr)
        return 2
    try:
        cmp = session.compare(args.phase)
    except ValueError as e:
        print(f"kerneldiff: {visible(str(e))}", file=sys.stderr)
        return 2
    try:
        passes = _passes(session, args)
    except ValueError as e:
        print(f"kerneldiff: {visible(str(e))}", file=sys.stderr)
        return 2
    try:
        if args.format in ("html", "perfetto"):
            return _picture(session, cmp, args, passes)
        return _report(cmp, args)
    except BrokenPipeError:
        raise  # `| head` closed the pipe: kerneldiff.cli.main ends quietly
    except OSError as e:  # an unwritable -o path is the user's to fix, not a crash (stdout: cli.main)
        print(f"kerneldiff: {shown_path(e.filename or args.output or 'stdout')}: cannot write: {e.strerror or e}",
              file=sys.stderr)
        return 2


def _passes(session, args) -> list[int] | None:
    """The passes --pass names (checked against the traces), None when not given."""
    if not args.passes:
        return None
    numbers = session.select_passes(args.passes, args.phase)
    if args.format == "html" and len(numbers) > 1:
        raise ValueError(f"--pass {args.passes}: the HTML report draws one pass; give one number")
    return numbers


def _picture(session, cmp, args, passes: list[int] | None) -> int:
    """--format html or perfetto: both need each kernel of the passes drawn, from the loaded models."""
    if args.format == "perfetto":
        from kerneldiff.core.report.perfetto import write_perfetto

        pairs = session.pass_pairs(cmp, passes)
        if not args.output:
            write_perfetto(pairs, sys.stdout.buffer)
            sys.stdout.buffer.write(b"\n")
            sys.stdout.flush()
            return 0
        if args.output.endswith(".gz"):   # Perfetto's UI opens .json.gz as it is
            import gzip

            with gzip.open(args.output, "wb", compresslevel=6) as fh:
                write_perfetto(pairs, fh)
        else:
            with open(args.output, "wb") as fh:
                write_perfetto(pairs, fh)
        print(f"wrote {shown_path(args.output)}", file=sys.stderr)
        return 0
    from kerneldiff.core.report.html import render_html

    drawn = passes or ([n] if (n := cmp.gap_pass()) is not None else None)
    return _emit(render_html(cmp, session.pass_pairs(cmp, drawn) if drawn else None), args.output)


def _report(cmp, args) -> int:
    if args.format == "json":
        if args.table and args.table != "all":
            from kerneldiff.core.report.tables import table

            head, rows = table(cmp, args.table)
            # the CSV table's rows, a missing value as null (CSV writes an empty cell)
            text = strict_json([{h: (None if v == "" else v) for h, v in zip(head, r)} for r in rows])
        else:
            text = strict_json(cmp)   # the dataclasses as Comparison.to_dict() spells them
        return _emit(text, args.output)
    if args.format == "csv":
        return _csv(cmp, args)
    if args.format == "markdown":
        from kerneldiff.core.report.markdown import render_markdown

        return _emit(render_markdown(cmp).rstrip("\n"), args.output)
    from .render import console

    width = args.width or min(console().width, 120)
    if args.output:
        from rich.console import Console

        with open(args.output, "w", encoding="utf-8", errors="backslashreplace") as fh:
            print_text(cmp, Console(file=fh, width=width, highlight=False, markup=False, emoji=False,
                                    color_system=None))
        print(f"wrote {shown_path(args.output)}", file=sys.stderr)
        return 0
    out = console()
    out.width = width
    print_text(cmp, out)
    return 0


_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$")


def print_text(cmp, out) -> None:
    """The text report without the blanks Rich pads lines with (titles, wrapped evidence)."""
    from .render import FittingConsole

    with out.capture() as cap:
        render_text(cmp, FittingConsole(out))
    text = "\n".join(_TRAILING.sub(r"\1", line) for line in cap.get().split("\n"))
    out.file.write(text)
    out.file.flush()


def _emit(text: str, path: str | None) -> int:
    # safe_text: a file name that is not UTF-8 (in a CSV header, a label) is written as its escape
    if path:
        Path(path).write_text(safe_text(text) + "\n", encoding="utf-8")
        print(f"wrote {shown_path(path)}", file=sys.stderr)
    else:
        sys.stdout.write(safe_text(text) + "\n")
    return 0


def rows_csv(head, rows) -> str:
    """A table (header and rows) as RFC 4180 CSV text."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    w.writerow(head)
    w.writerows(rows)
    return buf.getvalue()


def csv_text(cmp, name: str) -> str:
    from kerneldiff.core.report.tables import table

    return rows_csv(*table(cmp, name))


def csv_files(output: str | None, names, text_of) -> int:
    """--table all: one CSV file per table beside -o's stem (out.csv -> out.operations.csv, ...)."""
    if not output:
        print("kerneldiff: --table all with CSV needs -o FILE (one file per table)", file=sys.stderr)
        return 2
    base = Path(output)
    stem = base.name[:-4] if base.name.endswith(".csv") else base.name
    for name in names:
        p = base.with_name(f"{stem}.{name}.csv")
        p.write_text(safe_text(text_of(name)), encoding="utf-8")
        print(f"wrote {shown_path(p)}", file=sys.stderr)
    return 0


def _csv(cmp, args) -> int:
    which = args.table or ("all" if args.output else "operations")
    if which != "all":
        return _emit(csv_text(cmp, which).rstrip("\n"), args.output)
    return csv_files(args.output, TABLES, lambda name: csv_text(cmp, name))


def _table_base(base: Path) -> None:
    """-o for one CSV file per table names their common stem (out.csv -> out.operations.csv, ...).
    A path that exists and is not a regular file (/dev/full, a FIFO, a directory) would put those
    files beside it, in /dev or next to the directory: refused."""
    import os

    from kerneldiff.core.fileio import kind_of

    try:
        st = os.stat(base)
    except OSError:
        return            # a new file: its tables go beside it (an unwritable place fails on write)
    kind = kind_of(st.st_mode)
    if kind is not None:
        raise TraceError(str(base), f"is {kind}: -o with one CSV file per table names their common stem "
                                    f"(-o out.csv writes out.operations.csv, ...); give a file name, or --table NAME")


def render_text(cmp, out) -> None:
    from rich.table import Table
    from rich.text import Text

    from kerneldiff.core.report import format as fmt
    from kerneldiff.core.report import labels

    from .ledger_report import render_headline, render_ledger
    from .render import literal, short_name, us
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
        for col in ("layer", "A total", "B total", "A med/pass", "B med/pass", "A/B", "gap"):
            t.add_column(col, justify="right", no_wrap=True)
        rows = list(cmp.layers[:10])
        outside = getattr(cmp, "outside_layers", None)
        for l in rows + ([outside] if outside is not None else []):
            t.add_row("outside" if l.layer < 0 else str(l.layer), us(l.a.total_us if l.a.kernels else None),
                      us(l.b.total_us if l.b.kernels else None), us(l.a.median_us if l.a.kernels else None),
                      us(l.b.median_us if l.b.kernels else None), _ratio(l.ratio),
                      fmt.gap(l.gap_us) if compared else fmt.ABSENT)
        out.print(t)

    if cmp.fusions:
        t = Table(title="Fusion differences", title_justify="left")
        t.add_column("kind", no_wrap=True)
        t.add_column("fused on", no_wrap=True, overflow="ellipsis", max_width=14)
        t.add_column("what", overflow="fold", max_width=max(20, w - 50))
        t.add_column("n", justify="right")
        t.add_column("measured", justify="right", no_wrap=True)
        t.add_column("est.", justify="right", no_wrap=True)
        for f in cmp.fusions:
            side = A if f.fused_side == "a" else B
            what = labels.fusion_what(f)
            capped = f.estimated_saving is not None and f.estimated_saving.capped
            t.add_row(f.kind, literal(side), literal(what), str(f.occurrences), fmt.gap(f.measured_saving_us),
                      labels.estimated_saving(f) + ("*" if capped else ""))
        out.print(t)
        if any(f.estimated_saving and f.estimated_saving.capped for f in cmp.fusions):
            out.print(Text("* only the measured cost: the model says more than the component kernels take, so the "
                           "estimate is their measured time", style="dim"))
        for f in cmp.fusions:
            out.print(Text("• ", style="bold") + literal(f.evidence) + Text(f"  (confidence {f.confidence:.2f})"))
            for key, group in ((f.fused_side, f.fused_group), (f.component_side, f.component_group)):
                if group:
                    line = Text(f"    {key.upper()} ", style="bold")
                    line.append_text(literal("  ·  ".join(labels.group_kernel(k) for k in group)))
                    out.print(line)

    if cmp.same_kernels:
        t = Table(title="Same kernels on both sides (largest total gap first; A/B of the means)", title_justify="left")
        t.add_column("kernel", overflow="ellipsis", no_wrap=True, max_width=max(16, name_w - 12))
        for col in ("A n", "B n", "A mean", "B mean", "A/B", "total gap"):
            t.add_column(col, justify="right", no_wrap=True)
        from kerneldiff.core.names.display import distinct_short_names

        shown = cmp.same_kernels[:10]
        short = distinct_short_names([k.name for k in shown], max(16, name_w - 12))   # what tells them apart
        for s in shown:
            t.add_row(literal(short[s.name]), f"{s.a.count:,}", f"{s.b.count:,}", us(s.a.mean_us),
                      us(s.b.mean_us), _ratio(s.ratio), fmt.gap(s.gap_us))
        out.print(t)
    render_work(cmp, out, name_w)
    for wmsg in cmp.warnings:
        out.print(Text("warning: ", style="yellow") + literal(wmsg))
