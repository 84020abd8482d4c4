"""`kerneldiff [A [B]]`: open the explorer (the bundled demo pair when no file is given)."""

from __future__ import annotations

import argparse
import sys


def launch(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="kerneldiff", description="Open the trace explorer. "
                                "Subcommands: info, compare, synth, aie (kerneldiff SUBCOMMAND -h).")
    p.add_argument("traces", nargs="*", help="one trace to browse, two to compare; none: the demo pair")
    p.add_argument("--phase", default="all", help="all | prefill | decode | mixed")
    p.add_argument("--registry", help="extra classifier rules (TOML)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the index cache")
    args = p.parse_args(argv)
    if len(args.traces) > 2:
        print("kerneldiff: give one or two traces (or a subcommand: info, compare, synth, aie)", file=sys.stderr)
        return 2
    paths = list(args.traces)
    if not paths:
        from core.demo import DEMO_A, DEMO_B

        paths = [str(DEMO_A), str(DEMO_B)]
    from tui.app import run_app

    return run_app(paths, phase=args.phase, registry=args.registry, use_cache=not args.no_cache)
