"""`kerneldiff [A [B]]`: open the explorer (the bundled demo pair when no file is given)."""

from __future__ import annotations

import gc
import sys


def launch(argv: list[str]) -> int:
    try:
        return _launch(argv)
    finally:
        gc.enable()   # (`_launch` turns it off) for a caller that goes on after a launch that ran no app


def _launch(argv: list[str]) -> int:
    from kerneldiff.cli.args import (Parser, add_all_passes, add_loading, add_phase, add_rank, add_shape_arguments,
                                     clock_mhz, count)

    p = Parser(prog="kerneldiff", description="Open the trace explorer. "
                       "Subcommands: info, compare, gate, synth, aie (kerneldiff SUBCOMMAND -h).")
    p.add_argument("traces", nargs="*", help="one trace to browse, two to compare; none: the demo pair")
    add_phase(p)
    add_loading(p)
    add_all_passes(p, help="compare every pass: warm-up, CUDA-graph capture and compile passes too, and the time "
                           "before, between and after the passes (default: the steady passes only, measured on "
                           "their forward calls; the Timeline tab says what was left out). Work launched before the "
                           "profiler's window is left out either way (reported as excluded)")
    g = p.add_argument_group("AMD AIE (NPU) traces", "the GEMM the trace ran: all of --M --K --N --rows --cols, "
                             "or none (then GMAC/s is not computed); ignored for GPU traces")
    add_shape_arguments(g)
    g.add_argument("--warmup", type=count, help="warm-up iterations before the perf ones (default 0)")
    g.add_argument("--iterations", type=count, help="expected perf iterations (default: all after the warm-up)")
    g.add_argument("--clock-mhz", type=clock_mhz, help="AIE core clock; timestamps are cycles (default 1250)")
    add_rank(p, help="runs of rank traces: open this rank of each (default: each run's slowest)")
    args = p.parse_args(argv)
    if len(args.traces) > 2:
        print("kerneldiff: give one or two traces (or a subcommand: info, compare, synth, aie)", file=sys.stderr)
        return 2
    paths = list(args.traces)
    if not paths:
        from kerneldiff.core.session import DEMO_A, DEMO_B

        paths = [str(DEMO_A), str(DEMO_B)]
    aie = {k: getattr(args, k) for k in ("M", "K", "N", "rows", "cols", "warmup", "iterations", "clock_mhz")}
    aie = {k: val for k, val in aie.items() if val is not None} or None
    from kerneldiff.core.session import RunSession

    if len(paths) == 2 and RunSession.names_runs(*paths):   # one directory alone: refused as before
        return _explore_runs(paths, args)
    # The explorer's start (Textual, the session, a stored comparison) makes objects that live as
    # long as it does, and the collector's passes over them came before the first frame (a full
    # one, 20-40 ms, right after Textual's import). Off until the app runs, which then freezes them
    # (tui.app.run_app): later passes walk only what the app makes after. (Not for runs of ranks,
    # above: summarising them makes garbage with cycles, which a freeze would keep.)
    gc.disable()
    session, ahead = _compare_ahead(paths, args, aie)   # before Textual is imported: no thread runs yet, fork is safe
    from kerneldiff.tui.app import run_app

    return run_app(paths, phase=args.phase, registry=args.registry, use_cache=not args.no_cache, aie=aie,
                   session=session, before_start=ahead, all_passes=args.all_passes)


def _compare_ahead(paths: list[str], args, aie):
    """A pair not compared so before: its comparison is computed by a forked child while this
    process imports the explorer (Session.compare_ahead): from the cached models, or after the child
    has loaded and stored them (the explorer's loads then follow its progress). Returns (the
    explorer's session, probed, and the function that waits for the child, or for its plan, or
    None where no child was started: a pair compared before, whose comparison the explorer reads
    through this session without probing both traces again), or (None, None) for a single trace
    or with --no-cache (then the explorer makes its session itself)."""
    if len(paths) != 2 or args.no_cache:
        return None, None
    from kerneldiff.core.session import open_session

    # the session the explorer would open (tui.app.explorer_session): the child's comparison is
    # stored under its key, and the explorer reads it through this very session
    session = open_session(paths, aie=aie, registry=args.registry, use_cache=True, keep_comparisons=True,
                           side_by_side=True, **({"all_passes": True} if args.all_passes else {}))
    start = getattr(session, "compare_ahead", None)     # AIE runs are compared otherwise
    return session, (start(args.phase) if start is not None else None)


def _explore_runs(paths: list[str], args) -> int:
    """Runs of rank traces in the explorer: every rank summarised here; then the Ranks and Collectives
    of both runs (the explorer's runs screen, tui/screens/runs.py), where Enter on a rank opens its
    comparison in the usual explorer (against the same rank of the other run, else that run's
    slowest) and quitting it comes back.
    With --rank N: that rank of each run, straight away."""
    from kerneldiff.core.errors import TraceError
    from kerneldiff.core.session import RunSession
    from kerneldiff.tui.app import _has_terminal, run_app

    s = RunSession(paths, registry=args.registry, use_cache=not args.no_cache, rank=args.rank)
    try:
        s.files()
        if not _has_terminal():
            print("kerneldiff: the explorer needs a terminal; for a report on runs of rank traces use "
                  "`kerneldiff compare RUN_A RUN_B`", file=sys.stderr)
            return 2
        print(f"kerneldiff: summarising the ranks of {len(paths)} runs…", file=sys.stderr)
        s.load()
        found = s.findings()
        if args.rank is not None:
            return run_app(s.rank_files(), phase=args.phase, registry=args.registry, use_cache=not args.no_cache)
    except TraceError as e:
        print(f"kerneldiff: {e}", file=sys.stderr)
        return 2
    from kerneldiff.tui.app import explore_runs

    while True:
        choice = explore_runs(s, found)
        if choice is None:
            return 0
        key, rank = choice
        rc = run_app(s.rank_files(key, rank), phase=args.phase, registry=args.registry, use_cache=not args.no_cache)
        if rc not in (0, None):
            return rc
