"""AMD AIE (Ryzen AI NPU) traces: per-core kernel timing, LOCK_STALL iterations and GMAC/s.

An AIE trace is the Perfetto JSON that mlir-aie's trace parser writes: a top-level array of
Chrome-trace events with one `pid` per traced tile (metadata `process_name` such as
"core_trace for tile2,0" or "mem_trace for tile0,1") and timestamps in core clock cycles. A compute
core's kernel marks its start with INSTR_EVENT_0 and its end with INSTR_EVENT_1; LOCK_STALL spans
are the core waiting for a buffer lock. A wait far longer than one kernel means the core sat idle
between two runs of the whole program, so such stalls separate iterations.

Pipeline: `load_aie_events` -> `parse_aie_events` (per-core timestamps) -> `analyze_core` (robust
pairing, iterations, phases, per-iteration stats) -> `system_aggregate` (perf iterations common to
every core, runtime = slowest core). `analyze_aie` runs all of it; `compare_aie` sets two runs side
by side. Every result is a plain dataclass with `to_dict()` (JSON-ready) for the CLI and the UI.
"""

from __future__ import annotations

import math
import os
import re
from bisect import bisect_left
from dataclasses import asdict, dataclass, field
from itertools import zip_longest
from statistics import median
from typing import Any

import orjson

from kerneldiff.core.errors import TraceError, file_error
from kerneldiff.core.fileio import open_regular
from kerneldiff.core.gzip_stream import GZIP_MAGIC, inflate
from kerneldiff.core.aie.detect import AIE_EVENT_NAMES as _AIE_EVENT_NAMES, KERNEL_END, KERNEL_START
from kerneldiff.core.aie.detect import TILE_PROCESS as _TILE_PROCESS

MAX_AIE_BYTES = 256 << 20        # JSON read whole: parsed events take ~5x this in memory

PHASE_WARMUP, PHASE_PERF, PHASE_EXTRA = "warmup", "perf", "extra"


# --------------------------------------------------------------------------------------------
# inputs: tunables and the GEMM being measured
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AieParams:
    """Every tunable of the analysis; defaults follow the AIE post-processor this is modelled on."""

    clock_mhz: float = 1250.0             # AIE core clock: trace timestamps are cycles at this rate
    peak_macs_per_cycle: int = 64         # per core, for the "% of peak" column
    lock_stall_factor: float = 20.0       # a LOCK_STALL >= this x median kernel ends an iteration
    dup_gap_fraction: float = 0.25        # events closer than this x median kernel are one burst
    outlier_lo: float = 1.0 / 3.0         # keep kernels within [lo, hi] x median duration
    outlier_hi: float = 3.0

    def __post_init__(self) -> None:
        if not (self.clock_mhz > 0 and self.peak_macs_per_cycle > 0 and self.lock_stall_factor > 0):
            raise ValueError("clock, peak MACs/cycle and lock-stall factor must be positive")
        if not (0 <= self.dup_gap_fraction < 1):
            raise ValueError("dup_gap_fraction must be in [0, 1)")
        if not (0 < self.outlier_lo <= 1 <= self.outlier_hi):
            raise ValueError("outlier window must satisfy 0 < lo <= 1 <= hi")

    @property
    def clock_ghz(self) -> float:
        return self.clock_mhz / 1000.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GemmShape:
    """A GEMM of M x K x N multiply-accumulates split evenly over rows x cols AIE cores."""

    M: int
    K: int
    N: int
    rows: int
    cols: int

    def __post_init__(self) -> None:
        if min(self.M, self.K, self.N, self.rows, self.cols) <= 0:
            raise ValueError("M, K, N, rows and cols must be positive")

    @property
    def macs(self) -> float:
        return float(self.M) * float(self.K) * float(self.N)

    @property
    def cores(self) -> int:
        return self.rows * self.cols

    @property
    def macs_per_core(self) -> float:
        return self.macs / self.cores

    def label(self) -> str:
        return f"{self.M}x{self.K}x{self.N} on {self.rows}x{self.cols}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "macs": self.macs, "cores": self.cores}


# --------------------------------------------------------------------------------------------
# loading and parsing
# --------------------------------------------------------------------------------------------

