"""Flat tables (header + rows of plain values) of a Comparison: the one export schema of the CLI's
`--table` (CSV and JSON) and the explorer's `e`/`E` export, written down in docs/EXPORT_SCHEMA.md.

Stable keys: a side's figure is `a_<field>` / `b_<field>` (A the first trace), never a file or GPU
name, so that two exports of different pairs have the same columns. Full names; durations in µs
rounded to 0.1 ns (4 decimals); a missing value is an empty cell (null in JSON: `json_records`): a
side that runs none of a row's kernels has count 0 and no other figure. Indices (a pair's fusion
group, its finding) count from 0, as the JSON document's `group` does. The layers table ends with the
`outside` row (the kernels outside every layer), as the explorer shows it.
"""

from __future__ import annotations

from typing import Any

from kerneldiff.core.compare.result import Comparison
from kerneldiff.core.numbers import finite
from kerneldiff.core.report.table_names import TABLES, WORK_TABLES
from kerneldiff.core.report.work_tables import work_table

# the timeline table's columns after side, scope, pass, name, phase and layer (one row per window)
TIMELINE_FIGURES = ("span_us", "busy_us", "idle_us", "launch_bound_us", "sync_us", "other_us", "overlap_us",
                    "kernel_us", "kernels", "gaps")
TIMELINE_LAUNCH = ("launches", "api_p50_us", "api_p95_us", "delay_p50_us", "delay_p95_us", "kernels_launched",
                   "kernels_shorter_than_launch")


def _r(x: float | None) -> float | str:
    # missing and non-finite alike: an empty cell (null in a JSON table), never "inf" or "nan"
    x = None if x is None else finite(float(x))
    return "" if x is None else round(x, 4)


def sides(*fields: str) -> list[str]:
    """`a_<field>`, `b_<field>` for each field: the stable column keys of the two sides."""
    return [f"{s}_{f}" for f in fields for s in ("a", "b")]


OUTSIDE = "outside"   # the layer key of the kernels outside every layer


def json_records(head: list[str], rows: list[list[Any]]) -> list[dict[str, Any]]:
    """A table's rows as JSON objects: an empty cell (a missing value) is null, as every JSON export
    writes it (the CLI's `--table`, the explorer's `E`)."""
    return [{h: (None if v == "" or v is None else v) for h, v in zip(head, r)} for r in rows]


def _ran(stats, x: float | None) -> float | str:
    """A side's figure of a row, or empty where the side runs none of its kernels (a mean of nothing
    is no figure, not 0)."""
    return _r(x) if stats.count else ""


def _ledger(c: Comparison) -> tuple[list[str], list[tuple[Any, list[Any]]]]:
    head = ["cause", "kind", "a_us", "b_us", "gap_us_a_minus_b", "count_gap_us", "speed_gap_us",
            "a_launches", "b_launches", "detail"]
    return head, [(e, [e.cause, e.kind, _r(e.a_us), _r(e.b_us), _r(e.gap_us), _r(e.count_gap_us),
                       _r(e.speed_gap_us), _r(e.a_launches), _r(e.b_launches), e.detail]) for e in c.ledger]

def table(c: Comparison, name: str) -> tuple[list[str], list[list[Any]]]:
    """One table: its column keys and rows."""
    head, records = table_records(c, name)
    return head, [row for _obj, row in records]


