"""End-to-end compare of a pair of mid-sized traces, whole process, against wafer-core in the same run.

    python bench/bench_compare.py                       # 2 x 60 MB, 3 runs each
    python bench/bench_compare.py --size 200MB --repeat 5 --wafer-python /tmp/wcv/bin/python

What is timed is what a user waits for: `kerneldiff compare A B --format json --no-cache` from
process start to exit (cold index cache; the files themselves are in the page cache for every
contender alike). The baseline is wafer-core 0.1.62's `trace_compare` (the module kerneldiff's
seeds come from), run by a Python that has it installed (`--wafer-python`; make one with
`python -m venv /tmp/wcv && /tmp/wcv/bin/pip install wafer-core==0.1.62`), in two forms:
  * ops+layers: `analyze_traces` + `format_json` (operations and layers only);
  * +fusion:    the same plus `analyze_fusion_differences`, which kerneldiff's report also covers.
kerneldiff's report holds more than either (kernel pairs per layer, same kernels, timeline, shapes).

It also breaks kerneldiff's time down in one process (interpreter start, imports, probe, each
load, compare, JSON) and times the two loads in turn (`fork_pair` off) against side by side, so
the note on where the time goes is measured, not guessed. It prints a table; it is not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_load import label, parse_size, traces_for  # noqa: E402

WAFER_SNIPPET = """
import sys
from wafer_core.lib.trace_compare import analyze_traces, format_json, analyze_fusion_differences
out = format_json(analyze_traces(sys.argv[1], sys.argv[2]))
if sys.argv[3] == "fusion":
    out += str(analyze_fusion_differences(sys.argv[1], sys.argv[2]))
sys.stdout.write(out[:100])
"""

BREAKDOWN = """
import gc, json, os, sys, time
gc.disable()                                        # as the command runs,
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # and with numpy's BLAS on one thread
t0 = time.perf_counter()
# what the command imports before it reads a trace; the loader's and the comparison's modules are
# imported by the loads (orchestration.load_pair_beside, before the fork)
from kerneldiff.core.session import Session
from kerneldiff.cli import compare as cli_compare
from kerneldiff.core.numbers import strict_json
t1 = time.perf_counter()
s = Session(sys.argv[1:3], use_cache=False, fork_pair=sys.argv[3] == "1")
s.probe(); t2 = time.perf_counter()
s.load_all(); t3 = time.perf_counter()
c = s.compare(); t4 = time.perf_counter()
text = strict_json(c)  # as `compare --format json`
t5 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "probe": t2 - t1, "loads": t3 - t2, "compare": t4 - t3, "json": t5 - t4}))
"""


def run_timed(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    return took


def stats(xs: list[float]) -> str:
    return f"{min(xs):.2f} / {statistics.median(xs):.2f} s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="60MB", help="JSON size of each trace (default 60MB)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--wafer-python", default=os.environ.get("WAFER_PYTHON", "/tmp/wcv/bin/python"),
                    help="a Python with wafer-core 0.1.62 installed (skipped when absent)")
    ap.add_argument("--no-fusion-baseline", action="store_true", help="skip wafer-core's fusion analysis (slow)")
    ap.add_argument("--dir", default=None, help="where generated traces are kept (default: the bench cache)")
    args = ap.parse_args(argv)

    size = parse_size(args.size)
    root = Path(args.dir) if args.dir else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kerneldiff" / "bench"
    a, b = traces_for(size, root, gz=False)
    kd = [sys.executable, "-m", "kerneldiff.cli", "compare", str(a), str(b), "--format", "json", "--no-cache"]
    rows: list[tuple[str, list[float]]] = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache}  # --no-cache, and nothing leaks into the real cache
        run_timed(kd, env)  # warm the page cache and Python's bytecode cache
        rows.append(("kerneldiff compare --format json", [run_timed(kd, env) for _ in range(args.repeat)]))
        parts = {}
        for fork in ("0", "1"):
            got = [json.loads(subprocess.run([sys.executable, "-c", BREAKDOWN, str(a), str(b), fork], env=env,
                                             capture_output=True, check=True).stdout) for _ in range(args.repeat)]
            parts[fork] = {k: statistics.median(g[k] for g in got) for k in got[0]}
        start = [run_timed([sys.executable, "-c", "pass"], env) for _ in range(args.repeat)]
    wafer = Path(args.wafer_python)
    if wafer.exists() and subprocess.run([str(wafer), "-c", "import wafer_core"], capture_output=True).returncode == 0:
        for form in ("layers",) + (() if args.no_fusion_baseline else ("fusion",)):
            cmd = [str(wafer), "-c", WAFER_SNIPPET, str(a), str(b), form]
            name = "wafer-core 0.1.62 " + ("ops+layers" if form == "layers" else "ops+layers+fusion")
            rows.append((name, [run_timed(cmd, dict(os.environ)) for _ in range(max(1, min(args.repeat, 2)))]))
    else:
        print(f"(wafer-core baseline skipped: no wafer_core under {wafer})", file=sys.stderr)

    base = statistics.median(rows[0][1])
    print(f"pair: {label(size)} x 2 ({a.stat().st_size / 1e6:.0f} + {b.stat().st_size / 1e6:.0f} MB), "
          f"{os.cpu_count()} CPUs, whole process, best / median of {args.repeat}")
    print(f"{'':40} {'time':>16} {'vs kerneldiff':>14}")
    for name, xs in rows:
        print(f"{name:40} {stats(xs):>16} {statistics.median(xs) / base:>13.1f}x")
    print(f"\nwhere kerneldiff's time goes (median, in-process; interpreter start {statistics.median(start):.3f} s):")
    print(f"{'':22} {'in turn':>9} {'side by side':>13}")
    for k in parts["0"]:
        print(f"{k:22} {parts['0'][k]:>8.3f}s {parts['1'][k]:>12.3f}s")
    print(f"{'total':22} {sum(parts['0'].values()):>8.3f}s {sum(parts['1'].values()):>12.3f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