def load_aie_events(path: str | os.PathLike) -> list[Any]:
    """The event array of an AIE trace file (plain or gzip). AIE traces are small: read whole, up
    to MAX_AIE_BYTES of JSON (a small gzip may expand to gigabytes; a device never ends)."""
    path = os.fspath(path)
    f, st = open_regular(path)
    too_big = TraceError(path, f"larger than {MAX_AIE_BYTES >> 20} MiB of JSON: too large for an AIE trace "
                               f"(they are read whole)")
    try:
        with f:
            if f.read(2) == GZIP_MAGIC:
                f.seek(0)
                raw = bytearray()
                for piece in inflate(f, path, MAX_AIE_BYTES + 1, st.st_size + 1, strict=True):
                    raw += piece
            elif st.st_size > MAX_AIE_BYTES:
                raise too_big
            else:
                f.seek(0)
                raw = f.read(MAX_AIE_BYTES + 1)
    except OSError as e:
        raise file_error(path, e) from None
    if len(raw) > MAX_AIE_BYTES:
        raise too_big
    if not raw.strip():
        raise TraceError(path, "file is empty")
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise TraceError(path, f"not valid JSON ({e})") from None
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        return doc["traceEvents"]  # Perfetto also accepts the object form; tolerate it
    if not isinstance(doc, list):
        raise TraceError(path, f"top-level JSON is {type(doc).__name__}, expected an array of trace events")
    return doc


@dataclass
class CoreEvents:
    """The raw timestamps (cycles) of one traced compute core."""

    pid: Any
    process: str                   # the literal process_name from the trace
    tile: str                      # the part after " for ", e.g. "tile2,0"
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    stall_begins: list[int] = field(default_factory=list)
    stall_ends: list[int] = field(default_factory=list)


@dataclass
class AieTrace:
    """A parsed AIE trace: its compute cores and what was ignored or skipped."""

    path: str
    cores: list[CoreEvents]
    other_processes: list[str]     # mem/shim/... tiles, not analysed
    n_events: int
    skipped: dict[str, int]        # reason -> events skipped for it
    notes: list[str] = field(default_factory=list)


