"""At 80 columns PyTorch's generic kernels read by what they compute: the Same-kernels table of the
H100 and H200 Llama runs shows `Mul ew`, `rsqrt vec_ew<4>`, `direct_copy unr…`, not `ew…BinaryFuncto…`
or `unro…#7}::opera…`, in the explorer at 80×24 and in the text report at 80 columns; the kernel
detail keeps the full name. The op each row should show is read from the raw name here, by
patterns of PyTorch's own naming, not by the shortener."""

from __future__ import annotations

import re

import pytest

from kerneldiff.tui.screens.main import MainScreen
from kerneldiff.tui.widgets.result_table import ResultTable
from tui_driver import PreloadedLoader, all_text, demo_app, screen_text, wait_for_main, wait_until

from conftest import real_trace

PAIR = ("h100_llama_eager_sdpa.json.gz", "h200_llama_eager_sdpa.json.gz")
OPS = (re.compile(r"CUDAFunctor((?:OnSelf_|OnOther_)?\w+)<"), re.compile(r"binary_internal::(\w+)Functor<"),
       re.compile(r"native::(?:\(anonymous namespace\)::)?(\w+?)(?:_cuda)?_kernel(?:_cuda)?\("))
GENERIC = re.compile(r"native::(?:vectorized_|unrolled_)?elementwise_kernel<")


def expected_op(name: str) -> str | None:
    """The op a generic kernel's name names first (None: not a generic kernel)."""
    if not GENERIC.search(name):
        return None
    found = [(m.start(), m.group(1).lstrip("_")) for p in OPS for m in p.finditer(name)]
    return min(found)[1] if found else None


@pytest.mark.parametrize("trace", ["a100_control.json.gz", "h100_qwen1.5-0.5b_hf.json.gz"])
def test_every_generic_kernel_of_a_real_trace_reads_by_its_op(trace):
    """Each of PyTorch's elementwise kernels in a real trace's raw events reads as its op first,
    in 16 cells as in 60 (the op cut at the cell's end, never the template in its place)."""
    import gzip
    import json

    from kerneldiff.core.names.display import short_name

    doc = json.load(gzip.open(real_trace(trace)))
    names = {e["name"] for e in doc["traceEvents"] if e.get("cat") == "kernel" and e.get("name")}
    checked = 0
    for name in names:
        op = expected_op(name)
        if op is None:
            continue
        checked += 1
        for width in (16, 60):
            shown = short_name(name, width)
            assert len(shown) <= width and shown.startswith(op[:width - 1]), (width, shown, op, name)
            assert "lambda" not in shown and "#" not in shown, shown
    assert checked >= 8


@pytest.fixture(scope="module")
def llama():
    from kerneldiff.core.orchestration import load

    paths = [str(real_trace(p)) for p in PAIR]
    return paths, {p: load(p, use_cache=False) for p in paths}


def check_names(shown: list[str], names: list[str]) -> None:
    assert len(set(shown)) == len(shown), shown
    generic = 0
    for cell, name in zip(shown, names):
        assert "#" not in cell and "::" not in cell and "lambda" not in cell, (cell, name)
        op = expected_op(name)
        if op is not None:
            generic += 1
            assert cell.startswith(op), (cell, op, name)
    assert generic >= 3, shown


@pytest.mark.slow
async def test_same_kernels_at_80x24_name_the_op(llama):
    paths, models = llama
    app = demo_app(models, paths=paths)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        assert isinstance(app.screen, MainScreen)
        await pilot.press("4")
        await wait_until(pilot, lambda: any(t.spec is not None and t.spec.name == "same_kernels" and t.display
                                            and t.region.height for t in app.screen.query(ResultTable)))
        await pilot.pause()
        table = next(t for t in app.screen.query(ResultTable) if t.spec is not None and t.spec.name == "same_kernels")
        r, width = table.region, table._col_widths[0]
        lines = screen_text(app).splitlines()[r.y + 1:r.y + r.height]
        shown = [line[r.x:r.x + width].lstrip("▌").strip() for line in lines]
        shown = shown[:shown.index("")] if "" in shown else shown   # above a scrollbar or the end
        rows = list(table.rows_shown)[:len(shown)]
        assert len(rows) == len(shown) >= 8
        check_names(shown, [row.payload.name for row in rows])
        # the detail under the table names the kernel the cursor is on in full
        name = rows[table.cursor_row].payload.name
        assert name.split("(")[0].split("<")[0].split()[-1].split("::")[-1] in all_text(app.screen)


@pytest.mark.slow
def test_same_kernels_in_the_text_report_at_80_columns_name_the_op(llama, capsys):
    from kerneldiff.cli.main import main
    from kerneldiff.core.session import Session

    paths, models = llama
    assert main(["compare", *paths, "--width", "80", "--no-cache"]) == 0
    text = capsys.readouterr().out
    table = text.split("Same kernels on both sides", 1)[1].split("└", 1)[0]
    shown = [m.group(1).strip() for m in re.finditer(r"^│ (.*?) │", table, re.M)]
    s = Session(paths, use_cache=False, loader=PreloadedLoader(models))
    s.load_all()
    names = [k.name for k in s.compare().same_kernels[:len(shown)]]
    check_names(shown, names)


@pytest.mark.slow
async def test_a_fusion_groups_kernels_read_apart():
    """Eager Llama's RMSNorm runs two different `Mul` kernels (BFloat16 and float) where compiled
    runs one Triton kernel: the explorer's fusion detail names them apart (both read `Mul ew`)."""
    from kerneldiff.core.orchestration import load

    paths = [str(real_trace(p)) for p in ("h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz")]
    app = demo_app({p: load(p, use_cache=False) for p in paths}, paths=paths)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("3")
        table = next(t for t in app.screen.query(ResultTable) if t.spec is not None and t.spec.name == "fusion")
        await wait_until(pilot, lambda: table.current_row() is not None)
        await pilot.pause()
        finding = table.current_row().payload
        assert finding.module == "LlamaRMSNorm"
        text = all_text(app.screen)
        group = finding.component_group
        muls = [k for k in group if expected_op(k.name) == "Mul"]
        assert len({k.name for k in muls}) >= 2
        # the component side's lines: `   2.97µs  aten::mul  <its kernel>`
        shown = [m.group(1).strip() for m in re.finditer(r"[µm]s  aten::mul  (.+)$", text, re.M)][:len(muls)]
        assert len(shown) == len(muls) and len(set(shown)) == len(shown), shown
        assert all(x.startswith("Mul") for x in shown), shown
