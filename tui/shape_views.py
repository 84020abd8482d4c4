"""The Shapes tab: GEMM and attention shapes side by side (the comparison's `gemm_shapes` and
`attention_shapes`), and the kernels that ran one shape on each side. Presentation only: every
figure is core's (kerneldiff.core.compare.throughput); this module lays it out.

One table shows one kind at a time (`a` toggles GEMM / attention): the two kinds have different
shape columns, and a decode run's attention shapes (one per key length) would bury the GEMMs in a
table sorted by gap.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from kerneldiff.core.session import attention_counterparts
from kerneldiff.core.session import Comparison
from kerneldiff.core.session import AttentionShape, GemmShape, ShapeSide
from kerneldiff.core.report import format as fmt
from kerneldiff.core.report import labels

from .text import (DIM, SIDE_LETTER, SIDE_STYLE, cut, fmt_gap, fmt_pct, fmt_ratio, fmt_us, literal, readable,
                   shortener, span)
from .views import _num, _row_style, gap_sort, name_sort, searchable, time_sort
from .widgets.result_table import Column, Row, Sort, TableSpec

GEMM, ATTENTION = "gemm", "attention"
KIND_WORDS = {GEMM: "GEMM shapes", ATTENTION: "attention shapes"}
SIDES = ("a", "b")


def shapes_of(comp: Comparison, kind: str) -> list:
    return comp.gemm_shapes if kind == GEMM else comp.attention_shapes


def gemm_mnk(g: GemmShape) -> str:
    return f"{g.m}×{g.n}×{g.k}"


def attention_text(s: AttentionShape) -> str:
    """`B16 H16/16 S559×559 D64 causal*` (query/kv heads, query×key length; * causal assumed)."""
    d = f"D{s.head_dim}" + (f"/{s.head_dim_v}" if s.head_dim_v != s.head_dim else "")
    return (("bwd " if s.op.endswith("backward") else "") + labels.batch_heads(s) +
            f" S{s.seq_q}×{s.seq_k} {d}" + labels.causal_mark(s))


def shape_title(s) -> str:
    """One line naming a shape: `mm 8944×2816×1024 bf16`, `32 × bmm …`, `attention B16 … bf16`."""
    if isinstance(s, GemmShape):
        batch = f"{s.batch} × " if s.batch > 1 else ""
        return f"{s.op.removeprefix('aten::')} {batch}{gemm_mnk(s)} {s.dtype}"
    return f"attention {attention_text(s)} {s.dtype}"


def shape_key(s) -> tuple:
    """What makes two rows the same shape (to find a shape again after the phase changes)."""
    if isinstance(s, GemmShape):
        return (GEMM, s.op, s.m, s.n, s.k, s.batch, s.dtype)
    return (ATTENTION, s.op, s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_k, s.head_dim, s.head_dim_v, s.causal,
            s.dtype)


def side_time(comp: Comparison, side: ShapeSide, key: str) -> float | None:
    """A side's time on the comparison's basis (per pass when the pass counts differ); None: it runs none."""
    if not side.calls:
        return None
    return comp.on_basis(key, side.total_us)


def bound_text(a: ShapeSide, b: ShapeSide) -> str:
    """`compute`, `memory`, `mem/comp` (A's, then B's, when they differ), "" when unknown."""
    if a.bound and b.bound and a.bound != b.bound:
        return f"{a.bound[:4]}/{b.bound[:4]}"
    return a.bound or b.bound or ""


def flop_text(flops: float) -> str:
    """`23.6 GFLOP`, `12.6 MFLOP`: a count of floating-point operations in the unit that keeps it short."""
    for scale, unit in ((1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP"), (1e3, "kFLOP")):
        if flops >= scale:
            return f"{flops / scale:.3g} {unit}"
    return f"{flops:.0f} FLOP"


def _rate(v: float | None) -> Text:
    return _num(fmt.rate(v))


def _percent(v: float | None) -> Text:
    return _num(fmt.percent(v))


# --- the tab ----------------------------------------------------------------------------------

def shapes_spec(comp: Comparison, kind: str = GEMM) -> TableSpec:
    """One row per shape (largest |gap| first): each side's time, TFLOP/s and % of its dtype's peak,
    and the roof (compute or memory) the shape sits under."""
    rows_in = shapes_of(comp, kind)
    per_pass = comp.basis == "per_pass"
    ta, tb = ("A/pass", "B/pass") if per_pass else ("A time", "B time")
    if kind == GEMM:
        ops = [g.op.removeprefix("aten::") for g in rows_in]
        widest = max((len(gemm_mnk(g)) for g in rows_in), default=8)
        lead = [Column("op", "Op", "text", max(min(max((len(o) for o in ops), default=2), 12), 2)),
                Column("shape", "M×N×K", "text", max(widest, 5)), Column("batch", "Batch", "int", 5),
                Column("dtype", "Dtype", "text", max([5, *(len(g.dtype) for g in rows_in)]))]
    else:
        widest = max((len(attention_text(s)) + 2 for s in rows_in), default=8)
        lead = [Column("shape", "Attention shape", "text", max(widest, 15)),
                Column("dtype", "Dtype", "text", max([5, *(len(s.dtype) for s in rows_in)]))]
    n = len(lead)
    cols = [*lead, Column("a_time", ta, "us", 8), Column("b_time", tb, "us", 8), Column("gap", "Gap", "gap", 9),
            Column("a_tflops", "A TFLOP/s", "num", 9), Column("b_tflops", "B TFLOP/s", "num", 9),
            Column("a_pct_roof", "A %roof", "num", 7), Column("b_pct_roof", "B %roof", "num", 7),
            Column("bound", "Bound", "text", 9), Column("a_tbps", "A TB/s", "num", 6), Column("b_tbps", "B TB/s", "num", 6),
            Column("ratio", "A/B", "ratio", 6),
            Column("a_calls", "A calls", "int", 7), Column("b_calls", "B calls", "int", 7)]

    pairs = attention_counterparts(comp) if kind == ATTENTION else {}

    def build(w: dict[str, int]) -> list[Row]:
        out = []
        for i, s in enumerate(rows_in):
            a, b = s.a, s.b
            at, bt = side_time(comp, a, "a"), side_time(comp, b, "b")
            bound = bound_text(a, b)
            if kind == GEMM:
                op = s.op.removeprefix("aten::")
                head_vals = (s.op, gemm_mnk(s), s.batch, s.dtype)
                head_cells = (literal(cut(op, lead[0].width)), literal(gemm_mnk(s)), _num(str(s.batch)),
                              literal(s.dtype))
            else:
                # ↔: one side only, the other side runs the same attention recorded otherwise (the detail says how)
                text = attention_text(s) + (" ↔" if i in pairs else "")
                head_vals = (attention_text(s), s.dtype)
                head_cells = (literal(text), literal(s.dtype))
            # %roof: of the roof that bounds the shape on that GPU (compute peak, or memory bandwidth
            # for a memory-bound decode GEMM, which read 0.9% of compute peak at 70% of its roof)
            vals = (*head_vals, at, bt, s.gap_us, a.tflops, b.tflops, a.pct_roofline, b.pct_roofline, bound,
                    a.tbps, b.tbps, s.ratio, a.calls, b.calls)
            cells = (*head_cells, _num(fmt_us(at)), _num(fmt_us(bt)), _num(fmt_gap(s.gap_us)),
                     _rate(a.tflops), _rate(b.tflops), _percent(a.pct_roofline), _percent(b.pct_roofline),
                     literal(bound), _rate(a.tbps), _rate(b.tbps), _num(fmt_ratio(s.ratio)), _num(f"{a.calls:,}"),
                     _num(f"{b.calls:,}"))
            names = [k.name for side in (a, b) for k in side.kernels]
            search = searchable(shape_title(s), *a.ops, *b.ops, *names) + f"\n{KIND_WORDS[kind]}"
            out.append(Row("|".join(map(str, shape_key(s))), vals, cells, payload=s, style=_row_style(s.gap_us),
                           search=search))
        return out

    sorts = {"gap": gap_sort(n + 2), "time": time_sort((n, n + 1), ("a_time", "b_time")),
             "name": Sort("shape", lambda r: shape_key(r.payload), ("shape",), False, "by operator, then size")}
    name = "gemm_shapes" if kind == GEMM else "attention_shapes"
    return TableSpec(name, cols, build, default_sort="gap", sorts=sorts, fixed=2 if kind == GEMM else 1)


def _no_shapes(comp: Comparison) -> list[str]:
    return [SIDE_LETTER[k] for k in SIDES if getattr(comp, k).shapes_recorded is False]


def shapes_hint(comp: Comparison, kind: str = GEMM) -> Text:
    """The line over the table: how many shapes of each kind, the toggle, or why there are none."""
    t = Text()
    lacking = _no_shapes(comp)
    if len(lacking) == 2:
        t.append("no operator shapes recorded (traces profiled without record_shapes=True): no GEMM or "
                 "attention shapes, FLOPs or % of peak", style="yellow")
        return t
    here, other = shapes_of(comp, kind), shapes_of(comp, ATTENTION if kind == GEMM else GEMM)
    if lacking:
        t.append(f"{lacking[0]} has no recorded shapes (record_shapes=False): its side is empty   ", style="yellow")
    if here:
        t.append(f"{len(here)} {KIND_WORDS[kind] if len(here) != 1 else KIND_WORDS[kind][:-1]}", style="bold")
        t.append(", largest |gap| first" + (" (per pass)" if comp.basis == "per_pass" else ""), style=DIM)
        cover = labels.gemm_coverage(comp) if kind == GEMM else ""
        if cover:
            t.append(f"; {cover}", style=DIM)
    else:
        t.append(f"no {KIND_WORDS[kind]} in this phase", style="bold")
        t.append(" (no such operator with usable recorded shapes)" if not lacking else "", style=DIM)
    paired = len(attention_counterparts(comp)) if kind == ATTENTION else 0
    if paired:
        t.append(f"   ↔ {paired}: one side only, pair below", style=DIM)
    t.append(f"   a: {KIND_WORDS[ATTENTION if kind == GEMM else GEMM]} ({len(other)})", style=DIM)
    if here:
        t.append("   Enter: kernels", style=DIM)
    return t


def shape_detail(s, comp: Comparison) -> Group:
    """Under the table: the highlighted shape's work per call and each side's kernels."""
    head = literal(shape_title(s), "bold")
    head.append(f"   {flop_text(s.flops)} and {fmt.size(s.bytes)} per call", style=DIM)
    g = Table.grid(padding=(0, 1))
    g.add_column(no_wrap=True)
    g.add_column(justify="right", no_wrap=True)
    g.add_column(justify="right", no_wrap=True)
    g.add_column(overflow="fold")
    g.add_row(Text(""), *(Text(h, style=DIM) for h in ("time", "TFLOP/s", "kernel")))
    for key in SIDES:
        side = getattr(s, key)
        letter = span(SIDE_LETTER[key], f"bold {SIDE_STYLE[key]}")
        if not side.calls:
            g.add_row(letter, Text(""), Text(""), Text("runs none of it", style=DIM))
            continue
        for i, k in enumerate(side.kernels):
            g.add_row(letter if i == 0 else Text(""), Text(fmt_us(k.total_us)), Text(fmt.rate(k.tflops)),
                      literal(readable(k.name)))
        more = side.kernel_names - len(side.kernels)
        if more > 0:
            g.add_row(Text(""), Text(""), Text(""), Text(f"… {more} more kernel name{'s' if more > 1 else ''}",
                                                         style=DIM))
    parts = [head, g]
    if isinstance(s, AttentionShape):
        shapes = comp.attention_shapes
        i = next((i for i, x in enumerate(shapes) if x is s), None)
        cp = attention_counterparts(comp).get(i) if i is not None else None
        if cp is not None:   # first: the one thing to know about this row
            parts.insert(1, _counterpart_text(s, shapes[cp.index], cp))
    return Group(*parts)


def _counterpart_text(s: AttentionShape, t: AttentionShape, cp) -> Text:
    """Where the other side's equivalent of a one-sided attention shape is, and why it differs."""
    mine = "a" if s.a.calls else "b"
    other = "b" if mine == "a" else "a"
    out = Text()
    out.append("↔ ", style="bold")
    out.append(f"{SIDE_LETTER[other]} runs the same attention as ")
    out.append(attention_text(t), style="bold")
    why = []
    if cp.kv_heads:
        why.append(f"KV heads {s.kv_heads} → {t.kv_heads} ({'expanded' if t.kv_heads > s.kv_heads else 'not expanded'} "
                   "before attention, as a compiled graph's repeat_kv does)")
    if cp.causal:
        why.append("one counted causal (no mask, Sq = Sk: half the scores), the other full (a mask): "
                   "FLOPs per call differ 2×, so compare their times, not TFLOP/s")
    if why:
        out.append(": " + "; ".join(why), style=DIM)
    ts = getattr(t, other)
    out.append(f"\n   {SIDE_LETTER[other]} there: {fmt_us(ts.total_us)} in {ts.calls:,} calls", style=DIM)
    return out