def _cycles(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(round(v)) if math.isfinite(v) else None
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return None
        return int(round(f)) if math.isfinite(f) else None
    return None


def _tile_of(process: str) -> str:
    return process.split(" for ", 1)[1].strip() if " for " in process else process


_DIGIT_RUNS = re.compile(r"([0-9]+)", re.A)


def _natural_key(s: str) -> tuple:
    """`tile2,10` after `tile2,9`. Digit runs (ASCII only: int('²') fails) are compared as
    (length, digits) without leading zeros, which orders them by value without int()'s digit limit.
    Even positions of the split hold text, odd ones digit runs, so two keys always compare."""
    parts = _DIGIT_RUNS.split(s)
    return tuple((len(p.lstrip("0")), p.lstrip("0")) if i % 2 else p for i, p in enumerate(parts))


def parse_aie_events(events: list[Any], path: str = "<events>") -> AieTrace:
    """Group the kernel and lock-stall timestamps by core. Malformed events are skipped and counted."""
    if not events:
        raise TraceError(path, "the trace holds no events")
    names: dict[Any, str] = {}
    per_pid: dict[Any, CoreEvents] = {}
    skipped: dict[str, int] = {}

    def skip(reason: str) -> None:
        skipped[reason] = skipped.get(reason, 0) + 1

    for ev in events:
        if not isinstance(ev, dict):
            skip("not a JSON object")
            continue
        name, ph = ev.get("name"), ev.get("ph")
        if ph == "M":
            if name == "process_name":
                args = ev.get("args")
                pname = args.get("name") if isinstance(args, dict) else None
                pid = ev.get("pid")
                if not isinstance(pname, str) or not isinstance(pid, (int, str)) or isinstance(pid, bool):
                    skip("process_name without pid or name")
                else:
                    names[pid] = pname
            continue
        if name not in _AIE_EVENT_NAMES or ph not in ("B", "E"):
            continue  # other tile events (DMA, ports, INSTR_EVENT_0 "E" twins, ...) are not needed
        if name == KERNEL_START and ph != "B" or name == KERNEL_END and ph != "E":
            continue
        pid, ts = ev.get("pid"), _cycles(ev.get("ts"))
        if not isinstance(pid, (int, str)) or isinstance(pid, bool) or ts is None:
            skip(f"{name} without a usable pid/ts")
            continue
        core = per_pid.get(pid)
        if core is None:
            core = per_pid[pid] = CoreEvents(pid=pid, process="", tile="")
        if name == KERNEL_START:
            core.starts.append(ts)
        elif name == KERNEL_END:
            core.ends.append(ts)
        elif ph == "B":
            core.stall_begins.append(ts)
        else:
            core.stall_ends.append(ts)

    notes: list[str] = []
    cores: list[CoreEvents] = []
    other: list[str] = []
    for pid, pname in names.items():
        if "core_trace" in pname:
            core = per_pid.get(pid) or CoreEvents(pid=pid, process="", tile="")
            core.process, core.tile = pname, _tile_of(pname)
            cores.append(core)
        elif _TILE_PROCESS.search(pname):
            other.append(pname)  # mem/shim tiles: recognised, not timed; other processes are noise
    unnamed = [c for pid, c in per_pid.items() if pid not in names and (c.starts or c.ends)]
    for core in unnamed:
        core.process = core.tile = f"pid {core.pid}"
        cores.append(core)
    if unnamed:
        notes.append(f"{len(unnamed)} pid(s) carry kernel events but no process_name; analysed as cores")
    if not cores and not other:
        raise TraceError(path, "no AIE tiles found (no 'core_trace for ...' processes and no "
                               "INSTR_EVENT_0/INSTR_EVENT_1 events): not an AIE trace")
    if not cores:
        notes.append("the trace has no core_trace processes: nothing to time")
    # two pids naming the same tile would collide in tables and comparisons
    seen: dict[str, int] = {}
    for c in cores:
        seen[c.tile] = seen.get(c.tile, 0) + 1
    for c in cores:
        if seen[c.tile] > 1:
            c.tile = f"{c.tile} (pid {c.pid})"
    cores.sort(key=lambda c: (_natural_key(c.tile), str(c.pid)))
    if skipped:
        total = sum(skipped.values())
        detail = ", ".join(f"{n} {r}" for r, n in sorted(skipped.items()))
        notes.append(f"skipped {total} malformed event(s): {detail}")
    return AieTrace(path=path, cores=cores, other_processes=sorted(other, key=_natural_key),
                    n_events=len(events), skipped=skipped, notes=notes)


# --------------------------------------------------------------------------------------------
# per-core analysis
# --------------------------------------------------------------------------------------------

@dataclass
class KernelPair:
    start: int
    end: int

    @property
    def duration(self) -> int:
        return self.end - self.start


@dataclass
class StallSpan:
    start: int
    end: int

    @property
    def duration(self) -> int:
        return self.end - self.start


@dataclass
class PairingStats:
    """How the raw start/end events of one core became kernel pairs."""

    starts: int = 0                 # INSTR_EVENT_0 begins seen
    ends: int = 0                   # INSTR_EVENT_1 ends seen
    duplicate_starts: int = 0       # dropped as part of a burst (closer than the dup gap)
    duplicate_ends: int = 0
    orphan_starts: int = 0          # a start followed by another start (its end was lost)
    orphan_ends: int = 0            # an end with no open start (e.g. the trace began mid-kernel)
    outliers: int = 0               # pairs outside the duration window
    outlier_filter_skipped: bool = False  # the window would have removed every pair
    pairs: int = 0                  # kernels kept

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _walk_pairs(starts: list[int], ends: list[int], keep_first: bool = False) -> tuple[list[tuple[int, int]], int, int]:
    """Pair each end with the latest open start before it, in one time-ordered walk.

    Two starts in a row mean the first lost its end; two ends in a row mean the second lost its
    start. Pairing "latest start" rather than "next start" keeps one lost event from shifting every
    later pair by one kernel. At equal timestamps an end closes the previous kernel first.
    keep_first: pair with the earliest open start instead (a duplicate start then shortens nothing).
    """
    merged = sorted([(t, 1) for t in starts] + [(t, 0) for t in ends])
    pairs: list[tuple[int, int]] = []
    open_start: int | None = None
    orphan_s = orphan_e = 0
    for t, is_start in merged:
        if is_start:
            if open_start is not None:
                orphan_s += 1
                if keep_first:
                    continue
            open_start = t
        elif open_start is None:
            orphan_e += 1
        else:
            pairs.append((open_start, t))
            open_start = None
    if open_start is not None:
        orphan_s += 1
    return pairs, orphan_s, orphan_e


def _drop_bursts(ts: list[int], min_gap: int) -> tuple[list[int], int]:
    """Keep the first event of every burst: a later one closer than `min_gap` is a duplicate."""
    kept: list[int] = []
    for t in sorted(ts):
        if kept and t - kept[-1] < min_gap:
            continue
        kept.append(t)
    return kept, len(ts) - len(kept)


def pair_kernels(starts: list[int], ends: list[int],
                 params: AieParams = AieParams()) -> tuple[list[KernelPair], PairingStats]:
    """Robust kernel pairs of one core: de-duplicated bursts, lost events and duration outliers removed."""
    stats = PairingStats(starts=len(starts), ends=len(ends))
    prelim, orphan_s, orphan_e = _walk_pairs(starts, ends)
    if not prelim:
        stats.orphan_starts, stats.orphan_ends = orphan_s, orphan_e
        return [], stats
    # the trace unit sometimes emits an event twice a few cycles apart; real kernels start at
    # least one kernel duration apart, so a fraction of the median duration separates the two
    # (a duplicate start left in shortens the pair it opens, and with it the median: the first
    # estimate is the larger of that median and the median of pairs made with each end's earliest
    # open start, which no duplicate shortens; the gap is then measured again on the cleaned pairs
    # until it stops growing)
    first_s, _, _ = _walk_pairs(starts, ends, keep_first=True)
    longest = max(median(e - s for s, e in prelim), median(e - s for s, e in first_s) if first_s else 0)
    min_gap = max(1, int(params.dup_gap_fraction * longest))
    for _ in range(4):
        clean_s, stats.duplicate_starts = _drop_bursts(starts, min_gap)
        clean_e, stats.duplicate_ends = _drop_bursts(ends, min_gap)
        raw, stats.orphan_starts, stats.orphan_ends = _walk_pairs(clean_s, clean_e)
        grown = max(1, int(params.dup_gap_fraction * median(e - s for s, e in raw))) if raw else min_gap
        if grown <= min_gap:
            break
        min_gap = grown
    pairs = [KernelPair(s, e) for s, e in raw]
    if not pairs:
        return [], stats
    med = median(p.duration for p in pairs)
    lo = max(1, int(params.outlier_lo * med))
    hi = max(lo + 1, int(params.outlier_hi * med))
    kept = [p for p in pairs if lo <= p.duration <= hi]
    if kept:
        stats.outliers = len(pairs) - len(kept)
    else:  # no consensus duration at all: better to show everything than nothing
        kept, stats.outlier_filter_skipped = pairs, True
    stats.pairs = len(kept)
    return kept, stats


def pair_stalls(begins: list[int], ends: list[int]) -> tuple[list[StallSpan], bool]:
    """Lock-stall spans, and whether the first stall event is an end without its begin (a sign
    that the trace starts mid-run)."""
    pairs, _, _ = _walk_pairs(begins, ends)
    opens_with_end = bool(ends) and (not begins or min(ends) < min(begins))
    return [StallSpan(s, e) for s, e in pairs], opens_with_end


def iteration_boundaries(stalls: list[StallSpan], median_kernel: float | None, factor: float) -> list[int]:
    """End times of the lock stalls long enough (>= factor x median kernel) to separate iterations."""
    if not stalls or not median_kernel or median_kernel <= 0:
        return []
    threshold = factor * float(median_kernel)
    return sorted({s.end for s in stalls if s.duration >= threshold})


def split_iterations(pairs: list[KernelPair], boundaries: list[int]) -> list[list[KernelPair]]:
    """Group pairs by the boundaries before them. Boundaries with no kernel between them (e.g. the
    long wait for input before the first kernel) make no empty iteration."""
    groups: dict[int, list[KernelPair]] = {}
    for p in pairs:
        groups.setdefault(bisect_left(boundaries, p.start), []).append(p)
    return [groups[k] for k in sorted(groups)]


def label_phases(detected: int, warmup: int, iterations: int | None) -> tuple[list[str], int, int]:
    """Phase of each detected iteration and the perf window [start, end): warm-up first, then the
    expected perf iterations, anything after is extra. `iterations=None` means all the rest are perf."""
    perf_start = min(max(0, warmup), detected)
    perf_end = detected if iterations is None else min(perf_start + max(0, iterations), detected)
    labels = [PHASE_WARMUP if i < perf_start else PHASE_PERF if i < perf_end else PHASE_EXTRA
              for i in range(detected)]
    return labels, perf_start, perf_end


@dataclass
class AieIteration:
    """One iteration of one core: its kernels' statistics and throughput."""

    index: int
    phase: str                      # warmup | perf | extra
    n_kernels: int
    mean_cycles: float              # kernel duration statistics
    min_cycles: int
    max_cycles: int
    span_cycles: int                # first kernel start -> last kernel end
    busy_fraction: float            # kernel cycles / span (the rest is stalls between kernels)
    first_start: int
    last_end: int
    span_us: float
    gmacs: float | None             # this core's share of the GEMM / span; None without a shape
    peak_fraction: float | None     # gmacs / (peak MACs per cycle x clock)
    kernels: list[KernelPair] = field(default_factory=list, repr=False)

    def to_dict(self, kernels: bool = False) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "kernels"}
        if kernels:
            d["kernels"] = [[p.start, p.end] for p in self.kernels]
        return d


