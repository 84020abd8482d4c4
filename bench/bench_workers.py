"""Where worker processes pay off: whole-process `kerneldiff info --json --no-cache` of each trace read
in one process and with workers, alternated run by run, on real and event-dense shapes.

    python bench/bench_workers.py                 # real Llama traces (gzip, plain), dense 30/60/100 MB
    python bench/bench_workers.py --repeat 5 FILE...

The worker threshold (core/processes/forkserver.py: PARALLEL_MIN_PLAIN, PARALLEL_MIN_GZIP) is set
to 0 or to never in the process before the command runs, so each trace is read both ways by the
same code. Each row gives, for the run of least CPU time of --repeat, the wall time and the CPU
time (user + system) of the process and of the workers it reaped: on a shared machine the wall
clock holds others' work too, CPU time much less. From the CPU times it estimates the wall time on
two otherwise idle cores (one process: its CPU time; with workers: between the larger of this
process's CPU and half of all, if both cores stay busy throughout, and this process's CPU plus
half the workers', if it only waits while they share the cores). Dense traces come from gen_dense.py (kept
in --dir). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_real import TRACES, plain_copy  # noqa: E402

RUN = """
import gc, json, os, resource, sys
from kerneldiff.core.processes import forkserver
forkserver.PARALLEL_MIN_PLAIN = forkserver.PARALLEL_MIN_GZIP = 0 if sys.argv[1] == "workers" else 1 << 62
from kerneldiff.cli.main import main, reuse_freed_memory
gc.disable()   # as `kerneldiff.cli.main.entry` runs a headless subcommand
reuse_freed_memory()
rc = main(["info", sys.argv[2], "--json", "--no-cache"] if len(sys.argv) == 3 else
          ["compare", sys.argv[2], sys.argv[3], "--format", "json", "--no-cache"])
sys.stdout.flush()
own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
os.write(2, json.dumps([own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime]).encode())
os._exit(rc)
"""


def run(cmd: list[str], env: dict) -> tuple[float, float, float]:
    """(wall, this process's CPU, its workers' CPU) of one whole process."""
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    own, kids = json.loads(r.stderr.decode().strip().splitlines()[-1])
    return took, own, kids


def dense(d: Path, mb: int, gz: bool = False) -> Path:
    out = d / f"dense_{mb}MB_1.json{'.gz' if gz else ''}"
    if not out.exists():
        subprocess.run([sys.executable, str(HERE / "gen_dense.py"), str(out), "--size", f"{mb}MB", "--seed", "1"]
                       + (["--gzip"] if gz else []), check=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/kerneldiff_bench_real", help="inflated and generated traces")
    ap.add_argument("--pair", action="store_true", help="also the dense 2x60 MB pair's compare: each side with "
                    "workers in turn, against both sides in one process each, side by side (below the threshold)")
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args(argv)
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    paths = [Path(p) for p in args.paths]
    if not paths:
        for name in ("h100_llama_eager_sdpa", "h100_llama_compiled"):
            gz = TRACES / f"{name}.json.gz"
            if gz.exists():
                paths += [gz, plain_copy(gz, d)]
        paths += [dense(d, 30), dense(d, 60), dense(d, 100), dense(d, 60, gz=True)]
    rows = [(p.name, p.stat().st_size / 1e6, [str(p)]) for p in paths]
    if args.pair:
        a, b = dense(d, 60), d / "dense_60MB_2.json"
        if not b.exists():
            subprocess.run([sys.executable, str(HERE / "gen_dense.py"), str(b), "--size", "60MB", "--seed", "2",
                            "--strings"], check=True)
        rows.append(("dense 2x60 MB compare", (a.stat().st_size + b.stat().st_size) / 1e6, [str(a), str(b)]))
    print(f"{'trace':34} {'MB':>6}   one process   |  with workers: wall, cpu = this process + workers"
          f"  | two free cores (est.): one / workers")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for name, mb, files in rows:
            cmds = {k: [sys.executable, "-c", RUN, k, *files] for k in ("one", "workers")}
            for cmd in cmds.values():
                run(cmd, env)    # warm: page cache, bytecode, the classifier registry
            got: dict[str, list] = {k: [] for k in cmds}
            for _ in range(args.repeat):
                for k, cmd in cmds.items():
                    got[k].append(run(cmd, env))
            (w1, c1, _), (w2, own, kids) = (min(got[k], key=lambda x: x[1] + x[2]) for k in ("one", "workers"))
            # on two otherwise idle cores: one process takes its CPU time; with workers, this process
            # waits while the two workers share the cores, so about its own CPU plus half theirs
            # (at best both cores stay busy throughout: the larger of its own CPU and half of all)
            hi, lo = own + kids / 2, max(own, (own + kids) / 2)
            verdict = "workers" if hi < c1 else "one process" if lo > c1 else "even"
            print(f"{name:34} {mb:6.1f}   {w1:5.2f} / {c1:4.2f} s  |  {w2:5.2f} s, "
                  f"{own + kids:4.2f} = {own:4.2f} + {kids:4.2f} s{'':14}|  {c1:4.2f} / {lo:4.2f}-{hi:4.2f} s "
                  f"({verdict})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
