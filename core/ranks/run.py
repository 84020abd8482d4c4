"""A run of rank traces against another: load every rank's summary in parallel, pick the
representative rank of each run, and compare ranks, collectives and stragglers.

Memory: each rank is reduced to its summary in the process that read it, so a process holds one
rank's model at a time; the number of processes is the smaller of the CPUs and what the machine's
available memory allows for the largest file (`_jobs`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kerneldiff.core.analysis.collective_pairs import END_FLOOR_US, END_FRACTION
from kerneldiff.core.analysis.collectives import (MIN_VALIDATED, CollectiveRow, Straggler, collective_rows, match, side_rows,
                                                  straggler)
from kerneldiff.core.ranks.identify import RankFile
from kerneldiff.core.ranks.summary import RankRow, RankSummary, summary_or_error as _one

if TYPE_CHECKING:   # read lazily: the link peaks load their table
    from kerneldiff.core.analysis.links import LinkPeak

# a load's peak memory, per byte of the trace's JSON: the reader holds a bounded window of text,
# the columns ~80 bytes per event; measured 0.3-0.45x on the shared traces (60-250 MB): 0.5 with room
_PEAK_PER_JSON_BYTE = 0.5
_PEAK_FLOOR = 200 << 20


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _jobs(files: list[RankFile], requested: int | None) -> int:
    if requested is not None:
        return max(1, min(requested, len(files)))
    from kerneldiff.core.ingest.probe import probe
    from kerneldiff.core.ingest.probe import json_bytes as _json_bytes

    biggest = 0
    for f in files:
        try:
            biggest = max(biggest, _json_bytes(probe(f.path)))
        except Exception:   # an unreadable file is reported by its own load
            pass
    peak = max(int(biggest * _PEAK_PER_JSON_BYTE), _PEAK_FLOOR)
    mem = _available_memory()
    by_memory = max(1, mem // peak) if mem else 1
    return int(max(1, min(len(files), os.cpu_count() or 1, by_memory)))


def _raise_error(result) -> RankSummary:
    from kerneldiff.core.errors import TraceError

    if isinstance(result, tuple):
        raise TraceError(*result)
    return result


def load_ranks(files: list[RankFile], registry: str | None = None, use_cache: bool = True,
               device: int | None = None, jobs: int | None = None, skip=None,
               scheduler: str | None = None) -> list[RankSummary | None]:
    """Every rank's summary, in rank order: in `jobs` processes at once (default: as many as the
    CPUs and the available memory allow), or here when one is enough. `skip(path, problem)`: a
    file whose error it accepts gives None instead of failing the run. `scheduler`: a Dask
    scheduler's address or "local" (ranks/cluster.py) does the map instead of the process pool."""
    work = [(f.rank, f.path, registry, use_cache, device) for f in files]

    def _raise(result):
        if isinstance(result, tuple) and skip is not None and skip(*result):
            return None
        return _raise_error(result)

    if scheduler is not None:
        from kerneldiff.core.ranks.cluster import summaries_on_cluster

        return [_raise(r) for r in summaries_on_cluster(work, scheduler, jobs)]
    n = _jobs(files, jobs)
    if n <= 1 or len(work) <= 1:
        return [_raise(_one(w)) for w in work]
    from kerneldiff.core.processes.pool import fork_pool
    from kerneldiff.core.ranks.summary import classifier_for

    classifier_for(registry)     # read once here: the forked processes inherit it

    with fork_pool(n) as pool:
        return [_raise(r) for r in pool.map(_one, work)]


@dataclass
class Run:
    """One side: its files, where their ranks came from, and each rank's summary."""

    arg: str
    files: list[RankFile]
    rank_source: str
    ranks: list[RankSummary] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)    # files of the directory or glob that are not traces

    @property
    def world_size(self) -> int:
        sizes = {r.world_size for r in self.ranks if r.world_size}
        return sizes.pop() if len(sizes) == 1 else len(self.ranks)

    def rank(self, n: int) -> RankSummary | None:
        return next((r for r in self.ranks if r.rank == n), None)

    def slowest(self) -> RankSummary:
        return max(self.ranks, key=lambda r: (r.wall_us, -r.rank))