def summarize_iteration(index: int, phase: str, pairs: list[KernelPair], shape: GemmShape | None,
                        params: AieParams = AieParams()) -> AieIteration:
    durs = [p.duration for p in pairs]
    span = pairs[-1].end - pairs[0].start
    gmacs = peak = None
    if shape is not None and span > 0:
        # MACs per cycle x cycles per ns = MACs per ns = GMAC/s
        gmacs = shape.macs_per_core / span * params.clock_ghz
        peak = gmacs / (params.peak_macs_per_cycle * params.clock_ghz)
    return AieIteration(
        index=index, phase=phase, n_kernels=len(durs), mean_cycles=sum(durs) / len(durs),
        min_cycles=min(durs), max_cycles=max(durs), span_cycles=span,
        busy_fraction=(sum(durs) / span) if span > 0 else 1.0,
        first_start=pairs[0].start, last_end=pairs[-1].end, span_us=span / params.clock_mhz,
        gmacs=gmacs, peak_fraction=peak, kernels=list(pairs))


@dataclass
class AieCore:
    """The analysis of one compute core."""

    pid: Any
    process: str
    tile: str
    stats: PairingStats
    n_stalls: int
    longest_stall_cycles: int | None
    median_kernel_cycles: float | None
    boundary_threshold_cycles: float | None   # lock_stall_factor x median kernel
    boundaries: list[int]                     # cycle timestamps that ended an iteration
    iterations: list[AieIteration]
    expected_iterations: int | None           # warmup + iterations, None when not given
    perf_start: int                           # perf window [perf_start, perf_end) of iterations
    perf_end: int
    notes: list[str] = field(default_factory=list)

    @property
    def detected_iterations(self) -> int:
        return len(self.iterations)

    @property
    def perf_iterations(self) -> list[AieIteration]:
        return self.iterations[self.perf_start:self.perf_end]

    @property
    def mismatch(self) -> bool:
        return self.expected_iterations is not None and self.detected_iterations != self.expected_iterations

    @property
    def perf_mean_span_cycles(self) -> float | None:
        its = self.perf_iterations
        return sum(i.span_cycles for i in its) / len(its) if its else None

    @property
    def perf_mean_gmacs(self) -> float | None:
        vals = [i.gmacs for i in self.perf_iterations if i.gmacs is not None]
        return sum(vals) / len(vals) if vals else None

    @property
    def perf_mean_busy(self) -> float | None:
        """Mean busy fraction over the perf iterations (None: no perf iteration)."""
        perf = self.perf_iterations
        return sum(i.busy_fraction for i in perf) / len(perf) if perf else None

    @property
    def dropped(self) -> int:
        """Events the pairing left out: duplicate and orphan starts and ends, outliers."""
        s = self.stats
        return s.duplicate_starts + s.duplicate_ends + s.orphan_starts + s.orphan_ends + s.outliers

    def to_dict(self, kernels: bool = False) -> dict[str, Any]:
        return {
            "pid": self.pid, "process": self.process, "tile": self.tile,
            "stats": self.stats.to_dict(), "n_stalls": self.n_stalls,
            "longest_stall_cycles": self.longest_stall_cycles,
            "median_kernel_cycles": self.median_kernel_cycles,
            "boundary_threshold_cycles": self.boundary_threshold_cycles,
            "boundaries": list(self.boundaries),
            "detected_iterations": self.detected_iterations,
            "expected_iterations": self.expected_iterations,
            "perf_window": [self.perf_start, self.perf_end],
            "perf_mean_span_cycles": self.perf_mean_span_cycles,
            "perf_mean_gmacs": self.perf_mean_gmacs,
            "mismatch": self.mismatch,
            "iterations": [it.to_dict(kernels) for it in self.iterations],
            "notes": list(self.notes),
        }