# --- one shape's kernels --------------------------------------------------------------------

def shape_kernels_spec(s, name: str) -> TableSpec:
    """A's kernels for the shape, then B's, each longest first: launches, time, TFLOP/s, share of the
    side's time in the shape."""
    items = [(key, k) for key in SIDES for k in getattr(s, key).kernels]
    cols = [Column("side", "", "text", 1),
            Column("name", "Kernel", "name", min_width=16,
                   max_width=max((len(readable(k.name)) for _s, k in items), default=16)),
            Column("count", "Calls", "int", 6), Column("total", "Time", "us", 8), Column("mean", "Mean", "us", 8),
            Column("tflops", "TFLOP/s", "num", 7), Column("share", "% row", "pct", 6)]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        short = shortener([k.name for _s, k in items], w["name"])
        for i, (key, k) in enumerate(items):
            side_total = getattr(s, key).total_us
            share = k.total_us / side_total if side_total > 0 else None
            vals = (SIDE_LETTER[key], k.name, k.count, k.total_us, k.mean_us, k.tflops, share)
            cells = (span(SIDE_LETTER[key], f"bold {SIDE_STYLE[key]}"), literal(short(k.name)),
                     _num(f"{k.count:,}"), _num(fmt_us(k.total_us)), _num(fmt_us(k.mean_us)), _rate(k.tflops),
                     _num(fmt_pct(share)))
            rows.append(Row(f"{key}{i}", vals, cells, payload=(key, k), search=searchable(k.name) + f"\n{key}"))
        return rows

    sorts = {"time": Sort("time", lambda r: r.values[3], ("total",), True, "largest time first"),
             "name": name_sort(1, "name")}
    return TableSpec(name, cols, build, sorts=sorts, fixed=2)


