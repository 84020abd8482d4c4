"""The Comparison: a plain, JSON-serialisable result that the explorer and every report render.

Conventions (everywhere): side "a" is the first trace, "b" the second. `ratio = a / b` (> 1: A is
slower) and `gap_us = a − b` (> 0: A loses that much time). Swapping the arguments swaps the
sides and nothing else. Durations are microseconds.
"""

from __future__ import annotations

from dataclasses import asdict, field
from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use (lazy_dataclass.py)
from typing import Any

from kerneldiff.core.msgspec_import import msgspec

from kerneldiff.core.analysis.peaks import Peaks
from kerneldiff.core.analysis.stats import Stats  # noqa: F401 - the rows' durations, re-exported
from kerneldiff.core.compare.fusion_params import FusionParams
from kerneldiff.core.compare.host_result import HostTimes
from kerneldiff.core.compare.side_timeline import SideTimeline
from kerneldiff.core.compare.work_result import AttentionShape, GemmShape, ThroughputRow


@dataclass
class Side:
    """Who one side is."""

    key: str                 # "a" | "b"
    label: str               # GPU name, or file name when both GPUs are the same
    path: str
    gpu: str
    vendor: str
    gpu_time_us: float       # kernel time in the selected phase
    kernels: int
    steps: int
    layers_per_step: int
    architecture: str
    phases: list[str]
    passes: int = 0          # forward passes with kernels in the selected phase
    per_pass_us: float = 0.0  # gpu_time_us / passes
    pass_source: str = ""    # what the passes, phases and layers were read from (evidence first,
    phase_source: str = ""   # inference said as such)
    layer_source: str = ""
    # wall clock, GPU idle and launch overhead in the phase, with its phases, passes and layers
    # (kerneldiff.core.compare.side_timeline)
    timeline: SideTimeline | None = None
    # whether its operators carry input shapes (record_shapes=True): without them no FLOPs, bytes or
    # GEMM and attention shapes (None: not looked at)
    shapes_recorded: bool | None = None
    # work left out of the comparison (kerneldiff.core.analysis.cut_work): None when nothing was
    excluded: Excluded | None = None
    # passes left out for their kind (warm-up, capture, compile; kerneldiff.core.analysis.pass_kinds);
    # None when every pass is compared
    passes_left_out: LeftOutPasses | None = None


@dataclass(frozen=True)
class LeftOutPasses:
    """The passes of one side left out for their kind (`kerneldiff.core.analysis.cut_work`)."""

    passes: int
    kinds: dict[str, int]    # kind -> passes, in the order first met
    kernels: int
    time_us: float
    line: str                # "2 passes left out: capture, compile (…)", for reports


@dataclass
class Excluded:
    """GPU work of one side that the comparison does not count, and why."""

    kernels: int
    time_us: float
    why: str
    passes: int = 0          # forward passes left out whole (their start was cut)


@dataclass
class Comparability:
    """Whether the two traces ran the same work: `comparable`, `partly` (the figures hold, with the
    reasons' caveats) or `not comparable` (a different model or workload: gaps rank nothing)."""

    verdict: str
    reasons: list[str] = field(default_factory=list)   # what lowers the verdict, the gravest first
    notes: list[str] = field(default_factory=list)     # what was done to keep it like with like
    codes: list[str] = field(default_factory=list)     # one per reason (kerneldiff.core.compare.comparability)


@dataclass
class SplitPart:
    """One matched group of a ledger row's split (`core.compare.split`), on the comparison's basis
    (per pass when per-pass)."""

    level: str            # kernel | operator | category | one side
    key: str              # the kernel name (kernel, one side), the operator, or "" (category)
    op: str               # the launching operator ("" when none)
    a_launches: float
    b_launches: float
    a_us: float
    b_us: float
    count_gap_us: float
    speed_gap_us: float


class FromRows(msgspec.Struct, frozen=True):
    """The rows a fused operation's row took each side's kernels from, {row: µs} per side (on the
    comparison's basis). Any other row took none: `FromRows()`, written `{}` as it always was."""

    a: dict[str, float] | None = None
    b: dict[str, float] | None = None

    def __bool__(self) -> bool:
        return self.a is not None

    def side(self, key: str) -> dict[str, float]:
        return (self.a if key == "a" else self.b) or {}

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b} if self else {}


