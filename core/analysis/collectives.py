"""Collectives: communication kernels, what each one moved, and how the ranks of a run met in them.

One rank (a pure reading of its model):
- a communication kernel is one whose category has role `comm` in the registry (NCCL, RCCL,
  MSCCL++, NVSHMEM, vLLM's `cross_device_reduce_*`, torch's `multimem_all_reduce`…: registry data,
  no list here);
- its kind is the registry rule's (`comm.all_gather` → all_gather); a kernel only the generic NCCL
  rule knows (NCCL runs all-to-all and gathers as SendRecv kernels) takes the kind of the
  collective operator around its launch (`c10d::alltoall_`, `nccl:all_to_all`);
- its message is the first input of its launching operator (`record_param_comms`, `c10d::…`,
  `symm_mem::…`) with record_shapes: elements × the dtype's size. Unrecorded: unknown (-1);
- compute/communication overlap: unions of intervals on the device. Exposed communication is the
  time communication kernels run while no compute kernel does (copies and memsets are neither).

Across the ranks of a run: the i-th collective of a kind on one rank is the i-th of that kind on
every other (collectives are issued in the same order on every rank of a group; the process group
and sequence number of `record_param_comms` are not read by the loader yet). Per instance the
shortest duration among the ranks is the transfer, the rest of each rank's duration is waiting for
the last rank to arrive; the rank that starts last is the straggler. Start times are compared on
the ranks' own clocks (one host's clock for the ranks of one node).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from kerneldiff.core.analysis.timeline import merge_intervals
from kerneldiff.core.model import KIND_KERNEL, TraceModel

# bytes per element, by the dtype names record_shapes writes (Input type) and c10's
DTYPE_BYTES = {
    "float": 4, "float32": 4, "c10::float": 4, "double": 8, "float64": 8, "half": 2, "c10::half": 2,
    "float16": 2, "c10::bfloat16": 2, "bfloat16": 2, "bf16": 2, "long": 8, "long int": 8, "int64": 8,
    "int": 4, "int32": 4, "short": 2, "int16": 2, "signed char": 1, "unsigned char": 1, "char": 1,
    "int8": 1, "uint8": 1, "bool": 1, "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1,
    "c10::float8_e4m3fnuz": 1, "c10::float8_e5m2fnuz": 1,
}

# collective operators around a launch (c10d ops, `nccl:` annotations, record_param_comms' names)
_OP_KIND = re.compile(r"^(?:c10d::|nccl:|gloo:|rccl:)_?(\w+?)_?(?:base_?)?_?$", re.I)
_KIND_WORDS = {"allreduce": "all_reduce", "allreducecoalesced": "all_reduce", "allgather": "all_gather",
               "allgatherintotensor": "all_gather", "allgathercoalesced": "all_gather",
               "reducescatter": "reduce_scatter", "reducescattertensor": "reduce_scatter",
               "alltoall": "all_to_all", "alltoallv": "all_to_all", "broadcast": "broadcast",
               "send": "send_recv", "recv": "send_recv", "recvanysource": "send_recv", "barrier": "barrier",
               "reduce": "reduce", "gather": "gather", "scatter": "scatter"}
# NCCL kernel names carry the algorithm and protocol: ncclDevKernel_AllReduce_Sum_bf16_RING_LL
_ALGO = re.compile(r"_(RING|TREE|COLLNET\w*|NVLS\w*|PAT)(?:_(LL128|LL|SIMPLE))?", re.I)

# bus bandwidth factor per kind and group size n (nccl-tests' PERFORMANCE.md): what each rank's
# link carries relative to the message
BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
              "broadcast": lambda n: 1.0, "send_recv": lambda n: 1.0, "reduce": lambda n: 1.0}


def comm_rows(model: TraceModel, classifier) -> np.ndarray:
    """Rows of the model's communication kernels (registry role `comm`), in time order."""
    k = model.kernels
    if len(k) == 0:
        return np.zeros(0, np.int64)
    is_comm = np.array([classifier.role(c) == "comm" for c in model.categories] + [False], dtype=bool)
    return np.flatnonzero(is_comm[np.where(k.cat >= 0, k.cat, len(model.categories))] & (k.kind == KIND_KERNEL))


def kind_of_op(name: str) -> str | None:
    m = _OP_KIND.match(name.strip())
    if not m:
        return None
    return _KIND_WORDS.get(m.group(1).replace("_", "").lower())


def _length(s: np.ndarray, e: np.ndarray) -> float:
    us, ue = merge_intervals(s, e)
    return float((ue - us).sum())


