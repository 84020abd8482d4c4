"""CPU time of the comparison step (`Session.compare`), stage by stage, on loaded pairs.

    python bench/bench_compare_step.py                      # the real pairs, the dense 2x60 MB pair, recorded pairs
    python bench/bench_compare_step.py --repeat 9 --profile # + cProfile of one call per pair

Each pair is loaded once and each side's own readings (work, timeline) computed first, as the CLI's
forked children do (`prepare_side`); then `compare` runs `--repeat` times, each time on the models
as they were after loading (what a call memoises on them is dropped in between), and the
thread CPU time of every engine stage is printed, best and median (the machine is shared: the best is
the steadier figure). Importing the comparison's modules is timed in a
fresh interpreter. CPU time, not wall time: the machine is shared. It prints a table; it is not a test.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "traces"
DENSE = Path("/tmp/kerneldiff_bench_real")
PAIRS = {
    "h100/h200 eager": (TRACES / "h100_llama_eager_sdpa.json.gz", TRACES / "h200_llama_eager_sdpa.json.gz"),
    "eager/compiled": (TRACES / "h100_llama_eager_sdpa.json.gz", TRACES / "h100_llama_compiled.json.gz"),
    "mi300x/h100 qwen": (TRACES / "mi300x_qwen1.5-0.5b_hf.json.gz", TRACES / "h100_qwen1.5-0.5b_hf.json.gz"),
    "dense 2x60MB": (DENSE / "dense_60MB_1.json", DENSE / "dense_60MB_2.json"),
    # decode runs recorded on a GPU (bench/gpu/record_dense.py), when someone has recorded them
    "recorded h100/h200 graphs": (DENSE / "recorded" / "h100_dense_graphs.json", DENSE / "recorded" / "h200_dense_graphs.json"),
    "recorded graphs/compiled": (DENSE / "recorded" / "h100_dense_graphs.json", DENSE / "recorded" / "h100_dense_compiled.json"),
}
# engine.compare's stages, as the names it calls them by
STAGES = ["_View", "_operations", "_LayerGroups", "_layers", "timeline", "_outside", "_alignments", "find_fusions",
          "_same_kernels", "_side", "_wall", "attach_throughput", "check_comparability", "build_ledger",
          "exposed_communication", "host_time"]


def _timed(fn, name, acc):
    @functools.wraps(fn)
    def run(*a, **k):
        t = time.thread_time()
        try:
            return fn(*a, **k)
        finally:
            acc[name] = acc.get(name, 0.0) + time.thread_time() - t
    return run


def import_cost() -> float:
    code = ("import time, numpy, kerneldiff.core.session, kerneldiff.core.ingest.loader; t = time.process_time(); "
            "import kerneldiff.core.compare.engine; print(time.process_time() - t)")
    # with the modules' bytecode cached, as an installed package has it (a first run writes it)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                 env=env).stdout) for _ in range(6)][1:]
    return statistics.median(runs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--pairs", nargs="*", default=list(PAIRS))
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from kerneldiff.core.analysis.side_readings import prepare_side
    from kerneldiff.core.compare import engine
    from kerneldiff.core.session import Session

    print(f"import kerneldiff.core.compare.engine (after the loader): {import_cost() * 1000:.1f} ms CPU")
    # the step in this one process: a forked child's kernel pairs and fusions (engine.compare's
    # `beside`, on a large pair) would run on CPU this thread's clock does not count
    engine.BESIDE_KERNELS = float("inf")
    for label in args.pairs:
        a, b = PAIRS[label]
        if not (a.exists() and b.exists()):
            print(f"{label}: not here")
            continue
        s = Session([str(a), str(b)], use_cache=False)
        s.load_all()
        loaded = [dict(m.__dict__.get("_memo", {})) for m in s.models]
        prep = []      # each side's own readings, what the CLI's forked child computes for its side
        for _ in range(args.repeat):
            t = time.thread_time()
            for m, memo in zip(s.models, loaded):
                m.__dict__["_memo"] = dict(memo)
                prepare_side(m)
            prep.append(time.thread_time() - t)
        kept = [dict(m.__dict__.get("_memo", {})) for m in s.models]

        def fresh():
            for m, memo in zip(s.models, kept):
                m.__dict__["_memo"] = dict(memo)

        acc: dict[str, float] = {}
        saved = {n: getattr(engine, n) for n in STAGES}
        for n in STAGES:
            setattr(engine, n, _timed(saved[n], n, acc))
        totals, per_stage = [], {n: [] for n in STAGES}
        try:
            for _ in range(args.repeat):
                fresh()
                acc.clear()
                t = time.thread_time()
                s.compare()
                totals.append(time.thread_time() - t)
                for n in STAGES:
                    per_stage[n].append(acc.get(n, 0.0))
        finally:
            for n in STAGES:
                setattr(engine, n, saved[n])
        print(f"\n{label}: compare {min(totals) * 1000:.1f} ms CPU best, {statistics.median(totals) * 1000:.1f} median "
              f"(of {args.repeat})")
        for n in STAGES:
            print(f"  {n:24s} {min(per_stage[n]) * 1000:7.1f} {statistics.median(per_stage[n]) * 1000:7.1f} ms")
        print(f"  (prepare_side, both sides: {min(prep) * 1000:.1f} {statistics.median(prep) * 1000:.1f} ms)")
        if args.profile:
            fresh()
            pr = cProfile.Profile()
            pr.enable()
            s.compare()
            pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
