"""Collectives: communication kernels, what each one moved, and how the ranks of a run met in them.

One rank (a pure reading of its model):
- a communication kernel is one whose category has role `comm` in the registry (NCCL, RCCL,
  MSCCL++, NVSHMEM, vLLM's `cross_device_reduce_*`, torch's `multimem_all_reduce`…: registry data,
  no list here);
- it is joined to its launching operator by the loader's join (correlation, then External id): for
  NCCL collectives that is `record_param_comms`, whose recorded parameters (newer PyTorch:
  `Collective name`, `Seq`, `Process Group Name`, `Group size`, `In/Out msg nelems`, `dtype`;
  analysis/comm_params.py) come first wherever they are readable;
- its kind is the recorded `Collective name`'s; else the registry rule's (`comm.all_gather` →
  all_gather); else, for a kernel only the generic NCCL rule knows (NCCL runs all-to-all and
  gathers as SendRecv kernels), the kind of the collective operator around its launch
  (`c10d::alltoall_`, `nccl:all_to_all`);
- its message is the recorded element count (the larger of in and out: the gathered output of an
  all-gather, the full input of a reduce-scatter) × the dtype's size; else the first input of its
  launching operator (`record_param_comms`, `c10d::…`, `symm_mem::…`) with record_shapes. Else
  unknown (-1). Its group is the recorded `Group size`, else the recorded group's ranks, else what
  its shapes prove (an all-gather's output over its shard), else the world only where it proves it
  (a world of 2); else unknown, and its bus bandwidth is not given (the world may hold subgroups);
- compute/communication overlap: unions of intervals on the device. Exposed communication is the
  time communication kernels run while no compute kernel does (copies and memsets are neither).

Across the ranks of a run (`match`, analysis/collective_pairs): candidates per process group and
kind, by sequence number or order, each pair validated (same kind, compatible sizes, intervals
that overlap and end together); only validated instances are read. Per instance the shortest
duration among its ranks is the transfer, the rest of each rank's duration is waiting for the last
rank to arrive; the rank that starts last is the straggler. Starts are compared on the reference
rank's clock (each rank's offset measured from the collectives' end times).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from kerneldiff.core.analysis.comm_params import comm_params
from kerneldiff.core.analysis.comm_places import places
from kerneldiff.core.analysis.timeline import merge_intervals
from kerneldiff.core.model import KIND_KERNEL, TraceModel

# bytes per element, by the dtype names record_shapes writes (Input type) and c10's
DTYPE_BYTES = {
    "float": 4, "float32": 4, "c10::float": 4, "double": 8, "float64": 8, "half": 2, "c10::half": 2,
    "float16": 2, "c10::bfloat16": 2, "bfloat16": 2, "bf16": 2, "long": 8, "long int": 8, "int64": 8,
    "int": 4, "int32": 4, "short": 2, "int16": 2, "signed char": 1, "unsigned char": 1, "char": 1,
    "int8": 1, "uint8": 1, "bool": 1, "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1,
    "c10::float8_e4m3fnuz": 1, "c10::float8_e5m2fnuz": 1,
    # c10's ScalarType names, as record_param_comms' `dtype` writes them (lower-cased)
    "byte": 1, "complexhalf": 4, "complexfloat": 8, "complexdouble": 16, "float8_e4m3fn": 1, "float8_e5m2": 1,
    "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1, "uint16": 2, "uint32": 4, "uint64": 8, "qint8": 1, "quint8": 1,
    "qint32": 4,
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

# bus bandwidth factor per kind and group size n (nccl-tests' PERFORMANCE.md, cited in links.toml):
# what each rank's link carries relative to the message under ring algorithms; nccl-tests uses it
# whatever the algorithm, so busbw compares across algorithms
BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
              "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
              "broadcast": lambda n: 1.0, "send_recv": lambda n: 1.0, "reduce": lambda n: 1.0}


# what one GPU's link carries per direction, relative to the message, where the algorithm differs
# from the ring's (links.toml): in-switch reduction (NVLS, multimem) sends the message once and
# receives the result once
IN_SWITCH = re.compile(r"^NVLS|^MULTIMEM", re.I)
LINK_FACTOR = {"all_reduce": lambda n: (n + 1) / n}


def link_factor(kind: str, n: int, algorithm: str) -> float | None:
    """The link's traffic per direction over the message: the bus factor, but for in-switch
    reduction (NVLS, multimem), whose links carry less than the ring's."""
    if IN_SWITCH.match(algorithm or "") and kind in LINK_FACTOR and n >= 1:
        return LINK_FACTOR[kind](n)
    return bus_factor(kind, n)