def _irregular_iterations(counts: list[int]) -> list[str]:
    """Iterations whose kernel count is far from the typical one point at a misplaced boundary."""
    if len(counts) < 2:
        return []
    typical = median(counts)
    notes = []
    merged = [i for i, n in enumerate(counts) if n >= 1.5 * typical]
    split = [i for i, n in enumerate(counts) if n <= 0.6 * typical]
    if merged:
        notes.append(f"iteration(s) {', '.join(map(str, merged))} hold about twice the typical {typical:g} "
                     "kernels: two iterations were probably merged (their boundary stall was shorter "
                     "than the threshold; a lower lock_stall_factor may split them)")
    if split:
        notes.append(f"iteration(s) {', '.join(map(str, split))} hold far fewer than the typical {typical:g} "
                     "kernels: a long stall inside an iteration may have split it (a higher "
                     "lock_stall_factor merges them), or the trace lost their start")
    return notes


def _explain_mismatch(detected: int, warmup: int, iterations: int, stalls: list[StallSpan], med: float,
                      params: AieParams, began_mid_run: bool) -> str:
    expected = warmup + iterations
    perf = max(0, min(detected - warmup, iterations))
    parts = [f"detected {detected} iteration(s) but expected {expected} ({warmup} warm-up + {iterations} perf)"]
    threshold = params.lock_stall_factor * med
    if detected > expected:
        parts.append(f"the last {detected - expected} are labelled extra")
        return "; ".join(parts)
    parts.append(f"only {perf} of {iterations} perf iteration(s) are available")
    near = [s.duration for s in stalls if 0.25 * threshold <= s.duration < threshold]
    if not stalls:
        parts.append("the core has no LOCK_STALL spans, so iterations cannot be separated")
    elif detected == 1:
        longest = max(s.duration for s in stalls)
        parts.append(f"no LOCK_STALL reached {params.lock_stall_factor:g}x the median kernel "
                     f"({threshold:.0f} cycles; the longest was {longest}, {longest / med:.1f}x)")
    elif near:
        parts.append(f"{len(near)} LOCK_STALL span(s) fell just short of the boundary threshold "
                     f"(up to {max(near)} of {threshold:.0f} cycles); a lower lock_stall_factor may split them")
    if began_mid_run:
        parts.append("the trace begins mid-run (it opens with the end of an unmatched event: the trace "
                     "buffer overflowed and lost the oldest events), so the first iterations are missing "
                     "and the warm-up label falls on perf iterations")
    return "; ".join(parts)