@dataclass
class Spread:
    """The ranks' wall clock: the figures' spread over the run."""

    ranks: int
    wall_min_us: float
    wall_median_us: float
    wall_max_us: float
    exposed_comm_min_us: float
    exposed_comm_max_us: float


def spread(run: Run) -> Spread:
    w = np.array([r.wall_us for r in run.ranks])
    x = np.array([r.exposed_comm_us for r in run.ranks])
    return Spread(len(w), float(w.min()), float(np.median(w)), float(w.max()), float(x.min()), float(x.max()))


@dataclass(frozen=True)
class Representative:
    """The rank of each run the comparison reads, and how it was chosen (its JSON: a, b, how)."""

    a: int
    b: int
    how: str                                # "slowest rank (largest wall clock)" | "rank N (--rank)"

    def side(self, key: str) -> int:
        return self.a if key == "a" else self.b


@dataclass(frozen=True)
class RunPairing:
    """What the pairing of one run's collectives across its ranks found (its JSON: these fields, in
    order; the per-rank dicts are keyed by rank id)."""

    validated: int                          # collective instances validated across the ranks
    reference_rank: int | None              # the rank the clock offsets are against
    matched: dict[int, int]
    rejected: dict[int, int]
    unmatched: dict[int, int]
    clock_offset_us: dict[int, float | None]


@dataclass
class RunFindings:
    """What a pair of runs adds to the comparison of their representative ranks."""

    ranks: dict[str, list[RankRow]]                  # {a: [rank rows], b: [...]}
    rank_source: dict[str, str]                       # {a: "distributedInfo" | "file names (vLLM)" | "file order"}
    representative: Representative
    spread: dict[str, Spread]
    collectives: list[CollectiveRow]
    stragglers: dict[str, Straggler | None]
    links: dict[str, LinkPeak | None]                 # {a/b: the GPU's link peak or None}
    matched_by: str                                   # how collectives were matched across ranks
    notes: list[str]
    # {a/b: RunPairing}: what the pairing of collectives across ranks found
    pairing: dict[str, RunPairing] = field(default_factory=dict)


def pick(run: Run, wanted: int | None) -> RankSummary:
    from kerneldiff.core.errors import TraceError

    if wanted is None:
        return run.slowest()
    r = run.rank(wanted)
    if r is None:
        raise TraceError(run.arg, f"has no rank {wanted} (ranks: {', '.join(str(x.rank) for x in run.ranks)})")
    return r


