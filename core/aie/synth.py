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

from kerneldiff.core.aie.analysis import KERNEL_END as KERNEL_END_NAME
from kerneldiff.core.aie.analysis import KERNEL_START as KERNEL_START_NAME
from kerneldiff.core.aie.analysis import AieParams, GemmShape


@dataclass(frozen=True)
class AiePlan:
    rows: int = 2
    cols: int = 2
    # 128^3 MACs over 4 cores in ~8 x 2000 cycles per run is ~45% of the 64 MAC/cycle peak:
    # a plausible efficiency, so every derived figure stays in a realistic range
    M: int = 128
    K: int = 128
    N: int = 128
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
    """The planted answer. The system helpers index every core alike: valid while no core lost or
    merged runs (otherwise compare per core)."""

    plan: AiePlan
    cores: list[CoreTruth]

    def core_gmacs(self, core: int, i: int, params: AieParams = AieParams()) -> float:
        return self.plan.shape.macs_per_core / self.cores[core].span(i) * params.clock_ghz

    def system_runtime(self, i: int) -> int:
        return max(c.span(i) for c in self.cores)

    def system_gmacs(self, i: int, params: AieParams = AieParams()) -> float:
        return self.plan.shape.macs / self.system_runtime(i) * params.clock_ghz


_DUP_MAX_DELAY = 20  # cycles: far below the 0.25 x kernel burst gap, so a duplicate is unmistakable


def _marker(name: str, pid: int, tid: int, ts: int) -> list[dict[str, Any]]:
    # the trace unit reports an event as a one-cycle B/E pair
    return [{"name": name, "ph": "B", "pid": pid, "tid": tid, "ts": ts, "args": {}},
            {"name": name, "ph": "E", "pid": pid, "tid": tid, "ts": ts + 1, "args": {}}]


def _span(name: str, pid: int, tid: int, b: int, e: int) -> list[dict[str, Any]]:
    return [{"name": name, "ph": "B", "pid": pid, "tid": tid, "ts": b, "args": {}},
            {"name": name, "ph": "E", "pid": pid, "tid": tid, "ts": e, "args": {}}]


def _schedule(plan: AiePlan, rng: random.Random, outliers: list[set]) -> list[list[list[tuple[int, int]]]]:
    """Kernel (start, end) per core per run. Runs start together; the next run waits for the slowest
    core plus the host's turnaround (the long boundary stall)."""
    n_cores = plan.rows * plan.cols

    def wobble(x: float) -> int:
        return max(1, int(round(x * (1 + rng.uniform(-plan.jitter, plan.jitter)))))

    runs: list[list[list[tuple[int, int]]]] = [[] for _ in range(n_cores)]
    run_start = plan.boundary_stall_cycles  # a long wait for the first input precedes run 0
    for r in range(plan.total_runs):
        latest = run_start
        for c in range(n_cores):
            slow = plan.core_slowdown[c] if c < len(plan.core_slowdown) else 1.0
            t = run_start + rng.randint(0, 40)  # cores start within a few cycles of each other
            ks = []
            for k in range(plan.kernels_per_iteration):
                # an outlier really runs 6x long (interrupted, refetching): outside the 3x window
                d = wobble(plan.kernel_cycles * slow * (6 if (r, k) in outliers[c] else 1))
                ks.append((t, t + d))
                t += d + wobble(plan.gap_cycles)
            runs[c].append(ks)
            latest = max(latest, ks[-1][1])
        run_start = latest + plan.boundary_stall_cycles
    return runs