def table_records(c: Comparison, name: str) -> tuple[list[str], list[tuple[Any, list[Any]]]]:
    """One table with, beside each row, the result object it was made from (an OperationRow, a
    LayerRow, a KernelPair, a pass of a timeline…), so that a view can export the rows it shows,
    in its order, in this schema."""
    if name == "ledger":
        return _ledger(c)
    if name == "operations":
        head = ["category", "phase", *sides("count", "total_us", "mean_us", "median_us", "share"),
                "ratio_a_over_b", "gap_us_a_minus_b", "only_in", *sides("top_cpu_ops"), *sides("examples")]
        return head, [(o, [o.category, o.phase, o.a.count, o.b.count, _ran(o.a, o.a.total_us), _ran(o.b, o.b.total_us),
                           _ran(o.a, o.a.mean_us), _ran(o.b, o.b.mean_us), _ran(o.a, o.a.median_us),
                           _ran(o.b, o.b.median_us), _ran(o.a, o.a.share),
                           _ran(o.b, o.b.share), _r(o.ratio), _r(o.gap_us), o.only_in or "",
                           " | ".join(o.top_cpu_ops.get("a", [])), " | ".join(o.top_cpu_ops.get("b", [])),
                           " | ".join(o.examples.get("a", [])), " | ".join(o.examples.get("b", []))])
                      for o in c.operations]
    if name == "layers":
        head = ["rank", "layer", "stack", "stack_layer", *sides("total_us", "kernels", "passes", "median_us", "p90_us", "idle_us"),
                "ratio_a_over_b", "gap_us_a_minus_b", "gap_spread_us", "noise", "gap_per_pass_us", "se_us", "t",
                "departure_t", "departs", "span_gap_us", "slower_by"]
        layers = [*c.layers, *([c.outside_layers] if c.outside_layers is not None else [])]
        def fig(side, x):     # a side without the layer's kernels has no figures
            return _r(x) if side.kernels else ""

        def idle(l, side):    # `outside` is no one span: no idle is measured (the screen shows —)
            return fig(side, side.idle_us) if l.layer >= 0 else ""

        return head, [(l, [l.rank if l.layer >= 0 else "", l.layer if l.layer >= 0 else OUTSIDE,
                           getattr(l, "stack", ""), l.stack_layer if getattr(l, "stack", "") else "",
                           fig(l.a, l.a.total_us), fig(l.b, l.b.total_us), l.a.kernels, l.b.kernels, l.a.passes,
                           l.b.passes, fig(l.a, l.a.median_us), fig(l.b, l.b.median_us), fig(l.a, l.a.p90_us),
                           fig(l.b, l.b.p90_us), idle(l, l.a), idle(l, l.b),
                           _r(l.ratio), _r(l.gap_us), _r(l.spread_us), l.noise, _r(l.gap_per_pass_us), _r(l.se_us),
                           _r(l.t), _r(l.departure_t), "" if l.departs is None else l.departs, _r(l.span_gap_us),
                           l.slower_by]) for l in layers]
    if name == "pairs":
        head = ["layer", "position", *sides("kernel", "category", "count", "mean_us", "median_us"),
                "ratio_a_over_b", "gap_us_a_minus_b", "same_kernel", "fusion_note", "fusion_group",
                "fusion_group_finding"]
        return head, [(p, [al.layer, p.position, p.a_name or "", p.b_name or "", p.a_category or "",
                           p.b_category or "", p.a.count, p.b.count, _ran(p.a, p.a.mean_us), _ran(p.b, p.b.mean_us),
                           _ran(p.a, p.a.median_us), _ran(p.b, p.b.median_us), _r(p.ratio), _r(p.gap_us),
                           p.same_kernel, p.fusion_note, p.group if p.group >= 0 else "",
                           al.groups[p.group].finding
                           if 0 <= p.group < len(al.groups) and al.groups[p.group].finding >= 0 else ""])
                      for al in c.alignments for p in al.pairs]
    head, rows = _flat(c, name)
    return head, [(obj, row) for obj, row in zip(_objects(c, name), rows)]


def _objects(c: Comparison, name: str) -> list[Any]:
    """The result objects behind the rows of the tables `_flat` fills, in their order."""
    if name == "fusions":
        return list(c.fusions)
    if name == "same-kernels":
        return list(c.same_kernels)
    if name == "timeline":
        out: list[Any] = []
        for side in (c.a, c.b):
            t = side.timeline
            if t:
                out += [t, *t.phases, *t.passes, *t.layers]
        return out
    if name == "gemm-shapes":
        return list(c.gemm_shapes)
    if name == "attention-shapes":
        return list(c.attention_shapes)
    if name == "throughput":
        return list(c.throughput)
    if name == "peaks":
        return ["a", "b"]
    if name == "warnings":
        return list(c.warnings)
    return []


