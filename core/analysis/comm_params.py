"""A collective's parameters as its `record_param_comms` operator recorded them (newer PyTorch):
`Collective name`, `Seq`, `Process Group Name`, `Group size`, `In msg nelems`, `Out msg nelems`,
`dtype`, `Process Group Ranks`. The loader keeps them per cpu op as one compact JSON text (`cpu_ops.comm`, written by
`ingest.decode.comm_text`, which already dropped unreadable values); this reads it back.
Older traces (HTA's, a100_control, v100_test) record none of them: every field is then absent."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from kerneldiff.core.model import TraceModel


@dataclass(frozen=True)
class CommParams:
    name: str = ""                  # the collective as the process group calls it ("allreduce", "_allgather_base")
    seq: int | None = None          # its sequence number in its process group
    pg: str = ""                    # the process group's name ("0", "3"; the same on every rank of the group)
    group: int | None = None        # ranks in the process group
    in_nelems: int | None = None    # elements in, elements out (per rank)
    out_nelems: int | None = None
    dtype: str = ""                 # c10's name ("BFloat16", "Float")
    ranks: tuple[int, ...] = ()     # the process group's global ranks (empty: not recorded)


def _parse(text: str) -> CommParams | None:
    try:
        d = json.loads(text)
    except ValueError:
        return None
    if not isinstance(d, dict):
        return None

    def count(k: str) -> int | None:
        v = d.get(k)
        return v if type(v) is int and v >= 0 else None

    def name(k: str) -> str:
        v = d.get(k)
        return v if isinstance(v, str) else ""

    ranks = d.get("ranks")
    ranks = tuple(ranks) if isinstance(ranks, list) and all(type(x) is int for x in ranks) else ()
    return CommParams(name=name("name"), seq=count("seq"), pg=name("pg"), group=count("group"),
                      in_nelems=count("in"), out_nelems=count("out"), dtype=name("dtype"), ranks=ranks)


def comm_params(model: TraceModel, ops: np.ndarray) -> list[CommParams | None]:
    """The parameters recorded on each of the cpu-op rows `ops` (None: none recorded, or row -1);
    each distinct text parsed once."""
    ops = np.asarray(ops, np.int64)
    col = model.cpu_ops.comm
    ids = np.where(ops >= 0, col[np.maximum(ops, 0)] if len(col) else -1, -1)
    parsed = {int(i): _parse(model.strings[int(i)]) for i in np.unique(ids[ids >= 0]).tolist()}
    return [parsed.get(int(i)) for i in ids.tolist()]
