"""Explorer at scale: key-to-redraw latency on a 100k-row kernel table.

Builds the app's own ResultTable with N rows (one per kernel of a big trace: #, name, category, µs),
presses keys through Textual's pilot and times each key from the moment it is posted to the app until
a frame in which the cursor has moved and is in view has been rendered to terminal output (the
headless driver skips that last step; the benchmark does it, as a terminal driver would).

In the same process, as baselines: the same table with 1,000 rows (does latency grow with the row
count?) and Textual's stock DataTable with the same N rows and cells (what the table cost before it
drew its own rows). Keys: down/up (each press scrolls the table a line), page down/up, and
end/home (first/last row: ctrl+end/ctrl+home, also G/g). Keys follow each other as soon as the
previous frame is out, like a held key: each waits for Textual's next 60 Hz refresh slot.

Prints, per terminal size and table, p50 / p95 / max per key and the median main-thread CPU time
of one key-to-redraw (which other load on the machine inflates much less), then the ratios; per
run, Python's full garbage collections during the presses (the long outliers: frequent and short
with a small heap, rare and long with a big one).
Not a test: `python bench/bench_tui.py [--rows 100000] [--sizes 80x24,200x60] [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import sys
import time
from pathlib import Path


from rich.text import Text  # noqa: E402
from textual import events  # noqa: E402
from textual.app import App, ComposeResult  # noqa: E402
from textual.widgets import DataTable  # noqa: E402

from kerneldiff.tui.widgets.result_table import Column, ResultTable, Row, TableSpec, flexible_widths  # noqa: E402

NAMES = ["Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x1", "nvjet_hsh_64x32_64x16_4x1_v_bz_TNT",
         "void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>", "kernel_unified_attention_3d",
         "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "void at::native::vectorized_elementwise_kernel<4>"]
CATS = ["Dense GEMM", "Dense GEMM", "RMSNorm", "Attention", "All-Reduce", "Elementwise"]
KEYS = [("down", "down"), ("up", "up"), ("pagedown", "pagedown"), ("pageup", "pageup"),
        ("end", "ctrl+end"), ("home", "ctrl+home")]


def spec(n: int) -> TableSpec:
    cols = [Column("i", "#", "int", 7), Column("name", "Kernel", "name"), Column("cat", "Category", "text", 12),
            Column("us", "µs", "us", 9)]

    def build(widths):
        rnd = random.Random(0)
        rows = []
        for i in range(n):
            j = rnd.randrange(len(NAMES))
            name, us = f"{NAMES[j]}_{i % 97}", rnd.lognormvariate(3, 1)
            rows.append(Row(key=str(i), values=(i, name, CATS[j], us),
                            cells=(Text(str(i), justify="right"), Text(name[: widths.get("name", 40)]), Text(CATS[j]),
                                   Text(f"{us:.1f}", justify="right")),
                            search=name.lower()))
        return rows
    return TableSpec("kernels", cols, build)


class Bench(App):
    """One table; `_display` also encodes each frame for the terminal and notes when the awaited one is out."""

    def __init__(self, n: int, stock: bool = False) -> None:
        super().__init__()
        self.n, self.stock = n, stock
        self.waiting: tuple[int, asyncio.Event] | None = None   # (row the cursor left, set when drawn)
        self.t_drawn = self.cpu_drawn = 0.0

    def compose(self) -> ComposeResult:
        yield DataTable(id="t", cursor_type="row", zebra_stripes=True) if self.stock else ResultTable(id="t")

    def on_mount(self) -> None:
        t0 = time.perf_counter()
        table = self.query_one("#t")
        if self.stock:  # the same columns and cells, through DataTable's own rendering
            s = spec(self.n)
            widths = flexible_widths(s.columns, self.size.width)
            for c in s.columns:
                table.add_column(Text(c.label, justify="right" if c.kind in ("int", "us") else "left"),
                                 width=widths.get(c.key, c.width), key=c.key)
            table.add_rows(r.cells for r in s.build(widths))
        else:
            table.show(spec(self.n))
        self.build_s = time.perf_counter() - t0
        table.focus()

    def _display(self, screen, renderable) -> None:
        super()._display(screen, renderable)
        if hasattr(renderable, "render_segments"):   # a compositor update
            renderable.render_segments(self.console)  # the terminal output a real driver would write
        if self.waiting is not None:
            left, done = self.waiting
            t = self.query_one("#t")
            top = t.scroll_offset.y
            if t.cursor_row != left and top <= t.cursor_row < top + t.scrollable_content_region.height - 1:
                self.t_drawn, self.cpu_drawn = time.perf_counter(), time.thread_time()
                self.waiting = None
                done.set()


async def _press(app: Bench, key: str) -> tuple[float, float] | None:
    table = app.query_one("#t")
    done = asyncio.Event()
    app.waiting = (table.cursor_row, done)
    t0, c0 = time.perf_counter(), time.thread_time()
    app.post_message(events.Key(key, None))
    try:
        await asyncio.wait_for(done.wait(), 5)
    except asyncio.TimeoutError:
        app.waiting = None
        return None
    return (app.t_drawn - t0) * 1000, (app.cpu_drawn - c0) * 1000


async def _place(pilot, table, row: int) -> None:
    table.move_cursor(row=row, animate=False)
    await pilot.pause()
    await pilot.pause()


class FullCollections:
    """Pauses of Python's full (generation 2) garbage collections while active: the long outliers."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._t = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if info["generation"] == 2:
            if phase == "start":
                self._t = time.perf_counter()
            else:
                self.pauses.append((time.perf_counter() - self._t) * 1000)

    def __enter__(self) -> FullCollections:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self)


