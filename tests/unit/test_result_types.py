"""The result types: one Stats for every reading of durations, whichever package computes it."""

from dataclasses import fields

from kerneldiff.core.analysis import pass_lanes, trace_totals
from kerneldiff.core.analysis.stats import Stats
from kerneldiff.core.compare import result
from kerneldiff.core.compare.work_result import KernelShare


def test_the_comparison_and_one_trace_read_durations_as_the_same_type():
    assert result.Stats is Stats
    assert {f.type for f in fields(trace_totals.OperationTotal) if f.name == "stats"} == {"Stats"}
    assert pass_lanes.name_durations.__annotations__["return"] == "Stats"


def test_a_kernel_share_carries_the_stats_figures_in_their_order():
    """KernelShare keeps its figures flat (its JSON object), but they are Stats's, named and ordered
    alike, so a detail view reads either."""
    share = [f.name for f in fields(KernelShare)]
    stats = [f.name for f in fields(Stats)]
    assert [n for n in share if n in stats] == stats