def group_of_world(world: int | None, group_sizes: list[int] | None = None) -> int:
    """The group size the run's metadata alone proves: a collective spans 2 ranks or more, so where
    every recorded process group of 2 or more (distributedInfo's pg_config) has one size, that is
    its group's size; in a world of 2 every group is the world. Else -1: unknown, never assumed
    (a larger world may hold subgroups)."""
    if group_sizes and len(set(group_sizes)) == 1:
        return int(group_sizes[0])
    return 2 if world == 2 and not group_sizes else -1


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


_NAME_TAILS = ("coalesced", "base", "tensor", "intotensor")


def kind_of_name(name: str) -> str | None:
    """The kind of a recorded `Collective name` ("allreduce", "_allgather_base",
    "reduce_scatter_tensor_coalesced", "all_to_all"…); None for names not known here."""
    w = name.replace("_", "").lower()
    for _ in range(3):
        if w in _KIND_WORDS:
            return _KIND_WORDS[w]
        w = next((w[:-len(t)] for t in _NAME_TAILS if w.endswith(t) and len(w) > len(t)), w)
    return _KIND_WORDS.get(w)


def message_of_params(p) -> tuple[str, int]:
    """(dtype, message bytes) from recorded parameters: the larger element count × the dtype's
    size; ("", -1) where either is missing or the dtype is unknown."""
    size = DTYPE_BYTES.get(p.dtype.lower()) if p.dtype else None
    n = max(x for x in (p.in_nelems, p.out_nelems, -1) if x is not None)
    if size is None or n < 0:
        return (p.dtype, -1)
    return p.dtype, n * size


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
    # the device's idle time just before it that the host caused: the GPU had finished all earlier
    # work and the launch came after that (or, launch unknown, the idle gap itself)
    host_wait_us: list[float] = field(default_factory=list)
    exposed_us: list[float] = field(default_factory=list)  # its time while no compute kernel ran on the device
    group: list[int] = field(default_factory=list)       # ranks in its process group (Group size), -1 unrecorded
    pg: list[str] = field(default_factory=list)          # its process group's name, "" unrecorded
    seq: list[int] = field(default_factory=list)         # its sequence number in that group, -1 unrecorded
    pg_ranks: dict[str, tuple[int, ...]] = field(default_factory=dict)  # each group's global ranks, where recorded
    # where it ran (analysis/comm_places): pass index, the pass's phase, layer, block of the layer
    step: list[int] = field(default_factory=list)        # -1 outside passes
    phase: list[str] = field(default_factory=list)       # "" unknown
    layer: list[int] = field(default_factory=list)       # -1 outside layers
    block: list[str] = field(default_factory=list)       # attention | mlp | pre-attention | "" outside layers
    stream: list[int] = field(default_factory=list)      # the device stream it ran on

    def place(self, i: int) -> str:
        """Entry i's place label ("prefill attention"; "" where nothing is known)."""
        from kerneldiff.core.analysis.comm_places import place_name

        return place_name(self.phase[i], self.block[i]) if self.phase else ""

    def __len__(self) -> int:
        return len(self.kind)


def _enclosing_kinds(model: TraceModel, rows: np.ndarray) -> list[str | None]:
    """The collective kind of the innermost operator or CPU annotation around each kernel's launch,
    on the launching thread (None where there is none or the launch is unknown)."""
    from kerneldiff.core.analysis.comm_shapes import enclosing_ops

    out: list[str | None] = [None] * len(rows)
    names = model.strings
    for i, around in enumerate(enclosing_ops(model, rows, lambda n: bool(kind_of_op(n)))):
        # operators are tried first: an annotation decides only where no operator does
        for table in ("cpu_ops", "annotations"):
            tab = model.cpu_ops if table == "cpu_ops" else model.annotations
            hit = next((r for t, r in around if t == table), None)
            if hit is not None:
                out[i] = kind_of_op(names[int(tab.name[hit])])
                break
    return out


