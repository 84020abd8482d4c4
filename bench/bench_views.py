"""First frame of the explorer's own views at 100,000 rows: the views' builders (tui/*views.py)
fed 100,000 result rows, shown in the app's ResultTable.

    python bench/bench_views.py [--rows 100000] [--size 80x24] [--repeat 3] [--only kernels,steps]

Each view is the spec the explorer shows (`kernels_spec` of the browse screen, `same_kernels_spec`
and `timeline_spec` of the comparison, `side_kernels_spec` of a drill-down, `steps_spec` and
`layer_kernels_spec` of the browse screen), built from result objects of the core's own types
(KernelTotal, SameKernel, StepTotal, PassTimeline) holding N rows with distinct kernel names (six
families of real kernel names, numbered). *first frame*: from `show(spec)` (the view's rows built,
as the explorer does, name shortening included) until the first screen refresh after it is out
(the table then holds every row); *names told apart*: from `show(spec)` until the names that would read alike
are told apart and drawn (a column of more than 20,000 names does that in a thread after the first
frame, tui/text.py LATER_NAMES; the same as the first frame otherwise); then *to the end* (End: the
last page's rows drawn). Wall and main-thread
CPU seconds, medians of --repeat runs, each in a new app, the views alternated run by run. Not a
test: prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import statistics
import sys
import time
from types import SimpleNamespace

from textual.app import App, ComposeResult

from kerneldiff.core.analysis.stats import Stats
from kerneldiff.core.analysis.trace_totals import KernelTotal, StepTotal
from kerneldiff.core.compare.result import SameKernel
from kerneldiff.core.compare.side_timeline import PassTimeline
from kerneldiff.tui import trace_views as tv
from kerneldiff.tui import views
from kerneldiff.tui.widgets.result_table import ResultTable

PARTS = ["Cijk_Alik_Bljk_BBS_BH_MT{}x128x64_MI16x16x1", "void vllm::rms_norm_kernel<c10::BFloat16, {}, 2>",
         "nvjet_hsh_{}x32_64x16_4x1_v_bz_TNT", "void at::native::vectorized_elementwise_kernel<4, {}>",
         "kernel_unified_attention_3d_{}", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL_{}"]
CATS = ["Dense GEMM", "RMSNorm", "Dense GEMM", "Elementwise", "Attention", "All-Reduce"]


def stats(rnd: random.Random) -> Stats:
    n = rnd.randrange(1, 500)
    mean = rnd.lognormvariate(3, 1)
    return Stats(count=n, total_us=n * mean, mean_us=mean, median_us=mean, min_us=mean / 2, p90_us=mean * 1.5,
                 p95_us=mean * 1.6, max_us=mean * 2, share=rnd.random() / 1000)


def kernels(n: int, seed: int = 0) -> list[KernelTotal]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        j = rnd.randrange(len(PARTS))
        out.append(KernelTotal(PARTS[j].format(i), CATS[j], "", stats(rnd), i, position=i,
                               per_pass=rnd.choice((1.0, 2.0))))
    return out


def specs(n: int) -> dict:
    """{view: a function making its spec}: each call builds the view's spec from the same objects."""
    ks = kernels(n)
    rnd = random.Random(1)
    same = [SameKernel(k.name, k.category, k.stats, stats(rnd), rnd.random() + 0.5, rnd.gauss(0, 50)) for k in ks]
    steps = [StepTotal(i, f"ProfilerStep#{i}", rnd.choice(("prefill", "decode")), "annotation", i * 1000.0,
                       900.0, 40, 800.0, 950.0) for i in range(n)]

    def pass_(i):
        span = rnd.uniform(800, 1200)
        return PassTimeline(pass_=i, name=f"ProfilerStep#{i}", phase="decode", span_us=span, busy_us=span * 0.8,
                            idle_us=span * 0.2, launch_bound_us=span * 0.1, sync_us=span * 0.05, kernels=40)
    passes = [pass_(i) for i in range(n)]
    comp = SimpleNamespace(same_kernels=same, a=SimpleNamespace(timeline=SimpleNamespace(passes=passes)),
                           b=SimpleNamespace(timeline=SimpleNamespace(passes=passes[::-1])))
    ov = SimpleNamespace(kernel_totals=ks, steps=steps)
    half = n // 2
    sides = {"a": ks[:half], "b": ks[half:]}
    totals = {s: sum(k.stats.total_us for k in v) for s, v in sides.items()}
    return {
        "kernels (browse)": lambda: tv.kernels_spec(ov),
        "same kernels": lambda: views.same_kernels_spec(comp),
        "kernels of an operation (drill)": lambda: views.side_kernels_spec("drill", sides, totals),
        "layer kernels (browse)": lambda: tv.layer_kernels_spec(0, ks),
        "steps (browse)": lambda: tv.steps_spec(ov),
        "timeline (passes)": lambda: views.timeline_spec(comp),
    }


