"""The explorer's result table at 100,000 rows: first frame, and a refill (sort, filter), old vs new.

"new" is tui/widgets/result_table.py as checked out (a ScrollView drawing the lines in view, rows
shown as indices into the built rows); "old" is the DataTable subclass it replaced, read from git
(`--old-commit`, default the commit before the rewrite) into a temporary module, or skipped when
it cannot be read or imported (it used Textual's private API, pinned to 8.2.x). Both show the same
100,000 rows with distinct kernel names (#, kernel, category, µs) in the same terminal size.

*first frame*: from `show(spec)` (the rows built from the view's data, as the explorer does)
until the table holds every row and a screen refresh with them is out; "lazy cells" is the new
table with rows whose cells are made when first drawn (as the kernels tables' views do). *refill*: a sort by name,
the reverse, a filter keeping ~10% of the rows, and clearing it again (the whole 100,000 back),
each until the refreshed frame is out. Medians of `--repeat` runs, each in a new app.
Not a test: `python bench/bench_table.py [--rows 100000] [--size 80x24] [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult

ROOT = Path(__file__).resolve().parents[1]
OLD_COMMIT = "1c102dd"   # main before the table moved to the public API

PARTS = ["Cijk_Alik_Bljk_BBS_BH_MT{}x128x64_MI16x16x1", "void vllm::rms_norm_kernel<c10::BFloat16, {}, 2>",
         "nvjet_hsh_{}x32_64x16_4x1_v_bz_TNT", "void at::native::vectorized_elementwise_kernel<{}>",
         "kernel_unified_attention_3d_{}", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL_{}"]
CATS = ["Dense GEMM", "RMSNorm", "Dense GEMM", "Elementwise", "Attention", "All-Reduce"]


def data(n: int) -> list[tuple[str, str, float]]:
    """n distinct kernel names with a category and a time."""
    rnd = random.Random(0)
    out = []
    for i in range(n):
        j = rnd.randrange(len(PARTS))
        out.append((PARTS[j].format(i), CATS[j], rnd.lognormvariate(3, 1)))
    return out


def spec_for(mod, rows: list[tuple[str, str, float]], lazy: bool = False):
    """The explorer's kind of table (the browse screen's kernels) in module `mod`'s own types;
    `lazy`: each row's cells made when it is first drawn (the new table's Row takes a function)."""
    cols = [mod.Column("i", "#", "int", 7), mod.Column("name", "Kernel", "name", max_width=96),
            mod.Column("cat", "Category", "text", 12), mod.Column("us", "µs", "us", 9)]
    sorts = {"name": mod.Sort("name", lambda r: r.values[1].lower(), ("name",), reverse=False),
             "time": mod.Sort("time", lambda r: r.values[3], ("us",))}

    def build(widths):
        w = widths.get("name", 40)

        def cells(i, name, cat, us):
            return (Text(str(i), justify="right"), Text(name if len(name) <= w else name[: w - 1] + "…"),
                    Text(cat), Text(f"{us:.1f}", justify="right"))
        return [mod.Row(str(i), (i, name, cat, us),
                        (lambda i=i, name=name, cat=cat, us=us: cells(i, name, cat, us)) if lazy
                        else cells(i, name, cat, us),
                        payload=i, search=f"{name} {cat}".lower())
                for i, (name, cat, us) in enumerate(rows)]
    return mod.TableSpec("kernels", cols, build, sorts=sorts)


def load_old(commit: str):
    try:
        source = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:tui/widgets/result_table.py"],
                                capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"old table not measured: cannot read it from git ({e})")
        return None
    path = Path(tempfile.mkdtemp()) / "old_result_table.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_result_table", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod   # its dataclasses look their module up
    try:
        spec.loader.exec_module(mod)
    except ImportError as e:
        print(f"old table not measured: it does not import with this Textual ({e})")
        return None
    return mod


class One(App):
    def __init__(self, mod) -> None:
        super().__init__()
        self.mod = mod

    def compose(self) -> ComposeResult:
        yield self.mod.ResultTable(id="t")


async def _frame_out(app: App) -> None:
    done = asyncio.Event()
    app.call_after_refresh(done.set)
    await done.wait()


async def _settled(pilot, table, rows: int) -> None:
    """Until the table holds `rows` rows (the old one sized itself on idle) and a frame is out."""
    while True:
        await pilot.pause()
        if table.row_count == rows and table.virtual_size.height >= rows + 1:
            break
    await _frame_out(pilot.app)


async def measure(mod, rows, size, lazy: bool = False) -> dict[str, tuple[float, float]]:
    """{step: (wall s, main-thread CPU s)}."""
    app = One(mod)
    out = {}
    async with app.run_test(size=size) as pilot:
        table = app.query_one("#t")
        await pilot.pause()
        spec = spec_for(mod, rows, lazy)
        t0, c0 = time.perf_counter(), time.thread_time()
        table.show(spec)
        await _settled(pilot, table, len(rows))
        out["first frame"] = time.perf_counter() - t0, time.thread_time() - c0
        line = "".join(seg.text for seg in table.render_line(1))
        assert rows[0][0][:20] in line, line    # the first row is what is drawn
        n = len(rows)
        keep = sum(1 for name, cat, _ in rows if "_7" in f"{name} {cat}".lower())
        for label, act, count in (("sort by name", lambda: table.sort_named("name"), n),
                                  ("reverse it", lambda: table.sort_named("name"), n),
                                  ("filter to ~10%", lambda: table.set_filter("_7"), keep),
                                  ("clear the filter", lambda: table.set_filter(""), n)):
            t0, c0 = time.perf_counter(), time.thread_time()
            act()
            await _settled(pilot, table, count)
            out[label] = time.perf_counter() - t0, time.thread_time() - c0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--size", default="80x24")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--old-commit", default=OLD_COMMIT)
    ap.add_argument("--no-old", action="store_true", help="measure the new table only")
    args = ap.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    from kerneldiff.tui.widgets import result_table as new
    tables = [("new", new, False), ("new, lazy cells", new, True)]
    if not args.no_old:
        old = load_old(args.old_commit)
        if old is not None:
            tables.append((f"old ({args.old_commit})", old, False))
    rows = data(args.rows)
    runs: dict[str, list[dict]] = {name: [] for name, _m, _l in tables}
    for _ in range(args.repeat):
        for name, mod, lazy in tables:   # alternate, so load on the machine hits all alike
            runs[name].append(asyncio.run(measure(mod, rows, size, lazy)))
    print(f"{args.rows:,} rows, distinct names, {args.size}; medians of {args.repeat}: "
          f"wall s (main-thread CPU s); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'':18}" + "".join(f"{name:>22}" for name, _m, _l in tables))
    for k in runs["new"][0]:
        cells = []
        for name, _m, _l in tables:
            wall = statistics.median(r[k][0] for r in runs[name])
            cpu = statistics.median(r[k][1] for r in runs[name])
            cells.append(f"{wall:.3f} ({cpu:.3f})")
        print(f"{k:18}" + "".join(f"{c:>22}" for c in cells))

if __name__ == "__main__":
    sys.exit(main())