def make_aie_events(plan: AiePlan = AiePlan()) -> tuple[list[dict[str, Any]], AieTruth]:
    """Events of a synthetic AIE trace and the truth an analysis must recover."""
    rng = random.Random(plan.seed)
    n_cores = plan.rows * plan.cols
    short, lost = set(plan.short_boundaries), dict(plan.lost_leading)
    # outliers and lost ends sit on interior kernels so every run's span stays first start..last end
    interior = [(r, k) for r in range(plan.total_runs) for k in range(1, plan.kernels_per_iteration - 1)]
    outliers, missing = [], []
    for _ in range(n_cores):
        picks = rng.sample(interior, min(len(interior), plan.outliers_per_core + plan.missing_ends_per_core))
        outliers.append(set(picks[:plan.outliers_per_core]))
        missing.append(set(picks[plan.outliers_per_core:]))
    runs = _schedule(plan, rng, outliers)

    meta: list[dict[str, Any]] = []
    body: list[dict[str, Any]] = []
    truths: list[CoreTruth] = []
    for c in range(n_cores):
        pid, col, row = c, c % plan.cols, 2 + c // plan.cols  # AIE2 compute tiles start at row 2
        tile = plan.tile_names[c] if c < len(plan.tile_names) else f"tile{col},{row}"
        meta.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": f"core_trace for {tile}"}})
        for tid, tname in enumerate((KERNEL_START_NAME, KERNEL_END_NAME, "LOCK_STALL")):
            meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": tname}})
        truth = CoreTruth(pid=pid, tile=tile)
        evs = _span("LOCK_STALL", pid, 2, 1, runs[c][0][0][0] - 3)
        dup_ts: list[int] = []
        kept_runs: list[list[tuple[int, int]]] = []
        for r, ks in enumerate(runs[c]):
            kept = []
            for k, (s, e) in enumerate(ks):
                evs += _marker(KERNEL_START_NAME, pid, 0, s)
                if (r, k) in missing[c]:
                    truth.missing_ends += 1
                else:
                    evs += _marker(KERNEL_END_NAME, pid, 1, e - 1)  # its E lands on the kernel end
                    if (r, k) in outliers[c]:
                        truth.outliers += 1
                    else:
                        kept.append((s, e))
                    if rng.random() < plan.duplicate_rate:
                        evs += _marker(KERNEL_END_NAME, pid, 1, e - 1 + rng.randint(1, _DUP_MAX_DELAY))
                        dup_ts.append(e)
                if rng.random() < plan.duplicate_rate:
                    evs += _marker(KERNEL_START_NAME, pid, 0, s + rng.randint(1, _DUP_MAX_DELAY))
                    dup_ts.append(s)
                if k + 1 < len(ks):  # the short wait for the next buffer
                    evs += _span("LOCK_STALL", pid, 2, e + 2, ks[k + 1][0] - 2)
            kept_runs.append(kept)
            if r + 1 < len(runs[c]):
                end = ks[-1][1]
                # a "short boundary" core idles without a lock stall covering the wait
                stop = end + 2 + plan.gap_cycles if (c, r) in short else runs[c][r + 1][0][0] - 2
                evs += _span("LOCK_STALL", pid, 2, end + 2, stop)
        groups: list[list[tuple[int, int]]] = []
        for r, kept in enumerate(kept_runs):
            if r > 0 and (c, r - 1) in short:
                groups[-1].extend(kept)  # no boundary seen: the two runs are one iteration
            else:
                groups.append(list(kept))
        cut = 0
        if lost.get(c):
            # the trace buffer overflowed: everything before run `n` is gone (the boundary stall
            # before it keeps only its end)
            cut = runs[c][lost[c]][0][0] - 10
            evs = [e for e in evs if e["ts"] >= cut]
            groups = groups[lost[c]:]
        truth.iterations = groups
        truth.duplicates = sum(1 for t in dup_ts if t >= cut)
        truths.append(truth)
        body += evs

    if plan.other_tiles:
        for c in range(plan.cols):
            for pid, kind, row in ((n_cores + 2 * c, "mem_trace", 1), (n_cores + 2 * c + 1, "shim_trace", 0)):
                meta.append({"name": "process_name", "ph": "M", "pid": pid,
                             "args": {"name": f"{kind} for tile{c},{row}"}})
                for r in range(plan.total_runs):
                    t = runs[0][r][0][0] - 500
                    body += _marker("DMA_S2MM_0_START_TASK", pid, 0, t)
                    body += _span("PORT_RUNNING_0", pid, 1, t + 5, t + 400)
    body.sort(key=lambda e: (e["ts"], e["pid"]))  # one time-ordered stream, as the parser writes it
    return meta + body, AieTruth(plan=plan, cores=truths)


def write_aie_trace(path: str | os.PathLike, plan: AiePlan = AiePlan()) -> AieTruth:
    """Write a synthetic AIE trace (gzip when the name ends in .gz) and return its truth."""
    events, truth = make_aie_events(plan)
    data = orjson.dumps(events)
    path = os.fspath(path)
    if path.endswith(".gz"):
        data = gzip.compress(data, mtime=0)  # mtime=0: same plan, same bytes
    with open(path, "wb") as f:
        f.write(data)
    return truth
