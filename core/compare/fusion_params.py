"""The fusion model's parameters for one side (`kerneldiff.core.compare.fusion_model` chooses and
measures them): what each saving estimate was priced with (`SavingEstimate.params`). A result, read
by attribute; its JSON is its fields in order, as the dict it replaced was.
"""

from __future__ import annotations

from dataclasses import asdict
from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use (lazy_dataclass.py)


@dataclass(frozen=True)
class FusionParams:
    dispatch_ns: float = 4000.0        # per kernel launch, eager PyTorch (launch + scheduling gap)
    roundtrip_ns: float = 10000.0      # a host↔device synchronisation
    memory_bw: float = 2000.0          # bytes/ns (GB/s), device memory peak
    readback_bw: float = 25.0          # bytes/ns, device→host (PCIe gen4 x16 ≈ 25 GB/s)
    unified_memory: bool = False
    achieved_fraction: float = 0.6     # memory-bound kernels reach ~60% of peak bandwidth
    min_gain_ns: float = 1000.0        # below 1 µs per occurrence a fusion is not worth a kernel
    # where dispatch_ns comes from: "default" (the family's), "override" (the user's), or
    # "measured: …" (the trace's own gap between queued kernels, `with_measured_dispatch`)
    dispatch_basis: str = "default"

    def to_dict(self) -> dict:
        return asdict(self)