def rank_collectives(model: TraceModel, classifier, comm: np.ndarray | None = None) -> RankCollectives:
    k = model.kernels
    comm = comm_rows(model, classifier) if comm is None else comm
    out = RankCollectives()
    if len(comm) == 0:
        return out
    # a collective's group is its recorded Group size (or ranks, or what its shapes prove); the world
    # size only where it proves it (group_of_world)
    dist = getattr(model.info, "distributed", None) or {}
    world = int(dist.get("world_size") or 1)
    implied = group_of_world(world, dist.get("group_sizes"))
    # kind and algorithm per distinct (name, rule): a run has a handful of communication kernels
    pairs: dict[tuple[int, int], tuple[str, str]] = {}
    for n, ru in set(zip(k.name[comm].tolist(), k.rule[comm].tolist())):
        rule = model.rules[ru] if ru >= 0 else ""
        kind = rule.removeprefix("comm.") if rule.startswith("comm.") and rule != "comm.generic" else ""
        m = _ALGO.search(model.strings[n])
        algo = "_".join(g.upper() for g in m.groups() if g) if m else ""
        if not algo and "multimem" in model.strings[n].lower():
            algo = "MULTIMEM"   # torch's symmetric-memory all-reduce: in-switch reduction
        pairs[(n, ru)] = (kind, algo)
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
    ops = k.cpu_op[comm]
    params = comm_params(model, ops)
    groups, pgs, seqs = [-1] * len(comm), [""] * len(comm), [-1] * len(comm)
    for i, p in enumerate(params):
        if p is None:
            continue
        kd = kind_of_name(p.name) if p.name else None
        if kd:
            kinds[i] = kd   # what the process group ran outranks what the kernel's name suggests
        # the recorded Group size, else the recorded group's ranks
        groups[i] = p.group if p.group else (len(p.ranks) if p.ranks else -1)
        pgs[i], seqs[i] = p.pg, p.seq if p.seq is not None else -1
        if p.pg and p.ranks:
            out.pg_ranks.setdefault(p.pg, p.ranks)
    dtypes, nbytes = _messages(model, comm, ops, kinds, params, groups, implied)
    groups = [g if g > 0 else implied for g in groups]
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
    out.host_wait_us = _host_wait(model, comm).tolist()
    # exposed: the kernel's span less the compute that ran during it
    out.exposed_us = np.maximum(dur - (compute_until(start + dur) - compute_until(start)), 0.0).tolist()
    out.group, out.pg, out.seq = groups, pgs, seqs
    out.step, out.phase, out.layer, out.block = places(model, classifier, comm)
    out.stream = k.stream[comm].astype(np.int64).tolist()
    return out


def _host_wait(model: TraceModel, comm: np.ndarray) -> np.ndarray:
    """Per communication kernel: the device's idle gap before it (since every kernel that began
    earlier had ended), counted when its launch came after the device went idle: the host had
    not yet issued it. Launch unknown: the gap itself."""
    k = model.kernels
    order = np.argsort(k.ts, kind="stable")
    ends = np.maximum.accumulate((k.ts + np.maximum(k.dur, 0.0))[order])
    start = k.ts[comm]
    j = np.searchsorted(k.ts[order], start, side="left")        # kernels that began strictly before
    prev_end = np.where(j > 0, ends[np.maximum(j - 1, 0)], start)
    gap = np.maximum(start - prev_end, 0.0)
    li = k.launch[comm]
    launch = np.where(li >= 0, model.launches.ts[np.maximum(li, 0)] if len(model.launches) else start, np.inf)
    return np.where(launch >= prev_end, gap, 0.0)