class One(App):
    def compose(self) -> ComposeResult:
        yield ResultTable(id="t")


async def _settled(pilot, table, rows: int) -> None:
    while True:
        await pilot.pause()
        if table.row_count == rows and table.virtual_size.height >= rows + 1:
            break
    done = asyncio.Event()
    pilot.app.call_after_refresh(done.set)
    await done.wait()


async def measure(make, rows: int, size) -> dict[str, tuple[float, float]]:
    """{step: (wall s, main-thread CPU s)}."""
    out = {}
    app = One()
    async with app.run_test(size=size) as pilot:
        table = app.query_one("#t")
        await pilot.pause()
        spec = make()
        t0, c0 = time.perf_counter(), time.thread_time()
        table.show(spec)
        # the first frame: the first refresh after `show`, which builds and orders the rows at once
        first: list[tuple[float, float]] = []
        app.call_after_refresh(lambda: first.append((time.perf_counter() - t0, time.thread_time() - c0)))
        await _settled(pilot, table, rows)
        out["first frame"] = first[0]
        # a column of more than text.LATER_NAMES names tells alike names apart in a thread after the
        # first frame (the main thread's CPU here is what the UI spent meanwhile)
        while getattr(table, "later_pending", False):   # (an older build has none)
            await asyncio.sleep(0.005)
        done = asyncio.Event()
        app.call_after_refresh(done.set)
        await done.wait()
        out["names told apart"] = time.perf_counter() - t0, time.thread_time() - c0
        t0, c0 = time.perf_counter(), time.thread_time()
        await pilot.press("ctrl+end")
        done = asyncio.Event()
        app.call_after_refresh(done.set)
        await done.wait()
        out["to the end"] = time.perf_counter() - t0, time.thread_time() - c0
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--size", default="80x24")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated words of the views to measure (default: all)")
    args = ap.parse_args(argv)
    size = tuple(int(v) for v in args.size.split("x"))
    made = specs(args.rows)
    if args.only:
        made = {k: v for k, v in made.items() if any(w in k for w in args.only.split(","))}
    runs: dict[str, list[dict]] = {k: [] for k in made}
    for _ in range(args.repeat):
        for k, make in made.items():   # alternated, so load on the machine hits all alike
            gc.collect()   # the last run's garbage (a million objects at 100k rows) is not this run's pause
            runs[k].append(asyncio.run(measure(make, args.rows, size)))
    print(f"{args.rows:,} rows, {args.size}; medians of {args.repeat}: wall s (main-thread CPU s); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    steps = list(next(iter(runs.values()))[0])
    print(f"{'view':34}" + "".join(f"{s:>20}" for s in steps))
    for k, rs in runs.items():
        cells = [f"{statistics.median(r[s][0] for r in rs):.3f} ({statistics.median(r[s][1] for r in rs):.3f})"
                 for s in steps]
        print(f"{k:34}" + "".join(f"{c:>20}" for c in cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
