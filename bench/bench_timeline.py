"""CPU time of one side's timeline (`core/analysis/timeline.py` `_timeline`, what a comparison asks of
each side: phase "all", cut work left out): the C gap scan against the numpy scan, alternated in one
process so that a busy machine slows both alike.

    python bench/bench_timeline.py                        # the real H100 eager trace + the dense pair
    python bench/bench_timeline.py a.json b.json.gz --repeat 9

Per trace: `first`, the best first call on a freshly loaded model (as the CLI's child and the
explorer make it: new arrays fault their pages in; one load per contender and --fresh round);
`warm`, the best of --repeat calls on one model. Process CPU time (time.process_time), not the wall
clock. Not a test.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = [ROOT.parent / "shared" / "traces" / "h100_llama_eager_sdpa.json.gz",
           Path("/tmp/kerneldiff_bench_real/dense_60MB_1.json"), Path("/tmp/kerneldiff_bench_real/dense_60MB_2.json")]


def main() -> int:
    import kerneldiff.cli.main  # noqa: F401  (first: the command's process settings, numpy's huge pages off)
    from kerneldiff.core.analysis import timeline as T
    from kerneldiff.core.analysis.cut_work import cut_mask
    from kerneldiff.core.orchestration import load

    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--fresh", type=int, default=2)
    args = ap.parse_args()
    paths = [p for p in (args.traces or DEFAULT) if p.exists()]
    contenders = [("numpy", False)] + ([("C", True)] if T._gapscan is not None else [])

    def timed(model, use_c: bool) -> float:
        model.__dict__.pop("_memo", None)
        cut_mask(model)   # the comparison has it before the timeline
        T._Scan.use_c = use_c
        t = time.process_time()
        T._timeline(model, "all", T.LAUNCH_TOLERANCE_US, False)
        return time.process_time() - t

    print(f"{'trace':32s} {'kernels':>8s} " + " ".join(f"{name + ' first':>12s} {name + ' warm':>11s}"
                                                    for name, _ in contenders))
    for p in paths:
        first = {name: [] for name, _ in contenders}
        warm = {name: [] for name, _ in contenders}
        n = 0
        for _ in range(args.fresh):
            for name, use_c in contenders:
                model = load(p, use_cache=False)
                n = len(model.kernels)
                first[name].append(timed(model, use_c))
        for _ in range(args.repeat):
            for name, use_c in contenders:
                warm[name].append(timed(model, use_c))
        print(f"{p.name:32s} {n:8d} " + " ".join(f"{min(first[name]):12.4f} {min(warm[name]):11.4f}"
                                                for name, _ in contenders))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