def analyze_core(core: CoreEvents, shape: GemmShape | None = None, warmup: int = 0,
                 iterations: int | None = None, params: AieParams = AieParams()) -> AieCore:
    """Pair, split into iterations, label phases and summarise one core. Never raises on thin data:
    a core without kernels comes back with no iterations and a note saying why."""
    warmup = max(0, warmup)
    expected = None if iterations is None else warmup + max(0, iterations)
    pairs, stats = pair_kernels(core.starts, core.ends, params)
    stalls, stall_opens_with_end = pair_stalls(core.stall_begins, core.stall_ends)
    longest = max((s.duration for s in stalls), default=None)
    result = AieCore(pid=core.pid, process=core.process, tile=core.tile, stats=stats, n_stalls=len(stalls),
                     longest_stall_cycles=longest, median_kernel_cycles=None,
                     boundary_threshold_cycles=None, boundaries=[], iterations=[],
                     expected_iterations=expected, perf_start=0, perf_end=0)
    if not pairs:
        result.notes.append(
            f"no kernel pairs: {stats.starts} INSTR_EVENT_0 start(s) and {stats.ends} INSTR_EVENT_1 "
            "end(s) could not be matched" + (" (is the kernel instrumented with event markers?)"
                                             if not stats.starts and not stats.ends else ""))
        return result
    med = float(median(p.duration for p in pairs))
    bounds = iteration_boundaries(stalls, med, params.lock_stall_factor)
    groups = split_iterations(pairs, bounds)
    labels, result.perf_start, result.perf_end = label_phases(len(groups), warmup, iterations)
    result.median_kernel_cycles = med
    result.boundary_threshold_cycles = params.lock_stall_factor * med
    result.boundaries = bounds
    result.iterations = [summarize_iteration(i, labels[i], g, shape, params) for i, g in enumerate(groups)]
    if stats.outlier_filter_skipped:
        result.notes.append("kernel durations vary too much for the outlier window; kept every pair")
    if expected is not None and len(groups) != expected:
        kernel_opens_with_end = bool(core.ends) and (not core.starts or min(core.ends) < min(core.starts))
        result.notes.append(_explain_mismatch(len(groups), warmup, iterations or 0, stalls, med, params,
                                              stall_opens_with_end or kernel_opens_with_end))
    result.notes.extend(_irregular_iterations([len(g) for g in groups]))
    return result


# --------------------------------------------------------------------------------------------
# system aggregate
# --------------------------------------------------------------------------------------------

@dataclass
class SystemIteration:
    index: int
    runtime_cycles: int            # the slowest core's span: every core must finish
    runtime_us: float
    slowest_tile: str
    gmacs: float | None            # whole GEMM / runtime
    peak_fraction: float | None    # of rows x cols x peak MACs per cycle

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AieAggregate:
    """The whole array over the perf iterations every analysed core has."""

    indices: list[int]
    per_iteration: list[SystemIteration]
    mean_runtime_cycles: float | None
    mean_runtime_us: float | None
    mean_gmacs: float | None
    best_index: int | None          # iteration index with the highest GMAC/s (lowest runtime)
    worst_index: int | None
    cores_used: list[str]
    cores_left_out: list[str]       # cores with no kernels
    notes: list[str] = field(default_factory=list)

    @property
    def best(self) -> SystemIteration | None:
        return next((s for s in self.per_iteration if s.index == self.best_index), None)

    @property
    def worst(self) -> SystemIteration | None:
        return next((s for s in self.per_iteration if s.index == self.worst_index), None)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["count"] = len(self.indices)
        d["best"] = self.best.to_dict() if self.best else None
        d["worst"] = self.worst.to_dict() if self.worst else None
        return d


