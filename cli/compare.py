"""`kerneldiff compare A B [--phase …] [--format text|json|csv|markdown|html|perfetto] [--table …] [--pass N] [-o FILE]`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from kerneldiff.core.session import visible
from kerneldiff.core.errors import TraceError, shown_path
from kerneldiff.core.numbers import strict_json
from kerneldiff.core.report.table_names import MODEL_TABLES, TABLES
from kerneldiff.core.report.run_tables import RUN_TABLES

from .args import add_all_passes, add_device, add_loading, add_phase, add_rank, add_runs, flag_number
from .output import csv_files, csv_text, emit, fusion_overrides, peak_table, table_json
from .text_report import print_text

if TYPE_CHECKING:
    from pathlib import Path

# The text report's modules (Rich, the throughput and timeline sections) are imported by the
# functions that draw it: `--format json` and `csv` never load Rich (~20 ms of a run's start).
# The comparison's own modules are imported once the traces are loading (see orchestration.load_pair_beside).


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="compare two traces and print a report")
    p.add_argument("a", help="first trace (side A); or a run of rank traces: a directory, a glob or comma-joined files")
    p.add_argument("b", help="second trace (side B); or a run, likewise")
    add_phase(p)
    p.add_argument("--format", default=None, choices=FORMATS,
                   help="text (default; csv with --table); markdown: a pull-request comment; html: one self-contained page with charts; "
                        "perfetto: both traces in one Chrome-trace JSON, passes lined up, kernel pairs joined")
    p.add_argument("--pass", dest="passes", metavar="N[-M]",
                   help="perfetto: the passes to write, by the number the Timeline shows (default: all); "
                        "html: the pass drawn to scale (default: the one with the largest wall-clock gap)")
    p.add_argument("--table", choices=list(TABLES) + list(MODEL_TABLES) + list(RUN_TABLES) + ["all"], default=None,
                   help="one table as CSV (or JSON with --format json), keys a_<field>/b_<field> as the "
                        "explorer's export (CSV without --table: all tables, one file each, with -o; "
                        "operations on stdout; JSON without --table: the whole comparison)")
    p.add_argument("--modules", action="store_true",
                   help="add the module tree (GPU time per nn.Module path, aligned across the sides) to the text "
                        "and JSON reports (computed only when asked)")
    p.add_argument("--hotspots", action="store_true",
                   help="add the host hotspots (host operations by self time; launch-bound idle by the host "
                        "operation running) to the text and JSON reports (computed only when asked)")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    add_all_passes(p, help="compare every pass and the whole window: warm-up, CUDA-graph capture and compile "
                           "passes too, and the time before, between and after the passes as ledger rows of their "
                           "own (default: the steady passes only, measured on their forward calls, since those "
                           "passes and generate()'s loop around the model do work a steady pass does not; a line "
                           "says what was left out). Work launched before the profiler's window is left out "
                           "either way (its count and time are reported as excluded)")
    add_loading(p)
    p.add_argument("--fusion-param", action="append", default=[], metavar="KEY=VALUE",
                   help="override a fusion-benefit parameter (dispatch_ns, roundtrip_ns, memory_bw, "
                        "readback_bw, unified_memory, achieved_fraction, min_gain_ns)")
    p.add_argument("--peaks", metavar="FILE", help="peak TFLOP/s and TB/s per GPU (TOML, the format of "
                   "core/analysis/peaks.toml), tried before the shipped table")
    p.add_argument("--peak", action="append", default=[], metavar="KEY=VALUE",
                   help="override a peak figure (bf16, fp16, fp8, fp4, int8, tf32, fp32, fp64 in TFLOP/s; hbm in "
                        "TB/s) on both sides or one (a.hbm=5.3), or pick the GPU by its key (b.gpu=h100_pcie)")
    add_device(p, help="a file holding several GPUs: compare this device of each (default: the first)")
    add_rank(p, help="runs of rank traces: compare this rank of each run in full (default: each run's slowest)")
    add_runs(p, jobs_help="runs: ranks loaded at once (default: as many as the CPUs and the available memory allow)")
    # below 40 columns the tables have no room for a name; 10,000 is wider than any terminal
    p.add_argument("--width", type=flag_number(integer=True, lo=MIN_WIDTH, hi=10_000), default=None,
                   help=f"text width, {MIN_WIDTH} or more (default: terminal, at most 120)")


MIN_WIDTH = 40
FORMATS = ["text", "json", "csv", "markdown", "html", "perfetto"]


def run(args) -> int:
    from kerneldiff.core.session import RunSession

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
                      fusion_overrides=fusion_overrides(args.fusion_param), peaks=peak_table(args),
                      fork_pair=True, device=args.device, all_passes=args.all_passes)
    if args.table and args.format == "text":
        print("kerneldiff: --table picks one table for --format csv or json; the text report shows them all",
              file=sys.stderr)
        return 2
    if args.table and args.format in ("markdown", "html", "perfetto"):
        print(f"kerneldiff: --table picks one table for --format csv or json; {args.format} shows its own choice",
              file=sys.stderr)
        return 2
    if (args.modules or args.hotspots) and (args.format not in ("text", "json") or args.table):
        print("kerneldiff: --modules and --hotspots add to the text report and the whole JSON document "
              "(--format text or json, without --table)", file=sys.stderr)
        return 2
    if args.passes and args.format not in ("html", "perfetto"):
        print("kerneldiff: --pass picks passes for --format perfetto or html", file=sys.stderr)
        return 2
    if args.format == "csv" and args.output and (args.table or "all") == "all":
        from pathlib import Path   # only here: a comparison to stdout needs none of it (~2.5 ms)

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
        if args.table in MODEL_TABLES:
            from .module_report import model_table

            return model_table(session, args)
        if getattr(args, "modules", False) or getattr(args, "hotspots", False):
            args.extra = (session.modules(args.phase) if args.modules else None,
                          session.host_hotspots(args.phase) if args.hotspots else None)
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
    return emit(render_html(cmp, session.pass_pairs(cmp, drawn) if drawn else None), args.output)


def _report(cmp, args) -> int:
    if args.format == "json":
        if args.table and args.table != "all":
            from kerneldiff.core.report.tables import table

            text = table_json(*table(cmp, args.table))
        elif getattr(args, "extra", None):
            from .module_report import json_document

            text = strict_json(json_document(cmp, *args.extra))
        else:
            text = strict_json(cmp)   # the dataclasses as Comparison.to_dict() spells them
        return emit(text, args.output)
    if args.format == "csv":
        return _csv(cmp, args)
    if args.format == "markdown":
        from kerneldiff.core.report.markdown import render_markdown

        return emit(render_markdown(cmp).rstrip("\n"), args.output)
    from .render import console

    width = args.width or min(console().width, 120)
    if args.output:
        from rich.console import Console

        with open(args.output, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fc = Console(file=fh, width=width, highlight=False, markup=False, emoji=False, color_system=None)
            print_text(cmp, fc)
            _extra_text(args, fc, width)
        print(f"wrote {shown_path(args.output)}", file=sys.stderr)
        return 0
    out = console()
    out.width = width
    print_text(cmp, out)
    _extra_text(args, out, width)
    return 0


def _extra_text(args, out, width: int) -> None:
    modules, hot = getattr(args, "extra", None) or (None, None)
    if modules is None and hot is None:
        return
    from .module_report import render_hotspots, render_modules

    if modules is not None:
        render_modules(modules, out, width)
    if hot is not None:
        render_hotspots(hot, out, width)


def _csv(cmp, args) -> int:
    which = args.table or ("all" if args.output else "operations")
    if which != "all":
        return emit(csv_text(cmp, which).rstrip("\n"), args.output)
    return csv_files(args.output, TABLES, lambda name: csv_text(cmp, name))


def _table_base(base: Path) -> None:
    """-o for one CSV file per table names their common stem (out.csv -> out.operations.csv, ...).
    A path that exists and is not a regular file (/dev/full, a FIFO, a directory) would put those
    files beside it, in /dev or next to the directory: refused."""
    import os

    from kerneldiff.core.session import kind_of

    try:
        st = os.stat(base)
    except OSError:
        return            # a new file: its tables go beside it (an unwritable place fails on write)
    kind = kind_of(st.st_mode)
    if kind is not None:
        raise TraceError(str(base), f"is {kind}: -o with one CSV file per table names their common stem "
                                    f"(-o out.csv writes out.operations.csv, ...); give a file name, or --table NAME")
