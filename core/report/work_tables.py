"""Flat tables of what the kernels achieve (a Comparison's `gemm_shapes`, `attention_shapes`,
`throughput` and `peaks`), in the export schema of core/report/tables.py: full names, figures
rounded to 4 decimals, `a_<field>` and `b_<field>` per side.
Percentages are in percent (0–100), as in the Comparison."""

from __future__ import annotations

from typing import Any

from kerneldiff.core.analysis.peaks import FIGURES
from kerneldiff.core.numbers import finite
from kerneldiff.core.report.table_names import WORK_TABLES  # noqa: F401 - re-exported

_SHAPE_SIDE = ("calls", "total_us", "mean_us", "tflops", "tbps", "pct_peak", "pct_peak_bw", "bound", "pct_roofline",
               "peak_tflops")
_THROUGHPUT_SIDE = ("time_us", "covered_us", "kernels", "covered_kernels", "flops", "bytes", "tflops", "tbps",
                    "pct_peak", "pct_peak_bw", "bound", "pct_roofline")


def _v(x: Any) -> Any:
    if x is None:
        return ""
    if isinstance(x, float):
        return "" if finite(x) is None else round(x, 4)
    return x


def _side_cols(fields: tuple[str, ...]) -> list[str]:
    # stable keys (a_tflops, b_tflops): no file or GPU name in a column (core/report/tables.py)
    return [f"{s}_{f}" for f in fields for s in ("a", "b")]


_COUNTS = ("calls", "kernels", "covered_kernels")


def _side_vals(fields: tuple[str, ...], a: Any, b: Any) -> list[Any]:
    # a side that runs none of the row's kernels: its counts are 0 and it has no other figure
    def ran(x: Any) -> bool:
        return bool(getattr(x, "calls", None) or getattr(x, "kernels", None))

    return [_v(getattr(x, f)) if f in _COUNTS or ran(x) else "" for f in fields for x in (a, b)]


def _names(side: Any) -> str:
    return " | ".join(k.name for k in side.kernels)


def work_table(c: Any, name: str) -> tuple[list[str], list[list[Any]]]:
    if name == "gemm-shapes":
        head = ["op", "m", "n", "k", "batch", "dtype", "flops_per_call", "bytes_per_call",
                *_side_cols(_SHAPE_SIDE), "ratio_a_over_b", "gap_us_a_minus_b", "a_kernels",
                "b_kernels"]
        rows = [[g.op, g.m, g.n, g.k, g.batch, g.dtype, _v(g.flops), _v(g.bytes), *_side_vals(_SHAPE_SIDE, g.a, g.b),
                 _v(g.ratio), _v(g.gap_us), _names(g.a), _names(g.b)] for g in c.gemm_shapes]
        return head, rows
    if name == "attention-shapes":
        head = ["op", "batch", "heads", "kv_heads", "seq_q", "seq_k", "head_dim", "head_dim_v", "causal_assumed",
                "dtype", "flops_per_call", "bytes_per_call", *_side_cols(_SHAPE_SIDE), "ratio_a_over_b",
                "gap_us_a_minus_b", "a_ops", "b_ops", "a_kernels", "b_kernels", "batch_heads", "causal", "dropout",
                "scale"]
        rows = [[s.op, s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_k, s.head_dim, s.head_dim_v,
                 s.causal and not s.causal_read, s.dtype,
                 _v(s.flops), _v(s.bytes), *_side_vals(_SHAPE_SIDE, s.a, s.b), _v(s.ratio), _v(s.gap_us),
                 " | ".join(s.a.ops), " | ".join(s.b.ops), _names(s.a), _names(s.b), s.batch_heads, s.causal,
                 _v(s.dropout), _v(s.scale)]
                for s in c.attention_shapes]
        return head, rows
    if name == "throughput":
        head = ["operation", *_side_cols(_THROUGHPUT_SIDE)]
        rows = [[t.category, *_side_vals(_THROUGHPUT_SIDE, t.a, t.b)] for t in c.throughput]
        return head, rows
    if name == "peaks":
        head = ["side", "label", "key", "name", "matched", *[f"{f}_tflops" if f != "hbm" else "hbm_tbps" for f in FIGURES],
                "overridden", "source"]
        rows = []
        for key, side in (("a", c.a), ("b", c.b)):
            p = (c.peaks or {}).get(key)
            if p is None:
                rows.append([key, side.label, "", "", "no match", *[""] * len(FIGURES), "", ""])
                continue
            figs = [_v(p.hbm_tbps) if f == "hbm" else _v(p.tflops.get(f)) for f in FIGURES]
            rows.append([key, side.label, p.key, p.name, p.matched, *figs, " ".join(p.overridden), p.source])
        return head, rows
    raise ValueError(f"unknown table {name!r}; choose from {', '.join(WORK_TABLES)}")