def _flat(c: Comparison, name: str) -> tuple[list[str], list[list[Any]]]:
    if name == "fusions":
        head = ["kind", "fused_side", "fused_category", "fused_kernels", "component_side",
                "component_categories", "component_kernels", "occurrences", "confidence",
                "component_cost_us", "fused_cost_us", "estimated_saving_us_each", "estimated_saving_us_total",
                "passes_gate", "module", "fused_ops", "component_ops", "measured_saving_us", "passes",
                "occurrences_per_pass", "estimate_capped", "phase", "evidence"]
        rows = [[f.kind, f.fused_side, f.fused_category, " | ".join(f.fused_kernels), f.component_side,
                 " | ".join(f.component_categories), " | ".join(f.component_kernels), f.occurrences, _r(f.confidence),
                 _r(f.component_cost_us), _r(f.fused_cost_us),
                 _r(f.estimated_saving.total_us if f.estimated_saving else None),
                 _r(f.estimated_saving.total_all_us if f.estimated_saving else None),
                 f.estimated_saving.passes_gate if f.estimated_saving else "", f.module, " | ".join(f.fused_ops),
                 " | ".join(f.component_ops), _r(f.measured_saving_us), f.passes or "", f.occurrences_per_pass or "",
                 f.estimated_saving.capped if f.estimated_saving else "", f.phase, f.evidence] for f in c.fusions]
        return head, rows
    if name == "same-kernels":
        head = ["kernel", "category", *sides("count", "mean_us", "total_us"), "ratio_a_over_b_mean",
                "gap_us_a_minus_b_total", "shapes_differ"]
        rows = [[s.name, s.category, s.a.count, s.b.count, _r(s.a.mean_us), _r(s.b.mean_us), _r(s.a.total_us),
                 _r(s.b.total_us), _r(s.ratio), _r(s.gap_us), s.shapes_differ] for s in c.same_kernels]
        return head, rows
    if name == "timeline":
        return _timeline(c)
    if name in WORK_TABLES:
        return work_table(c, name)
    if name == "warnings":
        return ["warning"], [[w] for w in c.warnings]
    raise ValueError(f"unknown table {name!r}; choose from {', '.join(TABLES)}")


def _timeline(c: Comparison) -> tuple[list[str], list[list[Any]]]:
    """Both sides' timelines, one row per window: the comparison's phase ("window", with the launch
    statistics), every phase, every pass, every layer (summed over its passes)."""
    head = ["side", "scope", "pass", "name", "phase", "layer", *TIMELINE_FIGURES, *TIMELINE_LAUNCH]
    rows: list[list[Any]] = []
    for side in (c.a, c.b):
        t = side.timeline
        if not t:
            continue
        label, blank = side.key, [""] * len(TIMELINE_LAUNCH)

        def fig(d) -> list[Any]:   # a window, pass or layer: the figures it has, "" for the others
            return [getattr(d, f, "") if f in ("kernels", "gaps") else _r(getattr(d, f, None)) for f in TIMELINE_FIGURES]

        launch = t.launch
        rows.append([label, "window", "", "", t.phase, "", *fig(t),
                     *[_r(getattr(launch, f, None)) if f.endswith("_us") else getattr(launch, f, "") for f in TIMELINE_LAUNCH]])
        rows += [[label, "phase", "", "", p.phase, "", *fig(p), *blank] for p in t.phases]
        rows += [[label, "pass", p.pass_, p.name, p.phase, "", *fig(p), *blank] for p in t.passes]
        rows += [[label, "layer", "", "", t.phase, l.layer, *fig(l), *blank] for l in t.layers]
    return head, rows