def _messages(model: TraceModel, comm: np.ndarray, ops: np.ndarray, kinds: list[str], params: list,
              groups: list[int], implied: int) -> tuple[list[str], list[int]]:
    """(dtype, message bytes) of each collective: its recorded element counts; else the tensors of
    its launching operator and of the collective operators and annotations around its launch
    (analysis/comm_shapes), innermost first. A group size the shapes prove (an all-gather's output
    over its shard) fills `groups` where none is recorded; `implied`: the group size the run's
    metadata proves (group_of_world), -1 unknown."""
    from kerneldiff.core.analysis.comm_shapes import enclosing_ops, message_of_tensors, tensors

    dtypes, nbytes = [""] * len(comm), [-1] * len(comm)
    ask = []
    for i, p in enumerate(params):
        if p is not None:
            dt, nb = message_of_params(p)
            if nb >= 0:
                dtypes[i], nbytes[i] = dt, nb
                continue
        ask.append(i)
    if not ask:
        return dtypes, nbytes
    around = enclosing_ops(model, comm[ask], lambda n: n == "record_param_comms" or kind_of_op(n) is not None)
    tabs = {"cpu_ops": model.cpu_ops, "annotations": model.annotations}
    memo: dict[tuple, tuple[str, int, int]] = {}
    for i, enc in zip(ask, around):
        kd, op = kinds[i], int(ops[i])
        cands = ([("cpu_ops", op)] if op >= 0 else []) + [x for x in enc if x != ("cpu_ops", op)]
        key = (kd, groups[i]) + tuple((n, int(tabs[n].name[r]), int(tabs[n].dims[r]), int(tabs[n].types[r]))
                                      for n, r in cands)
        if key not in memo:
            dt, nb, grp, shard = "", -1, -1, -1
            for n, r in cands:
                name = model.strings[int(tabs[n].name[r])]
                if name != "record_param_comms" and kind_of_op(name) not in (None, kd):
                    continue   # an operator of another collective around this one (nesting)
                t_dt, sizes = tensors(model, tabs[n], r, DTYPE_BYTES)
                m, g = message_of_tensors(name, kd, sizes)
                dt = dt or t_dt
                grp = g if grp < 0 else grp
                if nb < 0 and m > 0:
                    nb = m
                if shard < 0 and sizes and m < 0:
                    shard = sizes[0]
            g_all = groups[i] if groups[i] > 0 else grp if grp > 0 else implied
            if nb < 0 and shard > 0 and kd == "all_gather" and g_all > 0:   # the shard alone: × the group
                nb = shard * g_all
            memo[key] = (dt, nb, grp)
        dt, nb, grp = memo[key]
        dtypes[i], nbytes[i] = dt, nb
        if groups[i] <= 0 and grp > 0:
            groups[i] = grp
    return dtypes, nbytes


# --- across the ranks of a run ---------------------------------------------------------------

@dataclass
class Instance:
    """One collective as the ranks of the run that took part in it saw it."""

    kind: str
    nbytes: int
    dtype: str
    algorithm: str
    ranks: list[int]             # the ranks that took part, as indexes in the run's rank order
    starts: list[float]          # per rank of `ranks`
    durs: list[float]
    compute_before: list[float]
    group: int = -1              # ranks in its process group (recorded), -1 unrecorded
    by_seq: bool = False         # matched by process group and sequence number (else by order)
    exposed: list[float] = field(default_factory=list)   # per rank of `ranks`: its time with no compute running
    host_wait: list[float] = field(default_factory=list)  # per rank of `ranks`: device idle waiting for the launch
    place: str = ""              # phase and block of the layer ("prefill attention"), "" unknown
    layer: int = -1              # its layer (the first member's that has one), -1 outside layers

    @property
    def transfer_us(self) -> float:
        return min(self.durs)

    @property
    def skew_us(self) -> float:
        return max(self.starts) - min(self.starts)

    @property
    def last(self) -> int:
        """Index (in the run's rank order) of the rank that arrived last; -1 when several arrived
        last together (naming one would depend on the order the ranks were given in)."""
        latest = max(self.starts)
        at = [r for r, t in zip(self.ranks, self.starts) if t == latest]
        return at[0] if len(at) == 1 else -1


@dataclass
class Matching:
    """The collectives of a run matched across its ranks."""

    instances: list[Instance]
    unmatched: int               # collectives with no partner in some other member's window (sampled or cut traces)
    by_seq: int                  # validated instances paired by process group and sequence number
    by_order: int                # validated instances paired by kind and order
    by_group: int = 0            # matched by process group, kind and order within the group (no Seq recorded)
    rejected: int = 0            # collectives paired by group and order that failed validation (kind, size, ends)
    pairing: Any = None          # collective_pairs.Pairing: per rank matched/rejected/unmatched, clock offsets

    @property
    def how(self) -> str:
        ways = [(self.by_seq, "process group and sequence number"),
                (self.by_group, "process group, kind and order within the group (no sequence numbers recorded)"),
                (self.by_order, "kind and order on the stream (no process group recorded)")]
        if not any(n for n, _ in ways):
            return "none validated"
        used = [(n, text) for n, text in ways if n]
        tail = ", each pair validated (same kind, compatible sizes, ends together)"
        if len(used) == 1:
            return used[0][1] + tail
        return ", ".join(f"{text} ({n})" for n, text in used) + tail


