"""Synthetic AMD AIE traces with a known answer, for tests and demos.

The output mimics mlir-aie's Perfetto JSON: a top-level array, `process_name` / `thread_name`
metadata first, one pid per traced tile, timestamps in cycles, each INSTR_EVENT a B/E pair one cycle
long (the trace unit reports events, not spans). A GEMM runs `warmup + iterations + extra` times on
rows x cols cores; every run is a series of kernels (INSTR_EVENT_0 .. INSTR_EVENT_1) separated by
short LOCK_STALLs, and runs are separated by one long LOCK_STALL while the host re-issues the work.

Planted imperfections, each recorded in the returned truth so tests know the right answer:
duplicate events a few cycles apart, duration outliers, lost kernel ends, a boundary stall cut short
on one core (two iterations merge), and a core whose oldest events were lost (ring-buffer overflow).
Same plan -> same bytes.
"""

from __future__ import annotations

import gzip
import os
import random
from dataclasses import dataclass, field
from typing import Any

import orjson

from .aie import GemmShape, AieParams


@dataclass(frozen=True)
class AiePlan:
    rows: int = 2
    cols: int = 2
    M: int = 256
    K: int = 256
    N: int = 256
    warmup: int = 2
    iterations: int = 5
    extra: int = 0                         # runs beyond warmup + iterations
    kernels_per_iteration: int = 8
    kernel_cycles: int = 2000
    jitter: float = 0.03                   # +- fraction on every kernel duration and gap
    gap_cycles: int = 300                  # lock stall between kernels inside a run
    boundary_stall_cycles: int = 120_000   # lock stall between runs: 60 x kernel, over the 20x threshold
    core_slowdown: tuple[float, ...] = ()  # duration multiplier per core (missing -> 1.0)
    duplicate_rate: float = 0.05           # chance that a kernel's start or end event is emitted twice
    outliers_per_core: int = 1             # kernels running 6x nominal (outside the 3x window)
    missing_ends_per_core: int = 0         # kernels whose INSTR_EVENT_1 never reaches the trace
    short_boundaries: tuple[tuple[int, int], ...] = ()   # (core, run): the stall after that run is short
    lost_leading: tuple[tuple[int, int], ...] = ()       # (core, runs): the core's first runs are lost
    other_tiles: bool = True               # add mem/shim tiles with DMA events (must be ignored)
    tile_names: tuple[str, ...] = ()       # override the core process names' tile part
    seed: int = 0

    @property
    def total_runs(self) -> int:
        return self.warmup + self.iterations + self.extra

    @property
    def shape(self) -> GemmShape:
        return GemmShape(self.M, self.K, self.N, self.rows, self.cols)


@dataclass
class CoreTruth:
    pid: int
    tile: str
    # what a correct analysis must find: kept kernels (start, end) per detected iteration
    iterations: list[list[tuple[int, int]]] = field(default_factory=list)
    duplicates: int = 0
    outliers: int = 0
    missing_ends: int = 0

    def span(self, i: int) -> int:
        ks = self.iterations[i]
        return ks[-1][1] - ks[0][0]


@dataclass
class AieTruth:
    plan: AiePlan
    cores: list[CoreTruth]

    def core_gmacs(self, core: int, i: int, params: AieParams = AieParams()) -> float:
        return self.plan.shape.macs_per_core / self.cores[core].span(i) * params.clock_ghz

    def system_runtime(self, i: int) -> int:
        return max(c.span(i) for c in self.cores)

    def system_gmacs(self, i: int, params: AieParams = AieParams()) -> float:
        return self.plan.shape.macs / self.system_runtime(i) * params.clock_ghz


