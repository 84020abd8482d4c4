"""What each side's kernels achieve, in the Comparison: GEMM and attention shapes side by side, and
the throughput of every operation (`kerneldiff.core.compare.throughput` fills these in).

Conventions: FLOPs and bytes come from the launching operators' recorded shapes
(`kerneldiff.core.analysis.flops`); TFLOP/s = 10^12 FLOP/s, TB/s = 10^12 bytes/s; every `pct_*` is
a percentage (0–100) of the side's peak (`kerneldiff.core.analysis.peaks`), None when the GPU or
the dtype has no peak in the table. `bound` is the roof a shape sits under on that GPU: "compute"
when its arithmetic intensity (FLOPs per byte) is above the GPU's ridge point (peak FLOP/s ÷ peak
bytes/s), "memory" below; `pct_roofline` is the achieved FLOP/s against what the roofline allows
at that intensity. Gaps and ratios follow the comparison's basis (per pass when the pass counts
differ).
"""

from __future__ import annotations

from dataclasses import field
from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use (lazy_dataclass.py)


@dataclass
class KernelShare:
    """A kernel that ran a shape: how often, for how long, and how fast. Its duration fields are those
    of the comparison's `Stats`, over this kernel's launches for the shape, so detail views read either."""

    name: str
    count: int                       # launches for the shape
    total_us: float
    mean_us: float = 0.0
    median_us: float = 0.0
    min_us: float = 0.0
    p90_us: float = 0.0
    p95_us: float = 0.0
    max_us: float = 0.0
    share: float = 0.0               # of the side's GPU time in the phase
    tflops: float | None = None      # its share of the shape's FLOPs over its own time; None when it does
    #                                  none of the math (the cuBLAS workspace memset beside a GEMM)
    row: int = -1                    # one of these launches: a kernel row of the side's model (detail views)


@dataclass
class ShapeSide:
    """One shape on one side."""

    calls: int = 0                   # operator calls with this shape
    total_us: float = 0.0            # GPU time of every kernel those calls launched (memsets included)
    mean_us: float = 0.0             # per call
    tflops: float | None = None      # achieved: calls · flops / total time
    tbps: float | None = None        # achieved: calls · bytes / total time
    pct_peak: float | None = None    # tflops against the peak of the shape's dtype, %
    pct_peak_bw: float | None = None  # tbps against the memory bandwidth, %
    bound: str | None = None         # "compute" | "memory" on this GPU
    pct_roofline: float | None = None  # achieved against the roofline at the shape's intensity, %
    peak_tflops: float | None = None  # the peak pct_peak is taken of
    ops: list[str] = field(default_factory=list)          # the launching operators
    kernels: list[KernelShare] = field(default_factory=list)   # longest first, at most TOP_KERNELS
    kernel_names: int = 0            # distinct kernels that ran the shape (more than `kernels` lists when cut)
    beyond_peak: bool = False        # its rates came out above the GPU's peak: not shown (None), see warnings


@dataclass
class GemmShape:
    op: str                          # the launching operator: aten::mm, aten::addmm, aten::bmm, ...
    m: int
    n: int
    k: int
    batch: int
    dtype: str                       # of the first operand: bf16, fp16, fp32, fp8_e4m3, ...
    flops: float                     # per call: 2·batch·m·n·k
    bytes: float                     # per call: the operands read and the result written once
    a: ShapeSide
    b: ShapeSide
    ratio: float | None = None       # time a / b (None when one side runs none)
    gap_us: float = 0.0              # time a − b


@dataclass
class AttentionShape:
    op: str                          # "attention" | "attention_backward" (the back ends: a.ops, b.ops)
    batch: int
    heads: int                       # query heads
    kv_heads: int
    seq_q: int
    seq_k: int
    head_dim: int
    head_dim_v: int
    # is_causal as recorded (causal_read), else assumed: True for no mask and seq_q == seq_k > 1
    causal: bool
    dtype: str
    flops: float                     # per call (causal: half the score matrix)
    bytes: float                     # per call: q, k, v (+ mask) read and the output written once
    a: ShapeSide
    b: ShapeSide
    ratio: float | None = None
    gap_us: float = 0.0
    # batch × heads; eager attention's 3-D bmm knows only this product (batch and heads then None)
    batch_heads: int | None = None
    # causal as the op's recorded arguments say (is_causal); False: assumed (no mask, Sq = Sk > 1)
    causal_read: bool = False
    # dropout_p and scale as recorded (both sides alike); None: not recorded, or the sides differ.
    # Dropout does not change the FLOPs; scale None is the default 1/sqrt(head_dim)
    dropout: float | None = None
    scale: float | None = None


@dataclass
class ThroughputSide:
    """What one operation's kernels achieve on one side, over the kernels whose work is known."""

    time_us: float = 0.0             # all of the operation's kernels
    covered_us: float = 0.0          # those that carry known work (the figures below are over these)
    kernels: int = 0
    covered_kernels: int = 0
    flops: float = 0.0
    bytes: float = 0.0
    tflops: float | None = None
    tbps: float | None = None
    pct_peak: float | None = None     # time the FLOPs would take at peak ÷ covered time, %
    pct_peak_bw: float | None = None  # time the bytes would take at peak bandwidth ÷ covered time, %
    bound: str | None = None          # the larger of the two ideal times: "compute" | "memory"
    pct_roofline: float | None = None  # the larger ideal time ÷ covered time, %
    beyond_peak: bool = False         # its rates came out above the GPU's peak: not shown (None), see warnings


@dataclass
class ThroughputRow:
    category: str                    # the comparison's operation (category family)
    a: ThroughputSide
    b: ThroughputSide