def _instance(ranks: list[RankCollectives], members: list[int], idx: list[int], kind: str, by_seq: bool,
              shift: dict[int, float] | None = None) -> Instance:
    """One validated instance; starts less each rank's clock offset (`shift`, µs) where one is applied."""
    rs = [ranks[r] for r in members]
    shift = shift or {}
    nbytes = next((rc.nbytes[i] for rc, i in zip(rs, idx) if rc.nbytes[i] >= 0), -1)
    dtype = next((rc.dtype[i] for rc, i in zip(rs, idx) if rc.dtype[i]), "")
    group = next((rc.group[i] for rc, i in zip(rs, idx) if rc.group and rc.group[i] > 0), -1)
    algo = next((rc.algorithm[i] for rc, i in zip(rs, idx) if rc.algorithm[i]), "")
    place = next((p for p in (rc.place(i) for rc, i in zip(rs, idx)) if p), "")
    layer = next((rc.layer[i] for rc, i in zip(rs, idx) if rc.layer and rc.layer[i] >= 0), -1)
    ins = Instance(kind, nbytes, dtype, algo, list(members),
                    [rc.start_us[i] - shift.get(r, 0.0) for r, rc, i in zip(members, rs, idx)],
                    [rc.dur_us[i] for rc, i in zip(rs, idx)], [rc.compute_before_us[i] for rc, i in zip(rs, idx)],
                    group, by_seq, [rc.exposed_us[i] if rc.exposed_us else 0.0 for rc, i in zip(rs, idx)],
                    [rc.host_wait_us[i] if rc.host_wait_us else 0.0 for rc, i in zip(rs, idx)])
    ins.place, ins.layer = place, layer
    return ins


def match(ranks: list[RankCollectives], rank_ids: list[int] | None = None) -> Matching:
    """The collectives of a run matched across its ranks and validated (analysis/collective_pairs):
    candidates per (process group, kind) where the group is recorded, among the ranks of that group
    (those its recorded `Process Group Ranks` name among `rank_ids`, the ranks' global ranks; else
    the ranks whose traces hold it), else per kind among all the ranks; by sequence number where
    recorded, else by order at the best window offset. Only instances every member validated are
    kept; the rest are counted, rejected or unmatched. Starts are put on the reference rank's clock
    where a rank's clock offset exceeds what the algorithm's own end spread explains. The result
    does not depend on the order the ranks are given in, but for the rank indexes it names."""
    from kerneldiff.core.analysis.collective_pairs import (END_FLOOR_US, Pairing, clock_offsets, estimate_clock,
                                                           pair_group, seq_of)

    pairing = Pairing()
    if not ranks:
        return Matching([], 0, 0, 0, pairing=pairing)
    # entries per group key: (process group, kind) where recorded, else ("", kind)
    keyed: list[dict[tuple[str, str], list[int]]] = []
    for rc in ranks:
        d: dict[tuple[str, str], list[int]] = {}
        pg = rc.pg or [""] * len(rc)
        for i, kind in enumerate(rc.kind):
            d.setdefault((pg[i], kind), []).append(i)
        keyed.append(d)
    index = {g: r for r, g in enumerate(rank_ids)} if rank_ids is not None else {}
    groups: dict[tuple[str, str], list[int]] = {}
    for key in sorted(set().union(*[d.keys() for d in keyed])):
        members = [r for r, d in enumerate(keyed) if key in d]
        if key[0]:
            listed = next((rc.pg_ranks[key[0]] for rc in ranks if key[0] in rc.pg_ranks), None)
            if listed and index:   # a traced rank of the group that holds none of its collectives lacks them all
                members = sorted(set(members) | {index[g] for g in listed if g in index})
        else:
            members = list(range(len(ranks)))
        groups[key] = members
    # the order of reference: most collectives first, then the lowest global rank (else by content),
    # so the result does not depend on the order the ranks come in
    priority = {r: (-len(ranks[r]), rank_ids[r] if rank_ids is not None else 0, list(ranks[r].start_us),
                    list(ranks[r].dur_us)) for r in range(len(ranks))}
    reference = min(range(len(ranks)), key=lambda r: priority[r])
    # each rank's clock against the reference's, from every group both hold at once
    clocks: dict[int, float | None] = {reference: 0.0}
    for r in range(len(ranks)):
        if r != reference:
            both = [(seq_of(ranks[reference], keyed[reference][k]), seq_of(ranks[r], keyed[r][k]))
                    for k, m in groups.items() if reference in m and r in m and k in keyed[reference] and k in keyed[r]]
            clocks[r] = estimate_clock(both) if both else None
    found: list[tuple[list[int], list[int], bool]] = []
    recorded_group = 0
    for key, members in groups.items():
        got = pair_group(ranks, members, {r: keyed[r][key] for r in members if key in keyed[r]}, pairing,
                         priority, clocks)
        if key[0]:
            recorded_group += sum(1 for *_, by_seq in got if not by_seq)
        found += got
    offsets = clock_offsets(ranks, found, len(ranks), reference)
    pairing.clock_offset_us, pairing.clock_reference = offsets, reference
    shift = {r: (o if o is not None and abs(o) > END_FLOOR_US else 0.0) for r, o in offsets.items()}
    out = [_instance(ranks, members, idx, ranks[members[0]].kind[idx[0]], by_seq, shift)
           for members, idx, by_seq in found]
    out.sort(key=lambda x: (min(x.starts), x.kind, x.nbytes, x.ranks, x.place))
    by_seq = sum(1 for x in out if x.by_seq)
    unmatched = sum(pairing.unmatched.values())
    return Matching(out, unmatched, by_seq, len(out) - by_seq - recorded_group, recorded_group,
                    rejected=sum(pairing.rejected.values()), pairing=pairing)