@dataclass
class Overlap:
    """Compute against communication on one device, µs (unions of intervals)."""

    compute_us: float = 0.0
    comm_us: float = 0.0
    exposed_comm_us: float = 0.0     # communication while no compute kernel runs

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def overlap(model: TraceModel, classifier, comm: np.ndarray | None = None) -> Overlap:
    k = model.kernels
    comm = comm_rows(model, classifier) if comm is None else comm
    is_comm = np.zeros(len(k), dtype=bool)
    is_comm[comm] = True
    compute = np.flatnonzero((k.kind == KIND_KERNEL) & ~is_comm)
    ends = k.ts + np.maximum(k.dur, 0.0)
    both = np.concatenate([compute, comm])
    c_len, m_len = _length(k.ts[compute], ends[compute]), _length(k.ts[comm], ends[comm])
    all_len = _length(k.ts[both], ends[both])
    return Overlap(compute_us=c_len, comm_us=m_len, exposed_comm_us=max(all_len - c_len, 0.0))


@dataclass
class RankCollectives:
    """The collectives of one rank, one entry per communication kernel, in time order."""

    kind: list[str] = field(default_factory=list)
    algorithm: list[str] = field(default_factory=list)   # "RING_LL", "" when the name does not say
    dtype: list[str] = field(default_factory=list)       # "" when unrecorded
    nbytes: list[int] = field(default_factory=list)      # message bytes, -1 when unrecorded
    start_us: list[float] = field(default_factory=list)  # the rank's trace clock
    dur_us: list[float] = field(default_factory=list)
    compute_before_us: list[float] = field(default_factory=list)  # compute since the previous collective ended

    def __len__(self) -> int:
        return len(self.kind)


def _tensor_bytes(dims, dtype) -> int:
    size = DTYPE_BYTES.get(dtype.lower()) if isinstance(dtype, str) else None
    if size is None or not isinstance(dims, list) or not dims or not all(isinstance(x, int) and x >= 0 for x in dims):
        return -1
    return int(np.prod(dims, dtype=np.int64)) * size


def message(model: TraceModel, op: int, kind: str, group: int) -> tuple[str, int]:
    """(dtype, message bytes) of a collective from its launching operator's recorded inputs; ("", -1)
    when not recorded. The message is what nccl-tests calls the size: the input of an all-reduce,
    broadcast or all-to-all, the gathered output of an all-gather, the full input of a
    reduce-scatter. `record_param_comms` records an all-gather's input shard (× the group); the
    c10d operators list the output first."""
    import json

    c = model.cpu_ops
    d, t = int(c.dims[op]), int(c.types[op])
    if d < 0 or t < 0:
        return "", -1
    try:
        dims, types = json.loads(model.strings[d]), json.loads(model.strings[t])
    except ValueError:
        return "", -1
    if not isinstance(dims, list) or not isinstance(types, list) or not dims or not types:
        return "", -1
    dtype = types[0] if isinstance(types[0], str) else ""
    sizes = [_tensor_bytes(x, y) for x, y in zip(dims, types)]
    first = sizes[0]
    if kind == "all_gather" and first > 0:
        tensors = [x for x in sizes if x > 0]
        if model.strings[int(c.name[op])] == "record_param_comms" or len(tensors) < 2:
            return dtype, first * max(group, 1)
        return dtype, max(tensors)
    return dtype, first


_LOOKBACK = 8   # collective ops nest a level or two (c10d::allreduce_ > record_param_comms): a few back suffice


