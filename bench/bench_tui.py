"""Explorer at scale: key-to-redraw latency on a 100k-row kernel table.

Builds the app's own ResultTable with N rows (one per kernel of a big trace: name, category, µs),
then presses keys through Textual's pilot and times each key until the screen has been refreshed.
Prints p50 / p95 / max per key kind. Not a test: run `python bench/bench_tui.py [--rows 100000]`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.text import Text  # noqa: E402
from textual import events  # noqa: E402
from textual.app import App, ComposeResult  # noqa: E402

from tui.widgets.result_table import Column, ResultTable, Row, TableSpec  # noqa: E402

NAMES = ["Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x1", "nvjet_hsh_64x32_64x16_4x1_v_bz_TNT",
         "void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>", "kernel_unified_attention_3d",
         "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "void at::native::vectorized_elementwise_kernel<4>"]
CATS = ["Dense GEMM", "Dense GEMM", "RMSNorm", "Attention", "All-Reduce", "Elementwise"]


def spec(n: int) -> TableSpec:
    rnd = random.Random(0)
    cols = [Column("i", "#", "int", 7), Column("name", "Kernel", "name"), Column("cat", "Category", "text", 12),
            Column("us", "µs", "us", 9)]

    def build(widths):
        rows = []
        for i in range(n):
            j = rnd.randrange(len(NAMES))
            name, us = f"{NAMES[j]}_{i % 97}", rnd.lognormvariate(3, 1)
            rows.append(Row(key=str(i), values=(i, name, CATS[j], us),
                            cells=(Text(str(i)), Text(name[: widths.get("name", 40)]), Text(CATS[j]), Text(f"{us:.1f}")),
                            search=name.lower()))
        return rows
    return TableSpec("kernels", cols, build)


class Bench(App):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def compose(self) -> ComposeResult:
        yield ResultTable(id="t")

    moved: asyncio.Event | None = None
    t_redraw = 0.0

    def on_data_table_row_highlighted(self, _event) -> None:
        # the cursor moved; note the time once the screen has been refreshed after it
        def done() -> None:
            self.t_redraw = time.perf_counter()
            if self.moved is not None:
                self.moved.set()
        self.call_after_refresh(done)

    def on_mount(self) -> None:
        t0 = time.perf_counter()
        self.query_one(ResultTable).show(spec(self.n))
        self.build_s = time.perf_counter() - t0
        self.query_one(ResultTable).focus()


async def _measure(app: Bench, key: str, presses: int) -> list[float]:
    times = []
    for _ in range(presses):
        app.moved = asyncio.Event()
        t0 = time.perf_counter()
        app.post_message(events.Key(key, None))
        try:
            await asyncio.wait_for(app.moved.wait(), 5)
        except asyncio.TimeoutError:
            continue  # the cursor could not move (already at the end): nothing to redraw
        times.append((app.t_redraw - t0) * 1000)
    return sorted(times)


async def run(n: int, presses: int) -> dict[str, float]:
    app = Bench(n)
    p95s = {}
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        print(f"rows {n:,}: table built in {app.build_s:.2f} s")
        for key in ("down", "pagedown", "up", "end", "home"):
            times = await _measure(app, key, presses if key in ("down", "up", "pagedown") else 1)
            await pilot.pause()
            if not times:
                continue
            p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
            p95s[key] = p95
            print(f"  {key:9} p50 {statistics.median(times):6.1f} ms   p95 {p95:6.1f} ms   max {times[-1]:6.1f} ms")
    return p95s


async def first_frame(repeat: int = 5) -> None:
    """Time from app construction to the first frame (both probes shown), demo pair, no loading."""
    from core.demo import DEMO_A, DEMO_B
    from tui.app import KernelDiffApp

    times = []
    for _ in range(repeat):
        app = KernelDiffApp([str(DEMO_A), str(DEMO_B)], use_cache=False, autoload=False)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            times.append(app.first_frame_seconds * 1000)
    times.sort()
    print(f"first frame (app start → metadata screen): median {statistics.median(times):.0f} ms, "
          f"max {times[-1]:.0f} ms over {repeat} runs (imports excluded; python -X importtime for those)")


async def main(rows: int, presses: int) -> None:
    await first_frame()
    base = await run(1_000, presses)      # baseline: a small table, same machine, same run
    big = await run(rows, presses)
    for key in big:
        if key in base:
            print(f"  {key:9} p95 {rows:,} rows / 1,000 rows = {big[key] / max(base[key], 1e-9):.2f}x")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--presses", type=int, default=60)
    a = ap.parse_args()
    asyncio.run(main(a.rows, a.presses))