def system_aggregate(cores: list[AieCore], shape: GemmShape | None = None,
                     params: AieParams = AieParams()) -> AieAggregate:
    used = [c for c in cores if c.iterations]
    left_out = [c.tile for c in cores if not c.iterations]
    agg = AieAggregate(indices=[], per_iteration=[], mean_runtime_cycles=None, mean_runtime_us=None,
                       mean_gmacs=None, best_index=None, worst_index=None,
                       cores_used=[c.tile for c in used], cores_left_out=left_out)
    if left_out:
        agg.notes.append(f"{len(left_out)} core(s) without kernels left out: {', '.join(left_out)}")
    if not used:
        agg.notes.append("no core has kernel pairs: nothing to aggregate")
        return agg
    common = set.intersection(*(set(range(c.perf_start, c.perf_end)) for c in used))
    every = set.union(*(set(range(c.perf_start, c.perf_end)) for c in used))
    if not common:
        agg.notes.append("no perf iteration is present on every core")
        return agg
    if every - common:
        agg.notes.append(f"perf iteration(s) {', '.join(map(str, sorted(every - common)))} are missing "
                         "on some cores and left out")
    for i in sorted(common):
        slowest = max(used, key=lambda c: c.iterations[i].span_cycles)
        runtime = slowest.iterations[i].span_cycles
        gmacs = peak = None
        if shape is not None and runtime > 0:
            gmacs = shape.macs / runtime * params.clock_ghz
            peak = gmacs / (shape.cores * params.peak_macs_per_cycle * params.clock_ghz)
        agg.per_iteration.append(SystemIteration(i, runtime, runtime / params.clock_mhz, slowest.tile,
                                                 gmacs, peak))
    agg.indices = sorted(common)
    per = agg.per_iteration
    agg.mean_runtime_cycles = sum(s.runtime_cycles for s in per) / len(per)
    agg.mean_runtime_us = agg.mean_runtime_cycles / params.clock_mhz
    if shape is not None:
        agg.mean_gmacs = sum(s.gmacs or 0.0 for s in per) / len(per)
    agg.best_index = min(per, key=lambda s: (s.runtime_cycles, s.index)).index
    agg.worst_index = max(per, key=lambda s: (s.runtime_cycles, -s.index)).index
    return agg


# --------------------------------------------------------------------------------------------
# one run, and two runs side by side
# --------------------------------------------------------------------------------------------

@dataclass
class AieRun:
    """Everything known about one AIE trace."""

    path: str
    shape: GemmShape | None
    params: AieParams
    warmup: int
    iterations: int | None
    cores: list[AieCore]
    aggregate: AieAggregate
    other_processes: list[str]
    n_events: int
    skipped: dict[str, int]
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return os.path.basename(self.path) or self.path

    def core(self, tile: str) -> AieCore | None:
        return next((c for c in self.cores if c.tile == tile), None)

    def to_dict(self, kernels: bool = False) -> dict[str, Any]:
        return {
            "path": self.path, "kind": "aie",
            "shape": self.shape.to_dict() if self.shape else None,
            "params": self.params.to_dict(), "warmup": self.warmup, "iterations": self.iterations,
            "cores": [c.to_dict(kernels) for c in self.cores],
            "aggregate": self.aggregate.to_dict(),
            "other_processes": list(self.other_processes), "n_events": self.n_events,
            "skipped": dict(self.skipped), "notes": list(self.notes),
        }


def analyze_aie(source: str | os.PathLike | list, shape: GemmShape | None = None, warmup: int = 0,
                iterations: int | None = None, params: AieParams | None = None,
                path: str | None = None) -> AieRun:
    """Analyse an AIE trace file (or an already loaded event list, labelled by `path`)."""
    params = params or AieParams()
    if isinstance(source, list):
        path = path or "<events>"
        events = source
    else:
        path = path or os.fspath(source)
        events = load_aie_events(source)
    trace = parse_aie_events(events, path)
    cores = [analyze_core(c, shape, warmup, iterations, params) for c in trace.cores]
    notes = list(trace.notes)
    with_kernels = sum(1 for c in cores if c.iterations)
    if shape is not None and with_kernels and with_kernels != shape.cores:
        notes.append(f"the shape spreads the GEMM over {shape.rows}x{shape.cols} = {shape.cores} cores but "
                     f"the trace times {with_kernels}; per-core GMAC/s assumes 1/{shape.cores} of the work each")
    mismatched = [c.tile for c in cores if c.mismatch]
    if mismatched:
        notes.append(f"{len(mismatched)} core(s) with an unexpected iteration count: {', '.join(mismatched)}")
    return AieRun(path=path, shape=shape, params=params, warmup=max(0, warmup), iterations=iterations,
                  cores=cores, aggregate=system_aggregate(cores, shape, params),
                  other_processes=trace.other_processes, n_events=trace.n_events,
                  skipped=dict(trace.skipped), notes=notes)