@dataclass
class LedgerEntry:
    """One cause of the wall-clock gap. `a_us` and `b_us` are what the cause costs each side, on the
    comparison's basis; the entries' `gap_us` sum to `WallClock.wall_gap_us` exactly. Every entry
    adds its time to the wall clock (gap = a − b) except stream overlap, which the wall clock does
    not pay: its a_us and b_us are the overlap and its gap is −(a − b)."""

    cause: str
    a_us: float
    b_us: float
    gap_us: float
    kind: str = ""           # "kernels" | "overlap" | "idle"
    detail: str = ""
    # kernels entries: the gap split into more launches and slower kernels (they sum to gap_us), and
    # each side's launches (on the basis: per pass when per_pass)
    count_gap_us: float | None = None
    speed_gap_us: float | None = None
    a_launches: float | None = None
    b_launches: float | None = None
    # kernels entries: how the split was made (`core.compare.split.PRICING`) and its largest matched
    # groups (`split.Part`, largest |gap| first; the full list sums to the two parts)
    split_basis: str = ""
    split_parts: list[SplitPart] = field(default_factory=list)
    # the op-level fusions this row holds part of (`core.compare.ledger_fusions`): one operation that
    # the two sides book under different rows, how each side runs it, and the finding
    fusions: list[str] = field(default_factory=list)
    # a fused operation's row (`core.compare.ledger_fusions.regroup`): the finding (index into
    # Comparison.fusions) and the rows each side's kernels of it came from
    finding: int = -1
    from_rows: FromRows = field(default_factory=FromRows)


@dataclass
class OperationRow:
    category: str
    phase: str                                   # "all" unless split by phase
    a: Stats
    b: Stats
    ratio: float | None                          # a / b total; None when one side has none
    gap_us: float                                # a − b total
    only_in: str | None = None                   # "a" | "b" when the other side runs none
    top_cpu_ops: dict[str, list[str]] = field(default_factory=dict)   # side -> cpu op names
    examples: dict[str, list[str]] = field(default_factory=dict)      # side -> kernel names


@dataclass
class LayerSide:
    total_us: float = 0.0        # over all forward passes in the phase
    kernels: int = 0
    passes: int = 0              # forward passes that contain this layer
    median_us: float = 0.0       # per pass
    p90_us: float = 0.0          # per pass
    idle_us: float = 0.0         # GPU idle inside the layer (its first to last kernel), all passes
    wall_us: float = 0.0         # first to last kernel of the layer, summed over its passes
    spread_us: float | None = None   # how much its time varies from pass to pass (robust σ: 1.4826 × MAD); None: < 3 passes
    # its steady passes: those within 5 robust σ of the median (the one prefill pass among decode
    # passes is another workload); None: < 3 passes
    steady: SteadyPasses | None = None


@dataclass(frozen=True)
class SteadyPasses:
    """A layer's time over one side's steady passes (`kerneldiff.core.compare.layer_significance`)."""

    passes: int
    mean_us: float               # per pass
    sigma_us: float              # standard deviation per pass


@dataclass
class LayerRow:
    layer: int
    a: LayerSide
    b: LayerSide
    ratio: float | None
    gap_us: float
    rank: int = 0                # 1 = largest gap (A slowest relative to B)
    # the spread of the gap over the passes: the per-pass gap's standard error × passes (it grows
    # with √passes); None: too few passes (`core.compare.layer_significance`)
    spread_us: float | None = None
    noise: bool = False          # it does not depart from the typical layer: its rank says nothing
    gap_per_pass_us: float | None = None   # mean per pass A − mean per pass B
    se_us: float | None = None             # standard error of that: √(σa²/na + σb²/nb)
    t: float | None = None                 # gap_per_pass_us / se_us: is the difference real at all
    departure_t: float | None = None       # (gap per pass − the median layer's) / se_us
    departs: bool | None = None            # |departure_t| above the 5 % two-sided quantile, Bonferroni over the layers
    span_gap_us: float | None = None       # a.wall_us − b.wall_us: the layer's span (first to last kernel) gap
    slower_by: str = ""                    # "A" / "B" / "=" when kernel time and span agree, else "A kernels, B span"…
    # a model of several stacks (vision and text towers): the layer's stack and index within it
    stack: str = ""
    stack_layer: int = -1


# what an aligned position says about fusion; detectors read this, never the display note
FUSION_KINDS = ("fused_category", "fused_into", "only_on")


@dataclass
class KernelPair:
    """One aligned position inside a layer. A side that runs nothing here has name None (a gap)."""

    position: int
    a_name: str | None
    b_name: str | None
    a_category: str | None
    b_category: str | None
    a: Stats
    b: Stats
    ratio: float | None
    gap_us: float
    same_kernel: bool
    fusion_note: str = ""        # for people: what this position says about fusion
    fusion_kind: str = ""        # for code: "" | "fused_category" | "fused_into" | "only_on" (see FUSION_KINDS)
    a_row: int = -1              # a representative kernel row in side A's model (for detail views)
    b_row: int = -1
    a_rule: str = ""
    b_rule: str = ""
    group: int = -1              # index into the layer's `groups` when the pair belongs to an op-level fusion group


