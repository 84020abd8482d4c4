"""The text report's throughput part (`kerneldiff compare`): the peaks each side is measured against,
GEMM and attention shapes side by side, and TFLOP/s, TB/s and roofline bound per operation (the
`--peaks` / `--peak` options are read in `compare.peak_table`)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from kerneldiff.core.report import format as fmt
from kerneldiff.core.report.labels import attention_shape as _attention, gemm_shape as _gemm, rate_cell as _rate
from kerneldiff.core.report.labels import roof_cell as _roof, shape_times as _times
from kerneldiff.core.report import labels

from .render import literal, natural_width, us

TOP_SHAPES = 10
TOP_OPERATIONS = 8


def _peak_line(cmp) -> Text:
    t = Text("Peaks: ", style="bold")
    for i, (key, side) in enumerate((("a", cmp.a), ("b", cmp.b))):
        if i:
            t.append("; ")
        t.append(f"{key.upper()} ")
        p = (cmp.peaks or {}).get(key)
        if p is None:
            t.append("none (GPU not in the table)")
            continue
        t.append_text(literal(p.name))
        bf = p.tflops.get("bf16") or p.tflops.get("fp16")
        t.append(f" ({'bf16' if p.tflops.get('bf16') else 'fp16'} {fmt.rate(bf)} TFLOP/s, "
                 f"{fmt.rate(p.hbm_tbps)} TB/s" + (", overridden" if p.overridden else "") + ")")
    return t


def _shape_table(cmp, rows, title: str, shape_of, width: int, with_op: bool, stacked: bool = False) -> Table:
    """Shapes side by side: time, TFLOP/s (and % of peak) and roof per side, then the gap; `stacked`
    (what a narrow report prints): one line per side under each shape, so nothing is left out."""
    per = cmp.basis == "per_pass"
    rows = rows[:TOP_SHAPES]
    dtypes = {r.dtype for r in rows}
    one = len(dtypes) == 1
    t = Table(title=title + (f", {next(iter(dtypes))}" if one else "")
              + (" (largest gap first, per pass)" if per else " (largest gap first)"), title_justify="left")
    if with_op and not stacked:
        t.add_column("op", no_wrap=True, overflow="ellipsis", max_width=12)
    t.add_column("op and shape" if with_op and stacked else "shape", no_wrap=False, overflow="fold")
    if not one:
        t.add_column("dtype", no_wrap=True)
    if stacked:
        t.add_column("", no_wrap=True)
        for col in ("/pass" if per else "time", "TFLOP/s", "roof", "gap"):
            t.add_column(col, justify="right", no_wrap=True)
    else:
        for col in (("A/pass", "B/pass") if per else ("A time", "B time")) + ("A TFLOP/s", "B TFLOP/s", "A roof",
                                                                             "B roof", "gap"):
            t.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        op, shape = shape_of(r)
        if stacked and with_op:
            cells = [literal(f"{op} {shape}")] + ([] if one else [literal(r.dtype)])
        else:
            cells = ([literal(op)] if with_op else []) + [literal(shape)] + ([] if one else [literal(r.dtype)])
        times = [us(x) for x in _times(cmp, r)]
        if stacked:
            blank = [Text("")] * len(cells)
            t.add_row(*cells, "A", times[0], _rate(r.a), _roof(r.a), fmt.gap(r.gap_us))
            t.add_row(*blank, "B", times[1], _rate(r.b), _roof(r.b), "", end_section=True)
        else:
            t.add_row(*cells, *times, _rate(r.a), _rate(r.b), _roof(r.a), _roof(r.b), fmt.gap(r.gap_us))
    return t


def _fitting_shape_table(cmp, rows, title: str, shape_of, out, with_op: bool) -> Table:
    """The side-by-side table when it fits the width, else the stacked one."""
    wide = _shape_table(cmp, rows, title, shape_of, out.width, with_op)
    if natural_width(wide) <= out.width:
        return wide
    return _shape_table(cmp, rows, title, shape_of, out.width, with_op, stacked=True)


def _backends(rows) -> Text:
    t = Text("back ends: ", style="dim")
    for i, side in enumerate(("a", "b")):
        ops = sorted({o for r in rows for o in getattr(r, side).ops})
        t.append(("; " if i else "") + f"{side.upper()} " + (", ".join(o.removeprefix("aten::") for o in ops) or
                                                             fmt.ABSENT), style="dim")
    return t


def _throughput_table(cmp) -> Table:
    """One row per side under each operation: coverage, TFLOP/s, TB/s, bound and % of its roof."""
    t = Table(title="Throughput by operation (over the kernels whose work the shapes give)", title_justify="left")
    t.add_column("operation", no_wrap=False, overflow="fold")
    t.add_column("", no_wrap=True)
    for col in ("covered", "TFLOP/s", "% peak", "TB/s", "% bw", "bound", "% roof"):
        t.add_column(col, justify="right", no_wrap=True)
    for r in cmp.throughput[:TOP_OPERATIONS]:
        for key in ("a", "b"):
            s = getattr(r, key)
            t.add_row(literal(r.category) if key == "a" else Text(""), key.upper(),
                      fmt.pct(s.covered_us / s.time_us, 0) if s.time_us > 0 else fmt.ABSENT,
                      fmt.rate(s.tflops), fmt.percent(s.pct_peak), fmt.rate(s.tbps), fmt.percent(s.pct_peak_bw),
                      s.bound or fmt.ABSENT, fmt.percent(s.pct_roofline), end_section=key == "b")
    return t


def render_work(cmp, out, name_w: int = 40) -> None:
    """The throughput part of the text report (nothing when no kernel's work is known)."""
    if not (getattr(cmp, "throughput", None) or getattr(cmp, "gemm_shapes", None)
            or getattr(cmp, "attention_shapes", None)):
        return
    out.print(_peak_line(cmp))
    if cmp.gemm_shapes:
        cover = labels.gemm_coverage(cmp)
        out.print(_fitting_shape_table(cmp, cmp.gemm_shapes, "GEMM shapes, m×n×k" + (f" ({cover})" if cover else ""),
                                       _gemm, out, True))
    if cmp.attention_shapes:
        out.print(_fitting_shape_table(cmp, cmp.attention_shapes, "Attention shapes", _attention, out, False))
        note = _backends(cmp.attention_shapes[:TOP_SHAPES])
        if labels.assumed_causal(cmp.attention_shapes[:TOP_SHAPES]):
            note.append("; * causal assumed (no mask, equal query and key lengths: is_causal not recorded)",
                        style="dim")
        out.print(note)
    if cmp.throughput:
        out.print(_throughput_table(cmp))
        out.print(Text("TFLOP/s (and the % of the dtype's peak) and TB/s over the covered kernel time; bound and "
                       "roof: the roofline's compute or memory roof the work sits under, and how close it gets",
                       style="dim"))
    elif cmp.gemm_shapes or cmp.attention_shapes:
        out.print(Text("TFLOP/s (and the % of the dtype's peak); roof: the roofline's memory (mem) or compute "
                       "(comp) roof the shape sits under on that GPU, and how close it gets", style="dim"))