def _enclosing_kinds(model: TraceModel, rows: np.ndarray) -> list[str | None]:
    """The collective kind of the innermost operator or CPU annotation around each kernel's launch,
    on the launching thread (None where there is none or the launch is unknown). Vectorised per
    thread: sorted starts, then a few steps back from the last one before the launch."""
    k, L = model.kernels, model.launches
    out: list[str | None] = [None] * len(rows)
    li = k.launch[rows]
    has = np.flatnonzero(li >= 0)
    if len(has) == 0:
        return out
    t, tid = L.ts[li[has]], L.tid[li[has]]
    for tab, gpu_side in ((model.cpu_ops, None), (model.annotations, True)):
        if len(tab) == 0:
            continue
        mask = np.ones(len(tab), bool) if gpu_side is None else tab.gpu == 0
        names = np.unique(tab.name[mask])
        kinds = {int(n): kind_of_op(model.strings[int(n)]) for n in names.tolist()}
        wanted = np.asarray([n for n, v in kinds.items() if v], dtype=np.int64)
        keep = np.flatnonzero(mask & np.isin(tab.name, wanted)) if len(wanted) else np.zeros(0, np.int64)
        for th in np.unique(tab.tid[keep]).tolist():
            ops = keep[tab.tid[keep] == th]
            ops = ops[np.argsort(tab.ts[ops], kind="stable")]
            starts, ends = tab.ts[ops], tab.ts[ops] + tab.dur[ops]
            mine = np.flatnonzero(tid == th)
            j = np.searchsorted(starts, t[mine], side="right") - 1
            for back in range(_LOOKBACK):
                q = j - back
                ok = q >= 0
                hit = ok & (ends[np.maximum(q, 0)] >= t[mine])
                for m, qq in zip(mine[hit].tolist(), q[hit].tolist()):
                    if out[has[m]] is None:
                        out[has[m]] = kinds[int(tab.name[ops[qq]])]
    return out   # operators were tried first: an annotation decides only where no operator does


def rank_collectives(model: TraceModel, classifier, comm: np.ndarray | None = None) -> RankCollectives:
    k = model.kernels
    comm = comm_rows(model, classifier) if comm is None else comm
    out = RankCollectives()
    if len(comm) == 0:
        return out
    # the group of a collective is not read yet (record_param_comms' Group size): the world
    group = int((getattr(model.info, "distributed", None) or {}).get("world_size") or 1)
    # kind and algorithm per distinct (name, rule): a run has a handful of communication kernels
    pairs: dict[tuple[int, int], tuple[str, str]] = {}
    for n, ru in set(zip(k.name[comm].tolist(), k.rule[comm].tolist())):
        rule = model.rules[ru] if ru >= 0 else ""
        kind = rule.removeprefix("comm.") if rule.startswith("comm.") and rule != "comm.generic" else ""
        m = _ALGO.search(model.strings[n])
        pairs[(n, ru)] = (kind, "_".join(g.upper() for g in m.groups() if g) if m else "")
    kinds = [pairs[(n, ru)][0] for n, ru in zip(k.name[comm].tolist(), k.rule[comm].tolist())]
    algos = [pairs[(n, ru)][1] for n, ru in zip(k.name[comm].tolist(), k.rule[comm].tolist())]
    # NCCL runs all-to-all and gathers as SendRecv kernels: the operator around the launch says which
    ask = [i for i, kd in enumerate(kinds) if kd in ("", "send_recv")]
    for i, found in zip(ask, _enclosing_kinds(model, comm[ask]) if ask else []):
        if found:
            kinds[i] = found
    for i, kd in enumerate(kinds):
        if not kd:
            kinds[i] = {"All-Reduce": "all_reduce", "All-Gather": "all_gather",
                        "Reduce-Scatter": "reduce_scatter"}.get(model.category(int(comm[i])), "other")
    # message per distinct (operator, shapes, kind)
    ops = k.cpu_op[comm]
    msgs: dict[tuple[int, int, int, int, str], tuple[str, int]] = {}
    dtypes, nbytes = [], []
    c = model.cpu_ops
    for op, kd in zip(ops.tolist(), kinds):
        if op < 0:
            dtypes.append("")
            nbytes.append(-1)
            continue
        key = (int(c.name[op]), int(c.dims[op]), int(c.types[op]), 0, kd)
        if key not in msgs:
            msgs[key] = message(model, op, kd, group)
        dt, nb = msgs[key]
        dtypes.append(dt)
        nbytes.append(nb)
    # compute between collectives: the union of compute kernels up to each start
    is_comm = np.zeros(len(k), bool)
    is_comm[comm] = True
    compute = np.flatnonzero((k.kind == KIND_KERNEL) & ~is_comm)
    cs, ce = merge_intervals(k.ts[compute], k.ts[compute] + np.maximum(k.dur[compute], 0.0))
    cum = np.concatenate([[0.0], np.cumsum(ce - cs)])

    def compute_until(t: np.ndarray) -> np.ndarray:
        j = np.searchsorted(cs, t, side="right")            # compute intervals starting before t
        done = cum[j]
        inside = (j > 0) & (ce[np.maximum(j - 1, 0)] > t) if len(ce) else np.zeros(len(t), bool)
        done[inside] -= ce[j[inside] - 1] - t[inside]
        return done

    start = k.ts[comm].astype(float)
    dur = np.maximum(k.dur[comm], 0.0)
    prev_end = np.empty(len(comm))
    prev_end[0] = -np.inf            # the first collective: compute since the trace began
    prev_end[1:] = np.maximum.accumulate(start + dur)[:-1]
    before = np.maximum(compute_until(start) - np.where(np.isfinite(prev_end), compute_until(
        np.where(np.isfinite(prev_end), prev_end, 0.0)), 0.0), 0.0)
    out.kind, out.algorithm, out.dtype, out.nbytes = kinds, algos, dtypes, nbytes
    out.start_us, out.dur_us, out.compute_before_us = start.tolist(), dur.tolist(), before.tolist()
    return out