async def run(n: int, size: tuple[int, int], presses: int, stock: bool = False) -> dict[str, dict]:
    """{key: {"times": [...ms], "cpu": [...ms]}, "_gc": [full collection pauses, ms]} for one table in one app."""
    app = Bench(n, stock)
    out: dict[str, dict] = {}
    collections = FullCollections()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        gc.collect()
        table = app.query_one("#t")
        page = table.scrollable_content_region.height - 1
        last = table.row_count - 1
        with collections:
            for name, key in KEYS:
                times, cpu = [], []
                # down/up start at the bottom/top edge of the view, so that every press scrolls a line
                start = {"down": n // 2, "up": last - page + 1, "pagedown": 0, "pageup": last}.get(name, 0)
                await _place(pilot, table, last if name == "up" else 0)
                await _place(pilot, table, start)
                count = presses if name not in ("end", "home") else max(presses // 2, 5)
                for _ in range(count):
                    if name == "down" and table.cursor_row >= last or name == "pagedown" and table.cursor_row > last - page:
                        await _place(pilot, table, start)
                    if name == "up" and table.cursor_row <= 0 or name == "pageup" and table.cursor_row < page:
                        await _place(pilot, table, last)
                        await _place(pilot, table, start)
                    if name in ("end", "home"):  # each press jumps across the whole table
                        await _place(pilot, table, 0 if name == "end" else last)
                    r = await _press(app, key)
                    if r is not None:
                        times.append(r[0])
                        cpu.append(r[1])
                out[name] = {"times": sorted(times), "cpu": cpu}
        out["_build_s"] = app.build_s
        out["_gc"] = collections.pauses
    del app, table, pilot
    gc.collect()  # this table's garbage (a million objects at 100k rows) is not the next run's pause
    return out


def p95(xs: list[float]) -> float:
    return xs[min(len(xs) - 1, int(0.95 * len(xs)))]


async def first_frame(repeat: int = 5) -> None:
    """Time from app construction to the first frame (both probes shown), demo pair, no loading."""
    from kerneldiff.core.demo import DEMO_A, DEMO_B
    from kerneldiff.tui.app import KernelDiffApp

    times = []
    for _ in range(repeat):
        app = KernelDiffApp([str(DEMO_A), str(DEMO_B)], use_cache=False, autoload=False)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            times.append(app.first_frame_seconds * 1000)
    times.sort()
    print(f"first frame (app start → metadata screen): median {statistics.median(times):.0f} ms, "
          f"max {times[-1]:.0f} ms over {repeat} runs (imports excluded; python -X importtime for those)")


async def main(rows: int, sizes: list[tuple[int, int]], presses: int, repeat: int, stock: bool) -> None:
    await first_frame()
    tables = [("ResultTable", 1_000, False), ("ResultTable", rows, False)] + ([("DataTable", rows, True)] if stock else [])
    for size in sizes:
        # per table and key: p50, p95, CPU median of each run; the summary takes their medians
        runs: dict[tuple[str, int], dict[str, list[tuple[float, float, float, float]]]] = {}
        for r in range(repeat):
            for label, n, is_stock in tables:
                res = await run(n, size, presses, is_stock)
                build_s, pauses = res.pop("_build_s"), res.pop("_gc")
                print(f"{size[0]}x{size[1]} {label} {n:,} rows (run {r + 1}/{repeat}, built in {build_s:.1f} s): "
                      + "  ".join(f"{k} {statistics.median(v['times']):.0f}/{p95(v['times']):.0f}"
                                  for k, v in res.items() if v["times"]) + "  (p50/p95 ms); "
                      + f"{len(pauses)} full GC during the presses"
                      + (f" ({', '.join(f'{x:.0f}' for x in pauses)} ms)" if pauses else ""), flush=True)
                for k, v in res.items():
                    if v["times"]:
                        runs.setdefault((label, n), {}).setdefault(k, []).append(
                            (statistics.median(v["times"]), p95(v["times"]), v["times"][-1], statistics.median(v["cpu"])))
        print(f"\n{size[0]}x{size[1]}, median over {repeat} run(s) of {presses} presses a key "
              f"(end/home: {max(presses // 2, 5)}): key-to-redraw p50 / p95 / max ms, CPU ms (median)")
        for (label, n), keys in runs.items():
            print(f"  {label} {n:,} rows")
            for k, vals in keys.items():
                med = [statistics.median(col) for col in zip(*vals)]
                print(f"    {k:9} p50 {med[0]:6.1f}   p95 {med[1]:6.1f}   max {med[2]:6.1f}   cpu {med[3]:5.1f}")
        big, small = runs.get(("ResultTable", rows), {}), runs.get(("ResultTable", 1_000), {})
        base = runs.get(("DataTable", rows), {})
        for k in big:
            b95 = statistics.median(v[1] for v in big[k])
            line = f"  {k:9} p95 {rows:,} rows / 1,000 rows = "
            line += f"{b95 / statistics.median(v[1] for v in small[k]):.2f}x" if k in small else "—"
            if k in base:
                line += (f";  ResultTable / stock DataTable ({rows:,} rows): p95 "
                         f"{b95 / statistics.median(v[1] for v in base[k]):.2f}x, CPU "
                         f"{statistics.median(v[3] for v in big[k]) / statistics.median(v[3] for v in base[k]):.2f}x")
            print(line)
        print()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--sizes", default="80x24,200x60", help="terminal sizes, e.g. 80x24,120x40,200x60")
    ap.add_argument("--presses", type=int, default=40, help="presses per key (end/home: half)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per table; the summary shows the medians")
    ap.add_argument("--no-stock", action="store_true", help="skip the stock DataTable baseline")
    a = ap.parse_args()
    sizes = [tuple(int(x) for x in s.split("x")) for s in a.sizes.split(",")]
    asyncio.run(main(a.rows, sizes, a.presses, a.repeat, not a.no_stock))
