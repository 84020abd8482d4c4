"""One rank trace → its compact rank summary: a pure function of one file (and the classifier's
rules), small enough to send between processes, so the ranks of a run load in parallel and a run
too large for one machine could be spread over several."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

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
    collectives: RankCollectives = field(default_factory=RankCollectives)
    info: Any = None                # the probe's TraceInfo (GPU match for the link peak)

    def row(self) -> dict[str, Any]:
        """The per-rank table's entry (JSON `ranks`)."""
        d = {k: v for k, v in asdict(self).items() if k not in ("collectives", "info")}
        d["collectives"] = len(self.collectives)
        return d


def summarize_model(rank: int, model, classifier) -> RankSummary:
    from kerneldiff.core.analysis.collectives import comm_rows, overlap, rank_collectives
    from kerneldiff.core.analysis.timeline import timeline

    whole = timeline(model).whole
    comm = comm_rows(model, classifier)
    ov = overlap(model, classifier, comm)
    info = model.info
    dist = getattr(info, "distributed", {}) or {}
    toks = [s.tokens for s in model.steps]
    return RankSummary(
        rank=rank, file=model.path, wall_us=whole.span_us, busy_us=whole.busy_us, compute_us=ov.compute_us,
        comm_us=ov.comm_us, exposed_comm_us=ov.exposed_comm_us, idle_us=whole.idle_us,
        kernels=int(len(model.kernels)), gpu_time_us=model.gpu_time_us, gpu=model.label, device=model.device,
        world_size=dist.get("world_size"), backend=str(dist.get("backend", "") or ""),
        tokens=sum(toks) if toks and all(t is not None for t in toks) else None, passes=len(model.steps),
        collectives=rank_collectives(model, classifier, comm), info=info)


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
    from kerneldiff.core.session import Session

    s = Session([path], registry=registry, use_cache=use_cache, workers=1, device=device)
    s._classifier = classifier_for(registry)
    model = s.load(0)
    return summarize_model(rank, model, s.classifier)