def shape_summary(s, comp: Comparison) -> Text:
    """The line(s) over one shape's kernels: the shape, then each side's figures."""
    t = literal(shape_title(s), "bold")
    t.append(f"   A/B {fmt_ratio(s.ratio)}   gap {fmt_gap(s.gap_us)}   phase {comp.phase}")
    for key in SIDES:
        side = getattr(s, key)
        t.append("\n")
        t.append(f"{SIDE_LETTER[key]} ", style=f"bold {SIDE_STYLE[key]}")
        if not side.calls:
            t.append("runs none of it", style=DIM)
            continue
        if getattr(side, "beyond_peak", False):
            t.append(f"{fmt_us(side.total_us)} · {_calls(side.calls)} · no rate: it came out above the GPU's peak, "
                     "so the recorded shape is not what the kernels did (see Warnings)")
            continue
        t.append(f"{fmt_us(side.total_us)} · {_calls(side.calls)} · {fmt.rate(side.tflops)} TFLOP/s")
        if side.pct_peak is not None:
            t.append(f" = {fmt.percent(side.pct_peak)} of {fmt.rate(side.peak_tflops)}")
        if side.bound == "memory":
            t.append(f" · memory-bound: {fmt.rate(side.tbps)} TB/s, {fmt.percent(side.pct_roofline)} of its roof")
        elif side.bound:
            t.append(f" · {side.bound}-bound")
    return t


def _calls(n: int) -> str:
    return f"{n:,} call" if n == 1 else f"{n:,} calls"
