"""`kerneldiff aie TRACE [TRACE_B]`: per-core kernel timing, iterations and GMAC/s of AMD AIE traces.

One trace prints its cores, the system aggregate and notes; two traces (e.g. two tilings of the
same GEMM) add a side-by-side comparison. `--json OUT` writes everything (`-` for stdout, tables
suppressed). Trace strings are rendered as literal `Text`, never as rich markup.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kerneldiff.core.session import AieComparison, AieParams, AieRun, AieGemmShape as GemmShape
from kerneldiff.core.session import AieSession, AieSettings
from kerneldiff.cli.args import add_shape_arguments, clock_mhz, count, fraction, positive_float, positive_int
from kerneldiff.core.errors import TraceError, shown_path
from kerneldiff.core.session import visible
from kerneldiff.core.numbers import json_ready
from kerneldiff.core.report import format as fmt


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    d = AieParams()
    p = sub.add_parser("aie", help="analyse AMD AIE (NPU) traces: per-core kernels, iterations, GMAC/s",
                       description="Pair INSTR_EVENT_0/1 kernel markers per AIE core, split iterations at "
                                   "long LOCK_STALLs, label warm-up/perf/extra and report GMAC/s. Two "
                                   "traces are compared side by side.")
    p.add_argument("trace", help="AIE Perfetto trace (JSON array, plain or .gz)")
    p.add_argument("trace_b", nargs="?", help="a second run to compare against the first")
    g = p.add_argument_group("GEMM (all of --M --K --N --rows --cols, or none: then no GMAC/s)")
    add_shape_arguments(g)
    g.add_argument("--rows-b", type=positive_int, help="rows of the second run (default: --rows)")
    g.add_argument("--cols-b", type=positive_int, help="columns of the second run (default: --cols)")
    r = p.add_argument_group("iterations")
    r.add_argument("--warmup", type=count, default=0, help="warm-up iterations before the perf ones")
    r.add_argument("--iterations", type=count, default=None,
                   help="expected perf iterations (default: every iteration after the warm-up)")
    t = p.add_argument_group("tunables")
    t.add_argument("--clock-mhz", type=clock_mhz, default=d.clock_mhz,
                   help=f"AIE core clock; timestamps are cycles (default {d.clock_mhz:g})")
    t.add_argument("--peak-macs", type=positive_int, default=d.peak_macs_per_cycle,
                   help=f"peak MACs per cycle per core (default {d.peak_macs_per_cycle})")
    t.add_argument("--lock-stall-factor", type=positive_float, default=d.lock_stall_factor,
                   help=f"a LOCK_STALL this many times the median kernel ends an iteration "
                        f"(default {d.lock_stall_factor:g})")
    t.add_argument("--dup-gap", type=fraction, default=d.dup_gap_fraction,
                   help=f"events closer than this fraction of the median kernel are duplicates "
                        f"(default {d.dup_gap_fraction:g})")
    t.add_argument("--outlier-lo", type=positive_float, default=d.outlier_lo,
                   help="drop kernels shorter than this x median (default 1/3)")
    t.add_argument("--outlier-hi", type=positive_float, default=d.outlier_hi,
                   help=f"drop kernels longer than this x median (default {d.outlier_hi:g})")
    p.add_argument("--per-iteration", action="store_true", help="also print every core's iterations")
    p.add_argument("--json", metavar="OUT", help="write the full analysis as JSON ('-' = stdout only)")
    return p


def _shape(args: argparse.Namespace, rows: int | None, cols: int | None) -> GemmShape | None:
    dims = (args.M, args.K, args.N, rows, cols)
    if all(v is None for v in dims):
        return None
    if any(v is None for v in dims):
        raise ValueError("--M, --K, --N, --rows and --cols go together (give all five or none)")
    return GemmShape(args.M, args.K, args.N, rows, cols)


# ------------------------------------------------------------------------------------ rendering

def _num(v: Any, digits: int = 1) -> str:
    return fmt.num(v, digits)


_pct = fmt.pct


def _cells(*vals: Any) -> list[Text]:
    return [v if isinstance(v, Text) else Text(str(v)) for v in vals]


def _header(run: AieRun) -> Text:
    t = Text()
    t.append("AIE trace ", style="bold")
    t.append(shown_path(run.path))
    shape = run.shape.label() if run.shape else "no GEMM shape (GMAC/s not computed)"
    t.append(f"\n{shape} · clock {run.params.clock_mhz:g} MHz · {len(run.cores)} core(s) · "
             f"warm-up {run.warmup} · perf {run.iterations if run.iterations is not None else 'all'}")
    return t


def cores_table(run: AieRun) -> Table:
    tbl = Table(title=Text(f"Cores — {visible(run.label)}"), title_justify="left")
    for col, just in (("tile", "left"), ("pid", "right"), ("kernels", "right"), ("dup", "right"),
                      ("lost", "right"), ("outl.", "right"), ("median cyc", "right"), ("iters", "right"),
                      ("perf", "right"), ("perf span cyc", "right"), ("GMAC/s", "right"), ("busy", "right")):
        tbl.add_column(col, justify=just, no_wrap=True, min_width=8 if col == "tile" else None)
    for c in run.cores:
        s = c.stats
        iters = fmt.iterations(c.detected_iterations, c.expected_iterations)
        busy = c.perf_mean_busy
        iters_txt = Text(iters, style="yellow" if c.mismatch else "")
        tbl.add_row(*_cells(Text(visible(c.tile)), Text(str(c.pid)), _num(s.pairs), _num(s.duplicate_starts + s.duplicate_ends),
                            _num(s.orphan_starts + s.orphan_ends), _num(s.outliers),
                            _num(c.median_kernel_cycles), iters_txt, fmt.perf_window(c),
                            _num(c.perf_mean_span_cycles), _num(c.perf_mean_gmacs, 2), _pct(busy)))
    return tbl


def iterations_table(run: AieRun, core_index: int) -> Table:
    c = run.cores[core_index]
    tbl = Table(title=Text(f"Iterations — {visible(c.tile)}"), title_justify="left")
    for col in ("iter", "phase", "kernels", "mean cyc", "min", "max", "span cyc", "span µs", "busy",
                "GMAC/s", "of peak"):
        tbl.add_column(col, justify="left" if col == "phase" else "right", no_wrap=True)
    for it in c.iterations:
        style = {"perf": "", "warmup": "dim", "extra": "yellow"}.get(it.phase, "")
        tbl.add_row(*_cells(str(it.index), Text(it.phase, style=style), _num(it.n_kernels), _num(it.mean_cycles),
                            _num(it.min_cycles), _num(it.max_cycles), _num(it.span_cycles), _num(it.span_us, 2),
                            _pct(it.busy_fraction), _num(it.gmacs, 2), _pct(it.peak_fraction)))
    return tbl


def aggregate_table(run: AieRun) -> Table:
    agg = run.aggregate
    tbl = Table(title=Text(f"System (perf iterations on every core) — {visible(run.label)}"), title_justify="left")
    for col in ("iter", "runtime cyc", "runtime µs", "slowest core", "GMAC/s", "of peak", ""):
        tbl.add_column(col, justify="left" if col in ("slowest core", "") else "right", no_wrap=True)
    for s in agg.per_iteration:
        mark = "best" if s.index == agg.best_index else "worst" if s.index == agg.worst_index else ""
        tbl.add_row(*_cells(str(s.index), _num(s.runtime_cycles), _num(s.runtime_us, 2), Text(visible(s.slowest_tile)),
                            _num(s.gmacs, 2), _pct(s.peak_fraction), mark))
    if agg.per_iteration:
        tbl.add_section()
        tbl.add_row(*_cells(Text("mean", style="bold"), _num(agg.mean_runtime_cycles), _num(agg.mean_runtime_us, 2),
                            "", _num(agg.mean_gmacs, 2), "", ""))
    return tbl


def comparison_table(cmp: AieComparison) -> Table:
    tbl = Table(title=Text("Side by side"), title_justify="left")
    tbl.add_column("metric", no_wrap=True)
    tbl.add_column(Text(f"A: {visible(cmp.a_label)}"), justify="right")
    tbl.add_column(Text(f"B: {visible(cmp.b_label)}"), justify="right")
    tbl.add_column("B/A", justify="right", no_wrap=True)
    for r in cmp.rows:
        unit = f" ({r.unit})" if r.unit else ""
        digits = 3 if r.metric in ("core busy fraction", "fraction of array peak") else 1

        def cell(v: Any) -> Text:
            return Text(v) if isinstance(v, str) else Text(_num(v, digits))

        a, b = cell(r.a), cell(r.b)
        if r.better == "a":
            a.stylize("green")
        elif r.better == "b":
            b.stylize("green")
        tbl.add_row(Text(r.metric + unit), a, b, Text(fmt.ratio(r.ratio)))
    return tbl


def paired_table(cmp: AieComparison) -> Table:
    tbl = Table(title=Text("Perf iterations side by side (n-th common perf iteration of each run)"),
                title_justify="left")
    for col in ("#", "A iter", "A runtime cyc", "A GMAC/s", "B iter", "B runtime cyc", "B GMAC/s", "B/A"):
        tbl.add_column(col, justify="right", no_wrap=True)
    for p in cmp.per_iteration:
        tbl.add_row(*_cells(str(p.ordinal), _num(p.a_index), _num(p.a_runtime_cycles), _num(p.a_gmacs, 2),
                            _num(p.b_index), _num(p.b_runtime_cycles), _num(p.b_gmacs, 2),
                            fmt.ratio(p.ratio)))
    return tbl


def _notes(console: Console, run: AieRun) -> None:
    lines = [(None, n) for n in run.notes] + [(c.tile, n) for c in run.cores for n in c.notes]
    lines += [("system", n) for n in run.aggregate.notes]
    for who, note in lines:
        t = Text("note ", style="yellow")
        if who:
            t.append(f"[{visible(who)}] ")  # literal brackets: Text never parses markup
        t.append(visible(note))           # tiles and paths in notes are trace strings
        console.print(t)


def print_run(console: Console, run: AieRun, per_iteration: bool = False) -> None:
    console.print(_header(run))
    console.print(cores_table(run))
    if per_iteration:
        for i in range(len(run.cores)):
            if run.cores[i].iterations:
                console.print(iterations_table(run, i))
    if run.aggregate.per_iteration:
        console.print(aggregate_table(run))
    _notes(console, run)


# ------------------------------------------------------------------------------------------ run

def run(args: argparse.Namespace) -> int:
    try:
        params = AieParams(clock_mhz=args.clock_mhz, peak_macs_per_cycle=args.peak_macs,
                           lock_stall_factor=args.lock_stall_factor, dup_gap_fraction=args.dup_gap,
                           outlier_lo=args.outlier_lo, outlier_hi=args.outlier_hi)
        shape_a = _shape(args, args.rows, args.cols)
        shape_b = _shape(args, args.rows_b or args.rows, args.cols_b or args.cols)
    except ValueError as e:
        print(f"kerneldiff aie: {e}", file=sys.stderr)
        return 2
    paths = [args.trace] + ([args.trace_b] if args.trace_b else [])
    session = AieSession(paths, run_settings=[AieSettings(shape, args.warmup, args.iterations, params)
                                              for shape in (shape_a, shape_b)[:len(paths)]])
    run_a = session.load(0)
    run_b = cmp = None
    if args.trace_b:
        run_b = session.load(1)
        cmp = session.compare()

    if args.json:
        doc = run_a.to_dict() if run_b is None else {"a": run_a.to_dict(), "b": run_b.to_dict(),
                                                      "comparison": cmp.to_dict()}
        # json_ready: NaN/inf as null, a file name that is not UTF-8 as its escape (orjson refuses both)
        data = orjson.dumps(json_ready(doc), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
        if args.json == "-":
            sys.stdout.write(data.decode() + "\n")
            return 0
        try:
            with open(args.json, "wb") as f:
                f.write(data)
        except OSError as e:
            raise TraceError(args.json, f"cannot write: {e.strerror or e}") from None

    # a pipe or file gets rich's 80-column default, too narrow for these tables
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 150)
    print_run(console, run_a, args.per_iteration)
    if run_b is not None:
        console.print()
        print_run(console, run_b, args.per_iteration)
        console.print()
        console.print(comparison_table(cmp))
        if cmp.per_iteration:
            console.print(paired_table(cmp))
        for n in cmp.notes:
            console.print(Text("note ", style="yellow") + Text(visible(n)))
    if args.json:
        console.print(Text(f"wrote {shown_path(args.json)}", style="dim"))
    return 0