def findings(a: Run, b: Run, wanted: int | None = None, peaks=None) -> RunFindings:
    from kerneldiff.core.analysis.links import link_peak

    rep = {"a": pick(a, wanted), "b": pick(b, wanted)}
    notes = []
    for key, run in (("a", a), ("b", b)):
        if run.skipped:
            shown = ", ".join(os.path.basename(f) for f in run.skipped[:5]) + (" …" if len(run.skipped) > 5 else "")
            notes.append(f"{key.upper()}: {len(run.skipped)} file(s) of the run that are not traces skipped: {shown}")
    for key, run in (("a", a), ("b", b)):
        ws = {r.world_size for r in run.ranks if r.world_size}
        if ws and max(ws) > len(run.ranks):
            notes.append(f"{key.upper()}: {len(run.ranks)} of {max(ws)} ranks' traces given: the figures are "
                         f"over these ranks only")
    for key, run in (("a", a), ("b", b)):
        backends = {str((getattr(r.info, "distributed", None) or {}).get("backend") or "") for r in run.ranks}
        if "gloo" in backends and not any(len(r.collectives) for r in run.ranks):
            # Gloo reduces on the host: the GPU sees only the copies to and from it
            notes.append(f"{key.upper()}: the process group's backend is Gloo, which runs collectives on the host: "
                         f"their GPU side is memory copies, so communication reads 0 here")
    if a.world_size != b.world_size:
        ta, tb = rep["a"].tokens, rep["b"].tokens
        per_token = (f"; per query token, the representative ranks' wall clocks are A {rep['a'].wall_us / ta:,.1f} µs "
                     f"and B {rep['b'].wall_us / tb:,.1f} µs" if ta and tb else
                     "; neither per token (the traces do not both record their tokens)")
        notes.append(f"world sizes differ (A {a.world_size}, B {b.world_size}): ranks are compared per rank, "
                     f"not summed{per_token}")
    links = {}
    rows = {}
    pairing: dict[str, RunPairing] = {}
    matched_by: list[str] = []
    strag = {}
    for key, run in (("a", a), ("b", b)):
        lp = link_peak(rep[key].info, peaks) if rep[key].info is not None else None
        links[key] = lp
        ids = [r.rank for r in run.ranks]
        matching = match([r.collectives for r in run.ranks], ids)
        inst, pr = matching.instances, matching.pairing
        if any(len(r.collectives) for r in run.ranks):
            matched_by.append(f"{key.upper()}: {matching.how}")
        pairing[key] = RunPairing(validated=len(inst), reference_rank=ids[pr.clock_reference] if ids else None,
                                  matched={ids[r]: n for r, n in sorted(pr.matched.items())},
                                  rejected={ids[r]: n for r, n in sorted(pr.rejected.items())},
                                  unmatched={ids[r]: n for r, n in sorted(pr.unmatched.items())},
                                  clock_offset_us={ids[r]: o for r, o in sorted(pr.clock_offset_us.items())})
        if len(run.ranks) > 1 and (matching.rejected or matching.unmatched):
            notes.append(f"{key.upper()}: {len(inst)} collective(s) validated across the ranks (same kind, compatible "
                         f"sizes, ends within {END_FLOOR_US:g} µs + {END_FRACTION:.0%} of the transfer); "
                         f"{matching.rejected} rank collective(s) rejected (paired by group and order but not the "
                         f"same collective), {matching.unmatched} unmatched (no partner in the other ranks' windows: "
                         f"sampled or cut traces): left out of the collective table")
        offs = {ids[r]: o for r, o in pr.clock_offset_us.items() if o is not None and abs(o) > END_FLOOR_US}
        if offs:
            notes.append(f"{key.upper()}: clocks differ (offsets from the collectives' end times, against rank "
                         f"{ids[pr.clock_reference]}): " + ", ".join(f"rank {r} {o:+,.0f} µs" for r, o in sorted(offs.items()))
                         + "; starts are compared after removing them")
        if len(run.ranks) == 1 and len(run.ranks[0].collectives):
            notes.append(f"{key.upper()}: one rank: its collectives' time holds the wait for ranks not traced, so "
                         f"transfer and wait are not told apart and bus bandwidth is a lower bound")
        clocks = bool(inst)
        rows[key] = side_rows(inst, len(run.ranks), run.world_size, lp.gbps if lp else None, clocks, pr, ids)
        strag[key] = straggler(inst, ids)
        if strag[key] is None and len(run.ranks) > 1 and any(len(r.collectives) for r in run.ranks):
            if len(inst) < MIN_VALIDATED:
                notes.append(f"{key.upper()}: straggler unknown: only {len(inst)} collective(s) validated across the "
                             f"ranks, fewer than the {MIN_VALIDATED} needed to name one")
        for note in sorted({v.bandwidth_note for v in rows[key].values() if v.bandwidth_note}):
            notes.append(f"{key.upper()}: {note}")
    how = "slowest rank (largest wall clock)" if wanted is None else f"rank {wanted} (--rank)"
    return RunFindings(
        ranks={"a": [r.row() for r in a.ranks], "b": [r.row() for r in b.ranks]},
        rank_source={"a": a.rank_source, "b": b.rank_source},
        representative=Representative(a=rep["a"].rank, b=rep["b"].rank, how=how),
        spread={"a": spread(a), "b": spread(b)},
        collectives=collective_rows(rows["a"], rows["b"]), stragglers=strag, links=links,
        matched_by="; ".join(matched_by) or "no collectives",
        notes=notes, pairing=pairing)