@dataclass
class CollectiveSide:
    """One kind × size on one run."""

    count: int = 0                  # collectives (each counted once, however many ranks ran it)
    total_us: float = 0.0           # per rank: time in these kernels, the mean over ranks
    transfer_us: float = 0.0        # summed shortest duration among the ranks
    wait_us: float | None = 0.0     # total − transfer: waiting for the last rank (per rank, mean);
                                    # None with one rank (its time holds waits for ranks not traced)
    mean_us: float = 0.0            # total / count
    exposed_us: float = 0.0         # per rank: the part of total_us no compute kernel overlapped, the mean over ranks
    algbw_gbps: float | None = None     # bytes / median transfer time
    busbw_gbps: float | None = None     # algbw × the kind's bus factor for the group size
    pct_link_peak: float | None = None  # the link's traffic (busbw, but for in-switch reduction: algbw ×
                                        # (n+1)/n) against the GPU's link peak, %
    skew_p50_us: float | None = 0.0    # start times: the last rank's start − the first's (None:
    skew_max_us: float | None = 0.0    # the ranks' clocks cannot be compared)
    algorithm: str = ""
    dtype: str = ""
    ranks: int = 0                  # ranks that took part (the most among these collectives)
    group: int | None = 0           # ranks in the collective's group: the bus factor's n (recorded Group size or
                                    # ranks, or shapes; the world only where it proves it); None unknown
    bandwidth_note: str = ""        # why no bandwidth is given where the figures would pass the link's peak
    # per rank (its global rank): validated instances of this row it took part in; its own
    # collectives of this kind × size that failed validation (rejected) or found no partner in the
    # other ranks' windows (unmatched); its clock offset against the run's reference rank, µs
    matched: dict[int, int] = field(default_factory=dict)
    rejected: dict[int, int] = field(default_factory=dict)
    unmatched: dict[int, int] = field(default_factory=dict)
    clock_offset_us: dict[int, float | None] = field(default_factory=dict)
    layers: list[int] = field(default_factory=list)   # the layers its instances ran in (sorted), [] outside layers


@dataclass
class CollectiveRow:
    kind: str
    nbytes: int                     # message bytes (the first input of the launching op), -1 unknown
    a: CollectiveSide | None
    b: CollectiveSide | None
    ratio: float | None             # A / B of total_us
    gap_us: float                   # A − B of total_us
    place: str = ""                 # phase and block of the layer it ran in ("prefill attention"), "" unknown


def bus_factor(kind: str, n: int) -> float | None:
    f = BUS_FACTOR.get(kind)
    return f(n) if f is not None and n >= 1 else None