# --- across the ranks of a run ---------------------------------------------------------------

@dataclass
class Instance:
    """One collective as every rank of the run saw it."""

    kind: str
    nbytes: int
    dtype: str
    algorithm: str
    starts: list[float]          # per rank, in the run's rank order
    durs: list[float]
    compute_before: list[float]

    @property
    def transfer_us(self) -> float:
        return min(self.durs)

    @property
    def skew_us(self) -> float:
        return max(self.starts) - min(self.starts)

    @property
    def last(self) -> int:
        """Index (in the run's rank order) of the rank that arrived last."""
        return int(np.argmax(self.starts))


def match(ranks: list[RankCollectives]) -> tuple[list[Instance], int]:
    """The collectives every rank took part in, matched by kind and order; and how many collectives
    some rank ran that others did not (counts differ: sampled or cut traces)."""
    if not ranks:
        return [], 0
    per_kind: list[dict[str, list[int]]] = []
    for rc in ranks:
        d: dict[str, list[int]] = {}
        for i, kd in enumerate(rc.kind):
            d.setdefault(kd, []).append(i)
        per_kind.append(d)
    kinds = sorted(set().union(*[d.keys() for d in per_kind]))
    out: list[Instance] = []
    unmatched = 0
    for kd in kinds:
        lists = [d.get(kd, []) for d in per_kind]
        n = min(len(x) for x in lists)
        unmatched += sum(len(x) - n for x in lists)
        for j in range(n):
            idx = [x[j] for x in lists]
            first = ranks[0]
            i0 = idx[0]
            nbytes = next((ranks[r].nbytes[i] for r, i in enumerate(idx) if ranks[r].nbytes[i] >= 0), -1)
            dtype = next((ranks[r].dtype[i] for r, i in enumerate(idx) if ranks[r].dtype[i]), "")
            out.append(Instance(kd, nbytes, dtype, first.algorithm[i0],
                                [ranks[r].start_us[i] for r, i in enumerate(idx)],
                                [ranks[r].dur_us[i] for r, i in enumerate(idx)],
                                [ranks[r].compute_before_us[i] for r, i in enumerate(idx)]))
    out.sort(key=lambda x: min(x.starts))
    return out, unmatched


def shared_clock(ranks: list[RankCollectives]) -> bool:
    """Whether the ranks' start times can be compared: their collectives overlap in time (ranks
    traced on hosts whose clocks disagree, or traces of different runs, do not)."""
    spans = [(min(r.start_us), max(s + d for s, d in zip(r.start_us, r.dur_us))) for r in ranks if len(r)]
    return len(spans) < 2 or max(s for s, _ in spans) < min(e for _, e in spans)


@dataclass
class CollectiveSide:
    """One kind × size on one run."""

    count: int = 0                  # collectives (each counted once, however many ranks ran it)
    total_us: float = 0.0           # per rank: time in these kernels, the mean over ranks
    transfer_us: float = 0.0        # summed shortest duration among the ranks
    wait_us: float | None = 0.0     # total − transfer: waiting for the last rank (per rank, mean);
                                    # None with one rank (its time holds waits for ranks not traced)
    mean_us: float = 0.0            # total / count
    algbw_gbps: float | None = None     # bytes / median transfer time
    busbw_gbps: float | None = None     # algbw × the kind's bus factor for the group size
    pct_link_peak: float | None = None  # busbw against the GPU's link peak, %
    skew_p50_us: float | None = 0.0    # start times: the last rank's start − the first's (None:
    skew_max_us: float | None = 0.0    # the ranks' clocks cannot be compared)
    algorithm: str = ""
    dtype: str = ""
    ranks: int = 0


@dataclass
class CollectiveRow:
    kind: str
    nbytes: int                     # message bytes (the first input of the launching op), -1 unknown
    a: CollectiveSide | None
    b: CollectiveSide | None
    ratio: float | None             # A / B of total_us
    gap_us: float                   # A − B of total_us