@dataclass
class LayerAlignment:
    layer: int
    pairs: list[KernelPair]
    a_kernels_per_pass: int
    b_kernels_per_pass: int
    # the passes the pairs' statistics come from: those running the layer's most common kernel
    # sequence (a prefill pass among decode passes usually runs another one)
    a_passes: int = 0
    b_passes: int = 0
    # op-level fusion groups found in this layer (N kernels on one side against M < N on the other)
    groups: list[PairGroup] = field(default_factory=list)


@dataclass
class SavingEstimate:
    """Fusion-benefit model: what fusing the component kernels would save per occurrence."""

    launches_saved: int
    sync_points_saved: int
    device_bytes_saved: float | None     # None: the shapes do not give it (see device_bytes_basis)
    readback_bytes_saved: float
    launch_ns: float
    sync_ns: float
    traffic_ns: float
    readback_ns: float
    total_us: float              # per occurrence
    total_all_us: float          # times occurrences
    passes_gate: bool            # above the minimum-gain threshold
    params: FusionParams | None = None   # what it was priced with (None: built by hand)
    capped: bool = False         # the model said more; capped at the measured component time
    # "shapes" (component bytes − fused bytes from the recorded shapes) or an upper bound from time
    device_bytes_basis: str = ""
    model_all_us: float | None = None   # what the model said in all, before any cap (capped: more than shown)


@dataclass
class GroupKernel:
    """One kernel of an op-level fusion group, with the operations behind it."""

    name: str
    ops: list[str]               # launching operator (aten::pow, _C::silu_and_mul) or the ops an Inductor name lists
    category: str
    mean_us: float               # per occurrence of the group
    row: int = -1                # a representative kernel row in its side's model


@dataclass
class PairGroup:
    """An op-level fusion group inside one aligned layer: the pairs at `positions` are one group."""

    id: int
    fused_side: str
    positions: list[int]         # aligned positions the group spans (its pairs carry `group` = id)
    fused_positions: list[int]
    component_positions: list[int]
    finding: int = -1            # index into Comparison.fusions
    note: str = ""
    a_indices: list[int] = field(default_factory=list)   # indices into the side's kernel sequence of the layer
    b_indices: list[int] = field(default_factory=list)


@dataclass
class FusionFinding:
    kind: str                    # "op_fusion" | "fused_category" | "sequence" | "count_imbalance" | "missing_kernel"
    #                              | "launch_count" (extra memsets: not a fusion; fused_side makes fewer launches)
    fused_side: str              # side that runs fewer kernels ("a" | "b")
    fused_kernels: list[str]     # the fused kernel name(s) on fused_side (may be empty for imbalance)
    fused_category: str
    component_side: str
    component_kernels: list[str] # what the other side runs instead
    component_categories: list[str]
    occurrences: int
    evidence: str
    confidence: float            # 0..1
    component_cost_us: float     # measured time of the component kernels (component_side)
    fused_cost_us: float         # measured time of the fused kernels (fused_side)
    estimated_saving: SavingEstimate | None = None   # the benefit model, capped at component_cost_us
    fused_ops: list[str] = field(default_factory=list)       # the operations the fused kernels do
    component_ops: list[str] = field(default_factory=list)   # the operation behind each component kernel
    module: str = ""             # the module the component kernels run in (class name), "" unknown
    measured_saving_us: float = 0.0   # component time − fused time, per pass × passes (< 0: fused is slower)
    passes: int = 0              # op-level: forward passes measured (each layer's most common sequence)
    occurrences_per_pass: int = 0
    layers: list[int] = field(default_factory=list)
    fused_group: list[GroupKernel] = field(default_factory=list)      # op-level: both sides' kernels, in
    component_group: list[GroupKernel] = field(default_factory=list)  # order, with their operations
    phase: str = ""              # the phase it was found in, where phase `all` spans several ("" otherwise)


@dataclass
class SameKernel:
    name: str
    category: str
    a: Stats
    b: Stats
    ratio: float | None
    gap_us: float
    # "" or, where both sides recorded input shapes for its launches and none is common to the
    # two, what each ran it on (`core.compare.same_work`): the means then compare different work
    shapes_differ: str = ""


