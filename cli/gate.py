"""`kerneldiff gate BASE NEW [--max-slowdown 3%] [--gate METRIC:LIMIT …] [--phase …]
[--format text|json|markdown] [-o FILE]`: a verdict for CI, as an exit code. BASE and NEW are two
traces or two runs of rank traces (directories, globs or comma-joined files; `--rank N`, `--jobs N`).

Exit codes: 0 pass or improvement; 1 regression or inconclusive; 2 bad input or flags (one line).
"""

from __future__ import annotations

import sys
from pathlib import Path

from kerneldiff.core.errors import shown_path
from kerneldiff.core.numbers import safe_text, strict_json

from .args import UsageError, add_all_passes, add_loading, add_phase, add_rank, add_runs


def add_parser(sub) -> None:
    p = sub.add_parser("gate", help="a regression verdict for CI: pass, improvement, regression or inconclusive")
    p.add_argument("traces", nargs="+", metavar="BASE",
                   help="BASE NEW: the baseline trace, or run (a directory, a glob or comma-joined rank traces), "
                        "and the trace (or run) of the change; with --new: every recording of the baseline")
    p.add_argument("--new", nargs="+", default=None, metavar="NEW",
                   help="several recordings of each side (gate BASE... --new NEW..., globs allowed): each check "
                        "compares the recordings' means, with a noise floor from the spread between them")
    p.add_argument("--allow-hardware-change", action="store_true",
                   help="gate a pair on different GPUs (otherwise inconclusive: the change measured is the GPU's)")
    p.add_argument("--max-slowdown", default=None, metavar="LIMIT",
                   help="how much wall clock per pass may grow, and the limit of every --gate without one "
                        "(a share like 3%% or a time like +2ms, 500us; default 3%%)")
    p.add_argument("--gate", action="append", default=[], metavar="METRIC[:ARG][:LIMIT]",
                   help="also check a metric: wall, kernels, idle, comm, op:NAME (an operation, e.g. "
                        "op:Attention:+5%%), layer:median or layer:N (e.g. layer:median:+500us); on runs also "
                        "skew (the ranks' spread of compute per pass), checked by default with wall and comm")
    add_phase(p)
    p.add_argument("--format", default="text", choices=["text", "json", "markdown"])
    p.add_argument("-o", "--output", help="write the report to this file (the verdict still goes to stderr)")
    add_all_passes(p, help="judge every pass: warm-up, CUDA-graph capture and compile passes too (default: steady "
                           "passes only)")
    add_loading(p)
    add_rank(p, help="runs: gate rank N of each run (default: each run's slowest rank)", metavar="N")
    add_runs(p, jobs_help="runs: processes summarising ranks (default: as the CPUs and memory allow)", metavar="N")


def _recordings(items: list[str]) -> list[str]:
    """Each argument a file, a glob expanded (sorted); UsageError for a glob that matches nothing."""
    import glob

    out = []
    for x in items:
        if glob.has_magic(x):
            hits = sorted(glob.glob(x))
            if not hits:
                raise UsageError(f"{shown_path(x)}: no file matches")
            out += hits
        else:
            out.append(x)
    return out


def run(args) -> int:
    from kerneldiff.core.session import parse_checks
    from kerneldiff.core.session import Session

    if args.new is not None:
        bases, news = _recordings(args.traces), _recordings(args.new)
    elif len(args.traces) == 2:
        bases, news = args.traces[:1], args.traces[1:]
    else:
        raise UsageError("give BASE NEW, or several recordings a side: BASE... --new NEW...")
    args.a, args.b = bases[0], news[0]

    from kerneldiff.core.session import parse_limit

    try:   # every flag is checked before minutes of loading
        if args.max_slowdown is not None:
            parse_limit(args.max_slowdown)
    except ValueError as e:
        raise UsageError(f"--max-slowdown: {e}") from None
    from kerneldiff.core.session import RunSession

    runs = RunSession.names_runs(args.a, args.b)
    if not runs and args.rank is not None:
        raise UsageError("--rank picks a rank of runs of rank traces (give a directory, a glob or comma-joined "
                         "files on each side)")
    try:
        checks = parse_checks(args.max_slowdown, args.gate, runs=runs)
    except ValueError as e:
        raise UsageError(f"--gate: {e}") from None
    if runs and (len(bases) > 1 or len(news) > 1):
        raise UsageError("several recordings a side are single traces, not runs of rank traces")
    if runs:
        run_session = RunSession([args.a, args.b], registry=args.registry, use_cache=not args.no_cache,
                                 rank=args.rank, jobs=args.jobs, scheduler=args.scheduler)
        session = run_session.load_pair()   # a bad file in either run: TraceError, one line, exit 2
    else:
        session = Session([args.a, args.b], registry=args.registry, use_cache=not args.no_cache, fork_pair=True,
                          all_passes=args.all_passes)
        session.load_all()   # a bad or foreign file: TraceError, one line and exit 2 (kerneldiff.cli.main)
    absent = session.absent_phase(args.phase)
    if absent:
        print(f"kerneldiff: {absent}", file=sys.stderr)
        return 2
    options = {"allow_hardware_change": args.allow_hardware_change}
    if not runs and (len(bases) > 1 or len(news) > 1):
        options["repeats"] = _repeats(bases[1:], news[1:], args, session)
    try:
        result = (run_session if runs else session).gate(checks, args.phase, args.max_slowdown or "3%", **options)
    except ValueError as e:
        raise UsageError(str(e)) from None
    from .main import version

    result.tool = {"name": "kerneldiff", "version": version()}
    text = _render(result, args.format)
    if args.output:
        try:
            Path(args.output).write_text(safe_text(text) + "\n", encoding="utf-8")
        except OSError as e:
            print(f"kerneldiff: {shown_path(args.output)}: cannot write: {e.strerror or e}", file=sys.stderr)
            return 2
        print(f"kerneldiff gate: {result.verdict} (wrote {shown_path(args.output)})", file=sys.stderr)
    else:
        sys.stdout.write(safe_text(text) + "\n")
    return result.exit_code


def _repeats(more_bases: list[str], more_news: list[str], args, session) -> tuple[list, list]:
    """([(model, timeline)] of the extra base recordings, [...] of the extra new ones): each loaded
    and compared against the other side's first recording, for its timeline on the same basis."""
    from kerneldiff.core.session import Session

    out: tuple[list, list] = ([], [])
    for i, (paths, side) in enumerate(((more_bases, "a"), (more_news, "b"))):
        for p in paths:
            pair = [p, args.b] if side == "a" else [args.a, p]
            s = Session(pair, registry=args.registry, use_cache=not args.no_cache)
            s.load_all()
            cmp = s.compare(args.phase)
            out[i].append((s.models[0 if side == "a" else 1], getattr(cmp, side).timeline))
    return out


def _render(result, fmt: str) -> str:
    if fmt == "json":
        return strict_json(result.to_dict())
    from kerneldiff.core.report.gate_report import markdown, text

    return markdown(result) if fmt == "markdown" else text(result)
