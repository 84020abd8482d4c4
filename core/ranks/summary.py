"""One rank trace → its compact rank summary: a pure function of one file (and the classifier's
rules), small enough to send between processes, so the ranks of a run load in parallel and a run
too large for one machine could be spread over several."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any

import numpy as np

from kerneldiff.core.analysis.collectives import RankCollectives


@dataclass
class RankSummary:
    rank: int
    file: str
    wall_us: float = 0.0            # first GPU activity's start to the last one's end
    busy_us: float = 0.0            # union of all GPU activity
    compute_us: float = 0.0         # union of compute kernels (not communication, copies, memsets)
    comm_us: float = 0.0            # union of communication kernels
    exposed_comm_us: float = 0.0    # communication while no compute kernel ran on the device
    idle_us: float = 0.0            # wall − busy
    kernels: int = 0
    gpu_time_us: float = 0.0
    gpu: str = ""
    device: int | None = None       # the device read, when the file holds several
    world_size: int | None = None
    backend: str = ""
    tokens: int | None = None       # query tokens over the passes, where the trace records them
    passes: int = 0
    # compute (union of compute kernels) in each pass of the compared work, and the pass's phase:
    # the repeats the gate reads the ranks' spread and its noise from (kerneldiff.core.gate.runs)
    pass_compute_us: list[float] = field(default_factory=list)
    pass_phases: list[str] = field(default_factory=list)
    collectives: RankCollectives = field(default_factory=RankCollectives)
    info: Any = None                # the probe's TraceInfo (GPU match for the link peak)

    def row(self) -> RankRow:
        """The per-rank table's entry (JSON `ranks`)."""
        return RankRow(**{f.name: getattr(self, f.name) for f in fields(RankRow) if f.name != "collectives"},
                       collectives=len(self.collectives))


@dataclass(frozen=True)
class RankRow:
    """One rank of a run as the reports show it (`RankSummary.row`): its JSON is these fields, in order."""

    rank: int
    file: str
    wall_us: float
    busy_us: float
    compute_us: float
    comm_us: float
    exposed_comm_us: float
    idle_us: float
    kernels: int
    gpu_time_us: float
    gpu: str
    device: int | None
    world_size: int | None
    backend: str
    tokens: int | None
    passes: int
    collectives: int               # the rank's collectives (RankSummary.collectives' count)


def summarize_model(rank: int, model, classifier) -> RankSummary:
    from kerneldiff.core.analysis.collectives import comm_rows, overlap, rank_collectives
    from kerneldiff.core.analysis.timeline import timeline

    whole = timeline(model).whole
    comm = comm_rows(model, classifier)
    ov = overlap(model, classifier, comm)
    info = model.info
    dist = getattr(info, "distributed", {}) or {}
    toks = [s.tokens for s in model.steps]
    per_pass = pass_compute(model, comm)
    return RankSummary(
        rank=rank, file=model.path, wall_us=whole.span_us, busy_us=whole.busy_us, compute_us=ov.compute_us,
        comm_us=ov.comm_us, exposed_comm_us=ov.exposed_comm_us, idle_us=whole.idle_us,
        kernels=int(len(model.kernels)), gpu_time_us=model.gpu_time_us, gpu=model.label, device=model.device,
        world_size=dist.get("world_size"), backend=str(dist.get("backend", "") or ""),
        tokens=sum(toks) if toks and all(t is not None for t in toks) else None, passes=len(model.steps),
        pass_compute_us=per_pass, pass_phases=[st.phase for st in model.steps],
        collectives=rank_collectives(model, classifier, comm), info=info)


def pass_compute(model, comm) -> list[float]:
    """Each pass's compute: the union of its compute kernels (kernels that are not communication, as
    `collectives.overlap` counts them) among the work a comparison counts."""
    from kerneldiff.core.analysis.cut_work import compared_mask
    from kerneldiff.core.analysis.timeline import merge_intervals
    from kerneldiff.core.model import KIND_KERNEL

    k = model.kernels
    n = len(model.steps)
    if n == 0 or len(k) == 0:
        return [0.0] * n
    sel = (k.kind == KIND_KERNEL) & compared_mask(model, "all") & (k.step >= 0)
    sel[comm] = False
    rows = np.flatnonzero(sel)
    step = k.step[rows].astype(np.int64)
    out = [0.0] * n
    order = np.argsort(step, kind="stable")
    rows, step = rows[order], step[order]
    cuts = np.flatnonzero(np.diff(step)) + 1
    for grp, st in zip(np.split(rows, cuts), np.split(step, cuts)):
        if len(grp):
            s, e = merge_intervals(k.ts[grp], k.ts[grp] + np.maximum(k.dur[grp], 0.0))
            out[int(st[0])] = float((e - s).sum())
    return out


@cache
def classifier_for(registry: str | None):
    """One classifier per process and registry, shared by the ranks it summarises (loading the rules
    costs ~0.13 s; a forked process inherits the parent's)."""
    from kerneldiff.core.analysis.classify import Classifier

    return Classifier.load(registry)


def summarize_rank(rank: int, path: str, registry: str | None = None, use_cache: bool = True,
                   device: int | None = None) -> RankSummary:
    """Load one rank's file (the cache serves it when it can) and reduce it to its summary; the
    model is dropped here, so a process holds one rank's model at a time."""
    from kerneldiff.core.trace_session import Session

    s = Session([path], registry=registry, use_cache=use_cache, workers=1, device=device)
    s._classifier = classifier_for(registry)
    model = s.load(0)
    return summarize_model(rank, model, s.classifier)


def summary_or_error(args):
    """A rank's summary, or (path, problem) of its TraceError: the error's own pickling does not
    round-trip, and a result that cannot be read back would break the whole pool."""
    from kerneldiff.core.errors import TraceError

    rank, path, registry, use_cache, device = args
    try:
        return summarize_rank(rank, path, registry, use_cache, device)
    except TraceError as e:
        return (e.path, e.problem)
    except MemoryError:
        return (path, "out of memory while loading this rank")