def side_rows(instances: list[Instance], ranks: int, world: int, link_gbps: float | None,
              clocks: bool = True, pairing=None, rank_ids: list[int] | None = None) -> dict[tuple[str, int], CollectiveSide]:
    """Instances grouped by kind × size × place. `ranks`: ranks in the run; `world`: the run's world
    size, a group size only where it proves one (group_of_world);
    a collective records none; `link_gbps`: the GPU's link peak (None: unknown); without `clocks`
    (the ranks' clocks disagree) skews are not given. Per instance the time is the mean over the
    ranks that took part, the wait the mean of their durations beyond the shortest."""
    groups: dict[tuple[str, int, str], list[Instance]] = {}
    for ins in instances:
        key = (ins.kind, ins.nbytes, ins.place)
        groups.setdefault(key, []).append(ins)
    out = {}
    for (kind, nbytes, place), items in groups.items():
        transfer = np.array([min(x.durs) for x in items])
        mean_dur = np.array([float(np.mean(x.durs)) for x in items])
        total = float(mean_dur.sum())
        exposed = float(sum(float(np.mean(x.exposed)) if x.exposed else 0.0 for x in items))
        took = max(len(x.ranks) for x in items)
        skew = np.array([x.skew_us for x in items])
        med = float(np.median(transfer))
        algbw = nbytes / (med * 1e3) if nbytes > 0 and med > 0 else None   # bytes/µs → GB/s: /1e3
        sizes = [x.group if x.group > 0 else group_of_world(world) for x in items]
        n = max(sorted(set(sizes)), key=sizes.count)
        f = bus_factor(kind, n) if n > 0 else None
        busbw = algbw * f if algbw is not None and f is not None else None
        algos = [x.algorithm for x in items if x.algorithm]
        algo = max(sorted(set(algos)), key=algos.count) if algos else ""
        lf = link_factor(kind, n, algo) if n > 0 else None
        link = algbw * lf if algbw is not None and lf is not None else None   # the link's own traffic
        note = ""
        if n <= 0 and algbw is not None:
            note = (f"group size unknown (no Group size, Process Group Ranks or process-group sizes recorded, no "
                    f"shapes that prove it; the world of {world} may hold smaller groups): bus bandwidth and link "
                    f"share not given")
        if link is not None and link_gbps and link > link_gbps:
            # more than the link carries: the transfer time is not the time these bytes moved (a
            # rank's kernel that began before the others arrived), or the message was misread; a
            # figure above the hardware's peak is never given
            note = (f"{kind} of {nbytes:,} bytes in {med:,.1f} µs would be {link:,.0f} GB/s on the link"
                    f"{' (' + algo + ')' if algo else ''}, above the link's {link_gbps:,.0f} GB/s: not given")
            algbw = busbw = link = None
        out[(kind, nbytes, place)] = CollectiveSide(
            count=len(items), total_us=total, transfer_us=float(transfer.sum()),
            wait_us=max(total - float(transfer.sum()), 0.0) if took > 1 else None, mean_us=total / len(items),
            exposed_us=min(exposed, total),
            algbw_gbps=algbw, busbw_gbps=busbw,
            pct_link_peak=100.0 * link / link_gbps if link is not None and link_gbps else None,
            skew_p50_us=float(np.median(skew)) if clocks and took > 1 else None,
            skew_max_us=float(skew.max()) if clocks and took > 1 else None,
            algorithm=algo, dtype=items[0].dtype, ranks=took,
            group=n if n > 0 else None, bandwidth_note=note, layers=sorted({x.layer for x in items if x.layer >= 0}))
    ids = rank_ids if rank_ids is not None else list(range(ranks))
    for key, side in out.items():
        took: dict[int, int] = {}
        for x in groups[key]:
            for r in x.ranks:
                took[ids[r]] = took.get(ids[r], 0) + 1
        side.matched = dict(sorted(took.items()))
        if pairing is not None:
            side.rejected = {ids[r]: n for r, n in sorted(pairing.rejected_by_key.get(key, {}).items())}
            side.unmatched = {ids[r]: n for r, n in sorted(pairing.unmatched_by_key.get(key, {}).items())}
            side.clock_offset_us = {ids[r]: o for r, o in sorted(pairing.clock_offset_us.items())}
    return out


