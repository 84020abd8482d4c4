"""The compiled scanner alone, and the reader alone, on one plain trace: each copy of the walk
(AVX2, portable) and, with --before-so, another build's `_fastscan` module, alternated in one
process, run after run, so that a busy machine slows them alike.

    python bench/bench_scan.py /tmp/replicated_1GB.json --repeat 5
    python bench/bench_scan.py TRACE.json --before-so /tmp/old/core/ingest/_fastscan.cpython-311-x86_64-linux-gnu.so --reader

*scan*: the whole traceEvents array through `scan.scan` (32,768-row calls, as the reader makes
them), the file read into memory first; *reader* (--reader): `source.read_columns`, the file into
columns in this process (the scan, turning its rows into columns, reading the file). CPU seconds
of this process (the scan releases the GIL but runs in this thread), min and median of --repeat;
GB/s is the file's bytes over them. Not a test: prints a table.
"""

from __future__ import annotations

import argparse
import gc
import importlib.machinery
import importlib.util
import os
import re
import statistics
import sys
import time

import numpy as np

from kerneldiff.core.ingest import scan as S
from kerneldiff.core.ingest.columns import _SCAN_TABLES
from kerneldiff.core.ingest.slices import Scanner
from kerneldiff.core.ingest.source import read_columns


def _module(name: str, path: str):
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def _scan_all(buf: np.ndarray, first: int, out: S.Out) -> float:
    t = time.process_time()
    pos = first
    while True:
        S.scan(buf, pos, len(buf), out, _SCAN_TABLES)
        stop, status = int(out.state[3]), int(out.state[4])
        if status not in (S.FULL, S.LIMIT) or stop == pos:
            break
        pos = stop
    return time.process_time() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", help="a plain (not gzip) trace")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--before-so", default=None, help="another build's _fastscan extension module")
    ap.add_argument("--reader", action="store_true", help="also the reader alone (read_columns)")
    args = ap.parse_args(argv)
    if not S.available():
        raise SystemExit("the compiled scanner was not built")
    current = S._load()
    contenders = {level: (current, level) for level in reversed(S.simd_levels())}
    if args.before_so:
        contenders["before"] = (_module("before._fastscan", args.before_so), None)
    size = os.path.getsize(args.trace)
    buf = np.fromfile(args.trace, np.uint8)
    m = re.search(rb'"traceEvents"\s*:\s*\[', buf[:1 << 24].tobytes())
    if m is None:
        raise SystemExit(f"{args.trace}: no traceEvents array in its first 16 MB")
    out = S.Out(Scanner.ROWS)
    kinds = ["scan"] + (["reader"] if args.reader else [])
    times: dict = {(k, c): [] for k in kinds for c in contenders}
    gc.disable()
    try:
        for _ in range(args.repeat):
            for c, (mod, level) in contenders.items():
                S._kernel = mod
                if level is not None:
                    mod.set_simd(level)
                times["scan", c].append(_scan_all(buf, m.end(), out))
                if args.reader:
                    t = time.process_time()
                    col, reader = read_columns(args.trace)
                    times["reader", c].append(time.process_time() - t)
                    del col, reader
    finally:
        S._kernel = current
    print(f"{args.trace}: {size / 1e9:.2f} GB, CPU seconds over {args.repeat} alternated runs")
    print("| what | build | min | GB/s | median | GB/s |\n|---|---|---:|---:|---:|---:|")
    for (k, c), v in times.items():
        lo, mid = min(v), statistics.median(v)
        print(f"| {k} | {c} | {lo:.3f} | {size / lo / 1e9:.2f} | {mid:.3f} | {size / mid / 1e9:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