@dataclass
class ComparisonRow:
    metric: str
    unit: str
    a: float | int | str | None
    b: float | int | str | None
    ratio: float | None             # b / a for numbers
    better: str | None              # "a", "b" or None (equal, or not a performance figure)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PairedIteration:
    """The n-th perf iteration of each run (their indices may differ)."""

    ordinal: int
    a_index: int | None
    a_runtime_cycles: int | None
    a_gmacs: float | None
    b_index: int | None
    b_runtime_cycles: int | None
    b_gmacs: float | None

    @property
    def ratio(self) -> float | None:
        if self.a_runtime_cycles and self.b_runtime_cycles:
            return self.b_runtime_cycles / self.a_runtime_cycles
        return None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


@dataclass
class AieComparison:
    a_label: str
    b_label: str
    rows: list[ComparisonRow]
    per_iteration: list[PairedIteration]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"a_label": self.a_label, "b_label": self.b_label,
                "rows": [r.to_dict() for r in self.rows],
                "per_iteration": [p.to_dict() for p in self.per_iteration], "notes": list(self.notes)}


def _mean(vals: list[float]) -> float | None:
    vals = [v for v in vals if v is not None]
    return sum(vals) / len(vals) if vals else None


def _row(metric: str, unit: str, a: Any, b: Any, higher_is_better: bool | None) -> ComparisonRow:
    ratio = better = None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        ratio = b / a if a else None
        if higher_is_better is not None and a != b:
            better = "b" if (b > a) == higher_is_better else "a"
    return ComparisonRow(metric, unit, a, b, ratio, better)


def compare_aie(a: AieRun, b: AieRun) -> AieComparison:
    """Two runs (e.g. two tilings of one GEMM) side by side: headline rows and paired perf iterations."""

    def facts(r: AieRun) -> dict[str, Any]:
        used = [c for c in r.cores if c.iterations]
        perf = [it for c in used for it in c.perf_iterations]
        return {
            "shape": r.shape.label() if r.shape else None,
            "cores": len(used),
            "iters": max((c.detected_iterations for c in used), default=0),
            "common": len(r.aggregate.indices),
            "kernel": median([c.median_kernel_cycles for c in used]) if used else None,
            "kpi": _mean([it.n_kernels for it in perf]),
            "span": _mean([it.span_cycles for it in perf]),
            "busy": _mean([it.busy_fraction for it in perf]),
            "runtime": r.aggregate.mean_runtime_cycles,
            "runtime_us": r.aggregate.mean_runtime_us,
            "gmacs": r.aggregate.mean_gmacs,
            "best": r.aggregate.best.gmacs if r.aggregate.best else None,
            "peak": _mean([s.peak_fraction for s in r.aggregate.per_iteration]),
        }

    fa, fb = facts(a), facts(b)
    rows = [
        _row("GEMM / tiling", "", fa["shape"], fb["shape"], None),
        _row("cores with kernels", "", fa["cores"], fb["cores"], None),
        _row("iterations detected (max per core)", "", fa["iters"], fb["iters"], None),
        _row("perf iterations on every core", "", fa["common"], fb["common"], None),
        _row("median kernel", "cycles", fa["kernel"], fb["kernel"], False),
        _row("kernels per perf iteration (per core)", "", fa["kpi"], fb["kpi"], None),
        _row("mean perf span per core", "cycles", fa["span"], fb["span"], False),
        _row("core busy fraction", "", fa["busy"], fb["busy"], True),
        _row("system runtime (slowest core)", "cycles", fa["runtime"], fb["runtime"], False),
        _row("system runtime", "µs", fa["runtime_us"], fb["runtime_us"], False),
        _row("system throughput", "GMAC/s", fa["gmacs"], fb["gmacs"], True),
        _row("best iteration throughput", "GMAC/s", fa["best"], fb["best"], True),
        _row("fraction of array peak", "", fa["peak"], fb["peak"], True),
    ]
    per = []
    for n, (sa, sb) in enumerate(zip_longest(a.aggregate.per_iteration, b.aggregate.per_iteration)):
        per.append(PairedIteration(n, sa.index if sa else None, sa.runtime_cycles if sa else None,
                                   sa.gmacs if sa else None, sb.index if sb else None,
                                   sb.runtime_cycles if sb else None, sb.gmacs if sb else None))
    notes = []
    if a.shape and b.shape and (a.shape.M, a.shape.K, a.shape.N) != (b.shape.M, b.shape.K, b.shape.N):
        notes.append("the runs compute different GEMMs: compare GMAC/s rather than runtime")
    if (a.shape is None) != (b.shape is None):
        notes.append("only one run has a GEMM shape, so GMAC/s compares with nothing")
    if a.params.clock_mhz != b.params.clock_mhz:
        notes.append(f"the runs assume different clocks ({a.params.clock_mhz:g} vs {b.params.clock_mhz:g} MHz)")
    if not a.aggregate.per_iteration or not b.aggregate.per_iteration:
        notes.append("at least one run has no perf iteration common to all its cores")
    return AieComparison(a.label, b.label, rows, per, notes)