def bus_factor(kind: str, n: int) -> float | None:
    f = BUS_FACTOR.get(kind)
    return f(n) if f is not None and n >= 1 else None


def side_rows(instances: list[Instance], ranks: int, group: int, link_gbps: float | None,
              clocks: bool = True) -> dict[tuple[str, int], CollectiveSide]:
    """Instances grouped by kind × size. `group`: ranks in the collective's group (the world size
    when nothing else is recorded); `link_gbps`: the GPU's link peak (None: unknown); without
    `clocks` (the ranks' clocks disagree) skews are not given."""
    groups: dict[tuple[str, int], list[Instance]] = {}
    for ins in instances:
        key = (ins.kind, ins.nbytes)
        groups.setdefault(key, []).append(ins)
    out = {}
    for (kind, nbytes), items in groups.items():
        durs = np.array([x.durs for x in items])          # instances × ranks
        transfer = durs.min(axis=1)
        total = float(durs.sum(axis=0).mean())
        skew = np.array([x.skew_us for x in items])
        med = float(np.median(transfer))
        algbw = nbytes / (med * 1e3) if nbytes > 0 and med > 0 else None   # bytes/µs → GB/s: /1e3
        f = bus_factor(kind, group)
        busbw = algbw * f if algbw is not None and f is not None else None
        algos = [x.algorithm for x in items if x.algorithm]
        out[(kind, nbytes)] = CollectiveSide(
            count=len(items), total_us=total, transfer_us=float(transfer.sum()),
            wait_us=max(total - float(transfer.sum()), 0.0) if ranks > 1 else None, mean_us=total / len(items),
            algbw_gbps=algbw, busbw_gbps=busbw,
            pct_link_peak=100.0 * busbw / link_gbps if busbw is not None and link_gbps else None,
            skew_p50_us=float(np.median(skew)) if clocks and ranks > 1 else None,
            skew_max_us=float(skew.max()) if clocks and ranks > 1 else None,
            algorithm=max(set(algos), key=algos.count) if algos else "", dtype=items[0].dtype, ranks=ranks)
    return out


def collective_rows(a: dict, b: dict) -> list[CollectiveRow]:
    rows = []
    for key in sorted(set(a) | set(b)):
        sa, sb = a.get(key), b.get(key)
        ta, tb = (sa.total_us if sa else 0.0), (sb.total_us if sb else 0.0)
        rows.append(CollectiveRow(kind=key[0], nbytes=key[1], a=sa, b=sb,
                                  ratio=ta / tb if sa and sb and tb > 0 else None, gap_us=ta - tb))
    rows.sort(key=lambda r: -abs(r.gap_us))
    return rows


@dataclass
class Straggler:
    """The rank that arrived last at a run's collectives most often."""

    rank: int
    last: int                       # collectives it arrived last at
    collectives: int                # collectives matched across the ranks
    share: float                    # last / collectives
    late_us: float                  # its mean start after the median rank's, at those collectives
    compute_before_us: float        # its mean compute since its previous collective, at those
    others_compute_before_us: float # the other ranks' mean, at the same collectives
    per_rank_last: dict[int, int] = field(default_factory=dict)


# ranks that start a collective within a microsecond of each other arrived together: many traces
# write whole microseconds, so a smaller skew names no one
SKEW_FLOOR_US = 1.0


def straggler(instances: list[Instance], rank_ids: list[int]) -> Straggler | None:
    """None with fewer than two ranks (nobody to wait for) or no collective that one rank reached
    more than SKEW_FLOOR_US after another. `collectives` counts every matched one."""
    total = len(instances)
    instances = [x for x in instances if x.skew_us > SKEW_FLOOR_US]
    if len(rank_ids) < 2 or not instances:
        return None
    last = np.array([x.last for x in instances])
    counts = np.bincount(last, minlength=len(rank_ids))
    r = int(np.argmax(counts))
    mine = [x for x in instances if x.last == r]
    late = [x.starts[r] - float(np.median(x.starts)) for x in mine]
    own = [x.compute_before[r] for x in mine]
    others = [float(np.mean([c for j, c in enumerate(x.compute_before) if j != r])) for x in mine]
    return Straggler(rank=rank_ids[r], last=int(counts[r]), collectives=total,
                     share=float(counts[r]) / total, late_us=float(np.mean(late)),
                     compute_before_us=float(np.mean(own)), others_compute_before_us=float(np.mean(others)),
                     per_rank_last={rank_ids[i]: int(c) for i, c in enumerate(counts.tolist())})