@dataclass
class WallClock:
    """Kernel time against wall time, side by side: what the GPU computed and what the user waited.

    Same basis as the comparison (per pass when the pass counts differ). Wall time is the span from
    the first to the last GPU activity; idle the part of it no stream ran anything. The shares say
    how much of the wall-clock gap (A − B) the idle gap explains, and how much of that the
    launch-bound idle does; None when the gap they divide is 0."""

    basis: str
    kernel_ratio: float | None     # summed kernel time a / b (the comparison's ratio)
    wall_ratio: float | None       # wall time a / b
    a_wall_us: float
    b_wall_us: float
    wall_gap_us: float             # a − b
    a_busy_us: float
    b_busy_us: float
    a_idle_us: float
    b_idle_us: float
    idle_gap_us: float             # a − b
    launch_bound_gap_us: float
    sync_gap_us: float
    idle_share: float | None       # idle_gap / wall_gap
    launch_bound_share: float | None   # launch_bound_gap / idle_gap
    # what the wall figures measure (kerneldiff.core.compare.pass_basis): "passes" (the compared passes'
    # spans summed) or "whole" (first to last activity: --all-passes, or no passes)
    window: str = "whole"
    window_note: str = ""          # why the whole window although both sides have passes (they overlap)
    a_outside_us: float = 0.0      # the whole window's wall time outside the measured passes
    b_outside_us: float = 0.0
    a_pass_median_us: float | None = None   # the passes' median span and its robust σ
    b_pass_median_us: float | None = None
    a_pass_spread_us: float | None = None
    b_pass_spread_us: float | None = None


@dataclass
class Comparison:
    a: Side
    b: Side
    phase: str
    ratio: float | None                    # GPU time a / b (per pass when basis == "per_pass")
    gap_us: float                          # a - b, on the same basis
    operations: list[OperationRow]
    layers: list[LayerRow]                 # slowest (largest gap) first
    alignments: list[LayerAlignment]       # per layer index, ascending
    fusions: list[FusionFinding]
    same_kernels: list[SameKernel]
    warnings: list[str]                    # prefixed with the side label they come from
    # "total" when both sides hold the same number of passes in the phase; "per_pass" when they
    # differ: then ratio, gap and each operation's ratio and gap compare one average pass
    basis: str = "total"
    # kernels outside every layer (embedding, lm_head, sampling, kernels between passes): layer -1
    outside_layers: LayerRow | None = None
    # which sides have layers: "both", "a" or "b" (then the layer rows hold that side alone and
    # their ratio is None: nothing to compare), "" when neither has
    layers_from: str = "both"
    # what the kernels achieve (kerneldiff.core.compare.throughput; fields in work_result): the peaks
    # each side is measured against (None: the GPU is not in the table), TFLOP/s, TB/s, % of peak and
    # roofline bound per operation, and the GEMM and attention shapes side by side (largest |gap| first)
    peaks: dict[str, Peaks | None] = field(default_factory=dict)
    throughput: list[ThroughputRow] = field(default_factory=list)
    gemm_shapes: list[GemmShape] = field(default_factory=list)
    attention_shapes: list[AttentionShape] = field(default_factory=list)
    schema: int = 1
    wall: WallClock | None = None          # kernel time against wall time (both sides' timelines)
    # the wall-clock gap accounted for, cause by cause (kerneldiff.core.compare.ledger), largest first
    ledger: list[LedgerEntry] = field(default_factory=list)
    comparability: Comparability | None = None
    # host time behind the launch-bound idle, per side (kerneldiff.core.compare.ledger.host_time);
    # HostTimes() when not read (written {})
    host: HostTimes = field(default_factory=HostTimes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for side in ("a", "b"):   # a pass is no dataclass (its "pass" key is a keyword): spelt out here
            t = d[side]["timeline"]
            if t is not None:
                t["passes"] = [p.to_json() for p in t["passes"]]
        # host time likewise (a side without passes is {}), and {} when not read, as it always was
        d["host"] = self.host.to_json()
        for e in d["ledger"]:      # and a ledger row's rows taken from ({} for most rows)
            e["from_rows"] = e["from_rows"].to_json()
        return d

    def on_basis(self, side: str, total_us: float) -> float:
        """Side `side`'s ("a" or "b") time `total_us` on the comparison's basis: per pass (over that
        side's passes) when basis == "per_pass", as it is otherwise."""
        passes = max(getattr(self, side).passes, 1) if self.basis == "per_pass" else 1
        return total_us / passes

    def gap_pass(self) -> int | None:
        """The pass (number) with the largest wall-clock gap among those both sides hold: the one
        worth drawing. None when a side has no passes."""
        pa = self.a.timeline.passes if self.a.timeline else ()
        pb = self.b.timeline.passes if self.b.timeline else ()
        n = min(len(pa), len(pb))
        if n == 0:
            return None
        return int(pa[max(range(n), key=lambda i: (abs(pa[i].span_us - pb[i].span_us), -i))].pass_)

    def alignment(self, layer: int) -> LayerAlignment | None:
        for al in self.alignments:
            if al.layer == layer:
                return al
        return None
