"""A collective's message, dtype and group from the tensors its operators recorded (record_shapes).

Where `record_param_comms` records no element counts (older PyTorch), the operators around the
kernel's launch hold the tensors: `c10d::allreduce_` and `record_param_comms` list an all-reduce's
tensors only as "TensorList", but the `nccl:all_reduce` annotation inside them records the tensor
itself; `c10d::_allgather_base_` records the gathered output and the shard (output / shard = the
group's size: HTA's all-gather of 1 GB from 16 MB shards ran in a group of 64, not the world of 128).

The message is what nccl-tests calls the size: the input of an all-reduce, broadcast, reduce or
all-to-all (a list of tensors: their sum), the gathered output of an all-gather, the full input of
a reduce-scatter.
"""

from __future__ import annotations

import json

import numpy as np

from kerneldiff.core.model import TraceModel

_LOOKBACK = 8


def _tensor_bytes(dims, dtype, dtype_bytes) -> int:
    size = dtype_bytes.get(dtype.lower()) if isinstance(dtype, str) else None
    if size is None or not isinstance(dims, list) or not dims or not all(isinstance(x, int) and x >= 0 for x in dims):
        return -1
    return int(np.prod(dims, dtype=np.int64)) * size


def tensors(model: TraceModel, tab, row: int, dtype_bytes: dict) -> tuple[str, list[int]]:
    """(dtype of the first readable tensor, bytes of each readable tensor) an operator recorded;
    ("", []) where none is readable ("TensorList", scalars, no shapes)."""
    d, t = int(tab.dims[row]), int(tab.types[row])
    if d < 0 or t < 0:
        return "", []
    try:
        dims, types = json.loads(model.strings[d]), json.loads(model.strings[t])
    except ValueError:
        return "", []
    if not isinstance(dims, list) or not isinstance(types, list):
        return "", []
    sizes, dtype = [], ""
    for x, y in zip(dims, types):
        b = _tensor_bytes(x, y, dtype_bytes)
        if b > 0:
            sizes.append(b)
            dtype = dtype or y
    return dtype, sizes


def message_of_tensors(name: str, kind: str, sizes: list[int]) -> tuple[int, int]:
    """(message bytes, group size derived from the shapes or -1) from one operator's tensors."""
    if not sizes:
        return -1, -1
    if kind in ("all_gather", "reduce_scatter"):
        if len(sizes) >= 2:       # c10d's output and input: the whole and the shard
            whole, shard = max(sizes), min(sizes)
            group = whole // shard if shard > 0 and whole % shard == 0 and whole > shard else -1
            return whole, group
        return -1, -1             # the shard alone (nccl:_all_gather_base, record_param_comms): the group decides
    if name.startswith(("nccl:", "rccl:", "gloo:")):
        return sum(sizes), -1     # the annotation lists the collective's own tensors
    return sizes[0], -1


def enclosing_ops(model: TraceModel, rows: np.ndarray, wanted) -> list[list[tuple[str, int]]]:
    """For each kernel row: the operators and CPU annotations around its launch on the launching
    thread whose names `wanted(name)` accepts, innermost first, as (table, row) with table
    "cpu_ops" or "annotations"."""
    k, L = model.kernels, model.launches
    out: list[list[tuple[float, str, int]]] = [[] for _ in range(len(rows))]
    li = k.launch[rows]
    has = np.flatnonzero(li >= 0)
    if len(has) == 0:
        return [[] for _ in rows]
    t, tid = L.ts[li[has]], L.tid[li[has]]
    for name, tab in (("cpu_ops", model.cpu_ops), ("annotations", model.annotations)):
        if len(tab) == 0:
            continue
        mask = np.ones(len(tab), bool) if name == "cpu_ops" else tab.gpu == 0
        names = np.unique(tab.name[mask])
        ok = np.asarray([int(n) for n in names.tolist() if wanted(model.strings[int(n)])], dtype=np.int64)
        keep = np.flatnonzero(mask & np.isin(tab.name, ok)) if len(ok) else np.zeros(0, np.int64)
        for th in np.unique(tab.tid[keep]).tolist():
            ops = keep[tab.tid[keep] == th]
            ops = ops[np.argsort(tab.ts[ops], kind="stable")]
            starts, ends = tab.ts[ops], tab.ts[ops] + tab.dur[ops]
            mine = np.flatnonzero(tid == th)
            j = np.searchsorted(starts, t[mine], side="right") - 1
            for back in range(_LOOKBACK):
                q = j - back
                hit = (q >= 0) & (ends[np.maximum(q, 0)] >= t[mine])
                for m, qq in zip(mine[hit].tolist(), q[hit].tolist()):
                    out[has[m]].append((float(starts[qq]), name, int(ops[qq])))
    return [[(n, r) for _, n, r in sorted(x, key=lambda v: -v[0])] for x in out]
