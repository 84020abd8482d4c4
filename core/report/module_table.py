"""The module tree as a flat table (`compare --table modules`, the explorer's export of its Modules
tab): one row per node, in the tree's order (a node, then its children by largest |gap|), in the
export schema of docs/EXPORT_SCHEMA.md. A table of the loaded models, not of the comparison alone,
so it is built only when asked for (`Session.modules`)."""

from __future__ import annotations

from typing import Any

from kerneldiff.core.report.tables import _r

MODULE_COLUMNS = ["path", "name", "match", "a_time_us", "b_time_us", "a_span_us", "b_span_us", "a_kernels",
                  "b_kernels", "a_launches", "b_launches", "ratio_a_over_b", "gap_us_a_minus_b", "share_of_wall_gap"]


def module_row(node) -> list[Any]:
    """One node's row (a side without the node: its figures empty)."""
    def fig(side, name):
        return _r(getattr(side, name)) if side is not None else ""

    return [node.path, node.name, node.match, fig(node.a, "time_us"), fig(node.b, "time_us"),
            fig(node.a, "span_us"), fig(node.b, "span_us"), fig(node.a, "kernels"), fig(node.b, "kernels"),
            fig(node.a, "launches"), fig(node.b, "launches"), _r(node.ratio), _r(node.gap_us),
            _r(node.share_of_wall_gap)]


def module_table(mc) -> tuple[list[str], list[list[Any]]]:
    """Every node of a `module_compare.ModuleComparison`, the root (path "") first."""
    from kerneldiff.core.compare.module_compare import walk

    return list(MODULE_COLUMNS), [module_row(n) for _d, n in walk(mc.root)]
