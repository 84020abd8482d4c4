"""Start-up, counted in instructions: whole processes under valgrind's callgrind, whose instruction
count (Ir) is the same on every run and on a loaded machine, where CPU time of a 20-300 ms process
moves by ±20% with the other jobs.

    python bench/bench_instructions.py                          # this interpreter's kerneldiff
    python bench/bench_instructions.py --before /path/to/other/bin/kerneldiff [--dense]

Rows: `python -c pass` and `kerneldiff --version`; the floor of a 1-kernel real trace (Python +
numpy + ISA-L + the file read, bench_real.py's FLOOR) and `kerneldiff info --json --no-cache` of
it; with --dense, the same two for bench_real.py's dense 60 MB trace (`info` runs in one process:
valgrind serialises any workers). Each process runs once first, outside valgrind, to warm the
bytecode and what kerneldiff keeps across runs (the compiled registry, in a private
XDG_CACHE_HOME). Instructions are not time (a C scan retires more of them per cycle than the
interpreter), but the same instructions are the same work: a ratio of them says how much work
start-up is above its floor. Not a test: prints a table.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_real import FLOOR, TRACES, dense  # noqa: E402


def instructions(cmd: list[str], env: dict) -> int:
    """Ir of the process (summed over any it forked)."""
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)   # warm
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    return sum(int(n.replace(",", "")) for n in re.findall(r"Collected : ([0-9,]+)", p.stderr))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kerneldiff", default=str(Path(sys.executable).parent / "kerneldiff"))
    ap.add_argument("--before", default=None, help="another kerneldiff command (an older build) beside it")
    ap.add_argument("--dense", action="store_true", help="also the dense 60 MB trace (~2 min a row)")
    ap.add_argument("--dir", default="/tmp/kerneldiff_bench_real", help="where the dense trace is made")
    args = ap.parse_args(argv)
    if not shutil.which("valgrind"):
        print("valgrind is not installed", file=sys.stderr)
        return 2
    builds = [("kerneldiff", args.kerneldiff)] + ([("before", args.before)] if args.before else [])
    py = sys.executable
    tiny = TRACES / "a100_triton_example.json.gz"
    rows = [("python -c pass", [py, "-c", "pass"])]
    rows += [(f"{name} --version", [kd, "--version"]) for name, kd in builds]
    traces = [("1-kernel trace", tiny)] if tiny.exists() else []
    if args.dense:
        d = Path(args.dir)
        d.mkdir(parents=True, exist_ok=True)
        traces.append(("dense 60 MB", dense(d, 1, False)))
    for label, p in traces:
        rows.append((f"floor, {label}", [py, "-c", FLOOR, str(p)]))
        rows += [(f"{name} info, {label}", [kd, "info", str(p), "--json", "--no-cache"]) for name, kd in builds]
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache, "OPENBLAS_NUM_THREADS": "1"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        got = {}
        for label, cmd in rows:
            got[label] = instructions(cmd, env)
            base = got["python -c pass"] if "--version" in label else \
                got.get(f"floor, {label.split(', ', 1)[-1]}") if " info, " in label else None
            ratio = f"{got[label] / base:.2f}x {'python -c pass' if '--version' in label else 'the floor'}" \
                if base else ""
            print(f"{label:40} {got[label] / 1e6:9.1f} M instructions  {ratio}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
