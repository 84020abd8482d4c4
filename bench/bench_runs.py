"""Runs of rank traces: an N-rank × 2 pair compared end to end, against loading the 2N files one by one.

    python bench/bench_runs.py                       # 8 ranks × 2 runs × 250 MB (generation is cached)
    python bench/bench_runs.py --ranks 4 --size 50MB
    python bench/bench_runs.py --ranks 64 --size 20MB   # many ranks: local pool against LocalCluster(2)

Each run's rank files are copies of one synthetic trace per run (`kerneldiff.core.synth.pair`, tp=N:
all-reduce kernels after every layer), named `rankI_trace.json` (torchtitan's pattern), plain JSON.
Every measurement runs in a fresh process without the cache: wall time, CPU time, and the peak of the
summed PSS of the process and its children (sampled every 50 ms from outside, as bench_load does).

- `compare`:  `RunSession([A, B]).compare()`: every rank summarised (processes as the CPUs and the
  available memory allow), then the representative ranks loaded again and compared in full;
- `runs`:     the rank summaries alone (the parallel part);
- `runs1`:    the same in one process (`--jobs 1`): what the processes add or save;
- `cluster2`: the rank summaries on a Dask LocalCluster of 2 workers (`--scheduler local --jobs 2`,
  needs kerneldiff[cluster]): only summaries travel, so the driver's peak per rank stays small;
- `one by one`: the 2N files loaded in turn in one process (`Session.load` of each, then dropped).
MB per rank is the peak PSS per rank summarised; the driver's columns are its own peak RSS (the
process that holds every summary: with a cluster, what bounds a run's size). `--tasks runs,cluster2`
runs a subset.
Not a test: prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_load import _descendants, _pss_kb, label, parse_size  # noqa: E402


def runs_for(size: int, ranks: int, root: Path) -> tuple[Path, Path]:
    from kerneldiff.core.synth.pair import SynthConfig, write_trace

    out = []
    for side, (vendor, salt) in zip("ab", (("nvidia", 0), ("amd", 1))):
        d = root / f"runs_{label(size)}_{ranks}" / side
        if len(list(d.glob("rank*_trace.json"))) != ranks:
            d.mkdir(parents=True, exist_ok=True)
            src = d / "source.json.tmp"
            write_trace(src, SynthConfig(vendor=vendor, tp=ranks, target_bytes=size, salt=salt, gzip=False))
            for i in range(ranks):
                shutil.copyfile(src, d / f"rank{i}_trace.json")
            src.unlink()
        out.append(d)
    return out[0], out[1]


def child(task: str, a: str, b: str) -> dict:
    from kerneldiff.core.ranks.session import RunSession
    from kerneldiff.core.session import Session

    t0 = time.perf_counter()
    if task == "compare":
        s = RunSession([a, b], use_cache=False)
        cmp, found = s.compare()
        n = len(found.ranks["a"]) + len(found.ranks["b"])
    elif task in ("runs", "runs1"):
        s = RunSession([a, b], use_cache=False, jobs=1 if task == "runs1" else None)
        n = sum(len(r.ranks) for r in s.load())
    elif task == "cluster2":
        s = RunSession([a, b], use_cache=False, jobs=2, scheduler="local")
        n = sum(len(r.ranks) for r in s.load())
    else:
        files = sorted(str(p) for d in (a, b) for p in Path(d).glob("rank*_trace.json"))
        for f in files:
            Session([f], use_cache=False, workers=1).load(0)
        n = len(files)
    return {"seconds": time.perf_counter() - t0, "ranks": n,
            "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure(task: str, a: Path, b: Path) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", task, str(a), str(b)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, sum(_pss_kb(p) for p in _descendants(proc.pid)))
        time.sleep(0.05)
    out, err = proc.communicate()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{task} failed: {err.decode(errors='replace').strip().splitlines()[-1:]}")
    res = json.loads(out.decode().strip().splitlines()[-1])
    res["wall"] = time.perf_counter() - t0
    res["cpu"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    res["pss_mb"] = peak / 1024
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--size", default="250MB", help="each rank file's size (JSON)")
    p.add_argument("--dir", default=os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                 "kerneldiff", "bench"))
    p.add_argument("--tasks", default="", help="comma-separated subset of compare,runs,runs1,cluster2,serial")
    p.add_argument("--child", nargs=3, metavar=("TASK", "A", "B"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    size = parse_size(args.size)
    t0 = time.perf_counter()
    a, b = runs_for(size, args.ranks, Path(args.dir))
    print(f"runs: {a} and {b} ({args.ranks} × {label(size)} each; ready in {time.perf_counter() - t0:.1f} s); "
          f"{os.cpu_count()} CPUs", file=sys.stderr)
    print(f"| task ({args.ranks} ranks × 2 × {label(size)}) | wall s | CPU s | peak PSS MB | MB per rank "
          f"| driver peak RSS MB | driver MB per rank |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    tasks = [("compare", "compare RUN_A RUN_B, end to end"), ("runs", "rank summaries alone"),
             ("runs1", "rank summaries alone, one process (--jobs 1)"),
             ("serial", f"the {2 * args.ranks} files loaded one by one")]
    try:
        import distributed  # noqa: F401

        tasks.insert(3, ("cluster2", "rank summaries on a LocalCluster of 2 workers (--scheduler local)"))
    except ImportError:
        print("(distributed not installed: no cluster row; pip install 'kerneldiff[cluster]')", file=sys.stderr)
    if args.tasks:
        want = args.tasks.split(",")
        tasks = [t for t in tasks if t[0] in want]
    for task, name in tasks:
        r = measure(task, a, b)
        # the driver: the process that maps the ranks and holds every summary (its own peak RSS;
        # the pool's or the cluster's workers are in the PSS column)
        print(f"| {name} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['pss_mb']:.0f} | {r['pss_mb'] / r['ranks']:.1f} "
              f"| {r['maxrss_mb']:.0f} | {r['maxrss_mb'] / r['ranks']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