def collective_rows(a: dict, b: dict) -> list[CollectiveRow]:
    rows = []
    for key in sorted(set(a) | set(b)):
        sa, sb = a.get(key), b.get(key)
        ta, tb = (sa.total_us if sa else 0.0), (sb.total_us if sb else 0.0)
        rows.append(CollectiveRow(kind=key[0], nbytes=key[1], a=sa, b=sb,
                                  ratio=ta / tb if sa and sb and tb > 0 else None, gap_us=ta - tb, place=key[2]))
    rows.sort(key=lambda r: -abs(r.gap_us))
    return rows


@dataclass
class Straggler:
    """The rank that arrived last at a run's collectives most often."""

    rank: int
    last: int                       # collectives it arrived last at
    collectives: int                # collectives matched across the ranks
    share: float                    # last / collectives
    late_us: float                  # its mean start after the median of the other ranks' starts, at those collectives
    compute_before_us: float        # its mean compute since its previous collective, at those
    others_compute_before_us: float # the other ranks' mean, at the same collectives
    per_rank_last: dict[int, int] = field(default_factory=dict)
    # why it was late, µs on average over those collectives (they add up to late_us): its host
    # launched late (the device sat idle waiting for the launch longer than the others' did), its
    # GPU computed longer since its previous collective, or the rest: it was held by earlier work
    # ending late (an earlier collective waiting on a peer, copies)
    host_late_us: float = 0.0
    compute_longer_us: float = 0.0
    peer_wait_us: float = 0.0
    causes: list[dict[str, float]] = field(default_factory=list)   # per collective it arrived last at


# ranks that start a collective within a microsecond of each other arrived together: many traces
# write whole microseconds, so a smaller skew names no one
SKEW_FLOOR_US = 1.0
# validated instances needed to name a straggler: fewer say too little about which rank is late
MIN_VALIDATED = 3


def straggler(instances: list[Instance], rank_ids: list[int]) -> Straggler | None:
    """None with fewer than two ranks (nobody to wait for), fewer than MIN_VALIDATED validated
    instances, or no collective that one rank reached more than SKEW_FLOOR_US after another.
    `collectives` counts every validated one."""
    total = len(instances)
    instances = [x for x in instances if len(x.ranks) > 1 and x.skew_us > SKEW_FLOOR_US and x.last >= 0]
    if len(rank_ids) < 2 or not instances or total < MIN_VALIDATED:
        return None
    last = np.array([x.last for x in instances])
    counts = np.bincount(last, minlength=len(rank_ids))
    # ranks last equally often: the lowest rank id, whatever order the ranks came in
    r = min(np.flatnonzero(counts == counts.max()).tolist(), key=lambda i: rank_ids[i])
    mine = [x for x in instances if x.last == r]
    at = [x.ranks.index(r) for x in mine]
    late = [x.starts[j] - float(np.median([t for q, t in enumerate(x.starts) if q != j])) for x, j in zip(mine, at)]
    own = [x.compute_before[j] for x, j in zip(mine, at)]
    others = [float(np.mean([c for q, c in enumerate(x.compute_before) if q != j])) for x, j in zip(mine, at)]
    causes = [_causes(x, j, lt) for x, j, lt in zip(mine, at, late)]
    return Straggler(rank=rank_ids[r], last=int(counts[r]), collectives=total,
                     share=float(counts[r]) / total, late_us=float(np.mean(late)),
                     compute_before_us=float(np.mean(own)), others_compute_before_us=float(np.mean(others)),
                     per_rank_last={rank_ids[i]: int(c) for i, c in enumerate(counts.tolist())},
                     host_late_us=float(np.mean([c["host_late_us"] for c in causes])),
                     compute_longer_us=float(np.mean([c["compute_longer_us"] for c in causes])),
                     peer_wait_us=float(np.mean([c["peer_wait_us"] for c in causes])), causes=causes)


def _causes(x: Instance, j: int, late: float) -> dict[str, float]:
    """One late arrival split into its causes against the other ranks' medians: the host's extra
    wait first, then the extra compute, the rest held by earlier work; each within what is left."""
    def extra(values: list[float]) -> float:
        if not values:
            return 0.0
        return values[j] - float(np.median([v for q, v in enumerate(values) if q != j]))

    left = max(late, 0.0)
    host = min(max(extra(x.host_wait), 0.0), left)
    gpu = min(max(extra(x.compute_before), 0.0), left - host)
    return {"start_us": x.starts[j], "late_us": late, "host_late_us": host, "compute_longer_us": gpu,
            "peer_wait_us": left - host - gpu}
