"""The compact, columnar model of one loaded trace.

Every per-event table is a set of numpy columns of equal length; names are int ids into one
`StringTable`. Nothing here holds a Python object per event, so a 2 GB trace costs a few
hundred MB and can be cached to disk as raw arrays.

Kernel rows are sorted by (device, stream-independent) start time. "Kernel" here means any GPU
activity that takes GPU time: kernels, memcpy and memset (their `kind` column tells which).
"""

from __future__ import annotations

from dataclasses import field
from operator import attrgetter
from typing import Any

import numpy as np

from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use: a bare `info` uses few
from kerneldiff.core.phase_names import PHASE_FILTERS, PHASES  # noqa: F401 - re-exported
from kerneldiff.core.strings import StringTable

PHASE_ID = {p: i for i, p in enumerate(PHASES)}

KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET = 0, 1, 2
KINDS = ("kernel", "memcpy", "memset")

# name, numpy dtype, fill value for "absent"
KERNEL_COLUMNS: tuple[tuple[str, str, Any], ...] = (
    ("ts", "f8", 0.0),        # start, µs (trace clock)
    ("dur", "f8", 0.0),       # duration, µs, >= 0
    ("name", "i4", -1),       # id into strings
    ("kind", "i1", 0),        # KIND_*
    ("stream", "i8", -1),
    ("device", "i8", -1),
    ("corr", "i8", -1),       # correlation id (joins the runtime launch)
    ("ext", "i8", -1),        # External id (joins the cpu_op)
    ("regs", "i4", -1),       # launch configuration (CUPTI): registers per thread,
    ("smem", "i8", -1),       # shared memory bytes,
    ("occupancy", "i2", -1),  # estimated achieved occupancy %,
    ("grid", "i4", -1),       # grid and block as "[x,y,z]" text, ids into strings
    ("block", "i4", -1),
    ("cpu_op", "i4", -1),     # row in cpu_ops, -1 if unknown
    ("launch", "i4", -1),     # row in launches, -1 if unknown
    ("cat", "i2", -1),        # category id into TraceModel.categories
    ("rule", "i4", -1),       # rule id into TraceModel.rules
    ("step", "i4", -1),       # row in steps (the forward pass it was launched in), -1 if none
    ("phase", "i1", 0),       # PHASE_ID of its step
    ("layer", "i4", -1),      # transformer layer index within its step, -1 outside layers
)

CPU_OP_COLUMNS = (("ts", "f8", 0.0), ("dur", "f8", 0.0), ("name", "i4", -1), ("ext", "i8", -1),
                  ("tid", "i8", -1), ("pid", "i8", -1),
                  ("dims", "i4", -1),    # record_shapes "Input Dims" as compact JSON text, id into strings
                  ("types", "i4", -1),   # record_shapes "Input type", likewise
                  ("comm", "i4", -1),    # a collective's parameters (record_param_comms' Collective name, Seq,
                                         # Process Group Name, Group size, In/Out msg nelems, dtype) as compact
                                         # JSON text (ingest.decode.comm_text), likewise; read by analysis.comms
                  ("concrete", "i4", -1))  # record_shapes "Concrete Inputs" (scalar arguments) as text, likewise
LAUNCH_COLUMNS = (("ts", "f8", 0.0), ("dur", "f8", 0.0), ("name", "i4", -1), ("corr", "i8", -1),
                  ("ext", "i8", -1), ("tid", "i8", -1), ("pid", "i8", -1))
PYTHON_COLUMNS = (("ts", "f8", 0.0), ("dur", "f8", 0.0), ("name", "i4", -1), ("pyid", "i8", -1),
                  ("parent", "i8", -1), ("tid", "i8", -1), ("pid", "i8", -1))
ANNOTATION_COLUMNS = (("ts", "f8", 0.0), ("dur", "f8", 0.0), ("name", "i4", -1), ("tid", "i8", -1),
                      ("pid", "i8", -1), ("gpu", "i1", 0),
                      # record_shapes on annotations: `nccl:all_reduce` holds the tensors its
                      # record_param_comms lists only as "TensorList" (ids into strings, -1 absent)
                      ("dims", "i4", -1), ("types", "i4", -1))


class Table:
    """A bundle of equal-length numpy columns with attribute access (`t.ts`, `t.dur`, ...)."""

    def __init__(self, spec, columns: dict[str, np.ndarray] | None = None, n: int = 0) -> None:
        object.__setattr__(self, "_spec", tuple(spec))
        cols = {}
        for name, dtype, fill in spec:
            if columns is not None and name in columns:
                cols[name] = np.asarray(columns[name], dtype=dtype)
            else:
                length = len(next(iter(columns.values()))) if columns else n
                cols[name] = np.full(length, fill, dtype=dtype)
        object.__setattr__(self, "_cols", cols)

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            return self._cols[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value) -> None:
        if name not in self._cols:
            raise AttributeError(f"no column {name}")
        self._cols[name] = np.asarray(value, dtype=self._cols[name].dtype)

    def __reduce__(self):
        # attribute lookups go through _cols, which a half-built copy lacks: rebuild from the columns
        return (Table, (self._spec, self._cols))

    def __len__(self) -> int:
        return len(next(iter(self._cols.values()))) if self._cols else 0

    @property
    def columns(self) -> dict[str, np.ndarray]:
        return self._cols

    def take(self, index) -> "Table":
        return Table(self._spec, {k: v[index] for k, v in self._cols.items()})

    @property
    def nbytes(self) -> int:
        return sum(v.nbytes for v in self._cols.values())


@dataclass
class Step:
    """One forward pass / scheduler step, from a phase annotation (or inferred)."""

    index: int
    name: str           # the annotation text, literal
    phase: str          # one of PHASES
    ts: float
    dur: float
    source: str         # "vllm", "sglang", "profiler_step", "user_step", "inferred", "whole-trace"
    batch: int | None = None      # requests in the step, when the annotation says
    tokens: int | None = None     # query tokens in the step, when the annotation or shapes say
    kv_tokens: int | None = None  # KV-cache tokens attended to, when the annotation says
    kind: str = "steady"          # steady | warmup | capture | compile (kerneldiff.core.analysis.pass_kinds)
    # when the forward call returned on the CPU, where the pass's entry is that call (a model module
    # call, a graph replay's launch): work launched after it is the loop around the model, not the
    # pass (kerneldiff.core.analysis.pass_extent); None where the entry does not span the forward
    call_end: float | None = None


@dataclass
class LayerSpan:
    """A transformer layer inside one step: kernel rows [start, end) of the sorted kernel table."""

    step: int
    layer: int
    start: int
    end: int


def layers_array(layers: list[LayerSpan]) -> np.ndarray:
    """Layer spans as rows (step, layer, start, end) of one int64 array: how the model cache and
    a pickled model hold them (a dense decode trace has ~21,000: pickled one object at a time they
    cost ~20 ms each way)."""
    n = len(layers)
    out = np.empty((n, 4), np.int64)
    for j, name in enumerate(("step", "layer", "start", "end")):
        out[:, j] = np.fromiter(map(attrgetter(name), layers), np.int64, n)
    return out


def layers_from_array(rows: np.ndarray) -> list[LayerSpan]:
    """The inverse of layers_array."""
    rows = np.asarray(rows, np.int64).reshape(-1, 4)
    return list(map(LayerSpan, *(rows[:, j].tolist() for j in range(4))))


@dataclass
class TraceModel:
    """One trace as columns (kernels, CPU ops, launches, annotations), with the readings made on them."""

    path: str
    info: Any                                   # a TraceInfo (the probe's; not imported: ingest builds on the model)
    strings: StringTable
    kernels: Table
    cpu_ops: Table
    launches: Table
    python: Table
    annotations: Table
    categories: list[str]
    rules: list[str]                            # rule ids, e.g. "amd.tensile_gemm"
    steps: list[Step] = field(default_factory=list)
    layers: list[LayerSpan] = field(default_factory=list)
    num_layers: int = 0                         # layers per forward pass (0 if not detected)
    # the layers' stacks in order, [{name, module, container, layers, first_layer}] (analysis.stacks):
    # one for a decoder LLM, two for a vision and a text tower; layer indexes run stack after stack
    stacks: list = field(default_factory=list)
    pass_source: str = ""                       # what the forward passes were read from
    phase_source: str = ""                      # what their phases were read from
    layer_source: str = ""                      # what the layers were read from
    eager_attention: str = ""                   # what told eager attention's bmm/softmax kernels (analysis.eager_attention)
    architecture: str = "unknown"               # transformer | ssm | hybrid | unknown
    warnings: list[str] = field(default_factory=list)
    dropped_events: int = 0                     # malformed events skipped by the loader
    load_seconds: float = 0.0
    # a view of one device of a file that holds several (analysis/devices.py):
    # the device read, and the file's per-device totals [{device, kernels, gpu_time_us}]
    device: int | None = None
    devices: list = field(default_factory=list)

    def __getstate__(self) -> dict:
        # the layer spans as one array (a forked child's model comes back pickled: core.processes.fork_child)
        state = self.__dict__.copy()
        state.pop("_layer_rows", None)
        state["layers"] = self.layer_rows()
        return state

    def layer_rows(self) -> np.ndarray:
        """The layer spans as `layers_array` rows, without making LayerSpan objects of them."""
        rows = self.__dict__.get("_layer_rows")
        return rows if rows is not None else layers_array(self.layers)

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        if isinstance(state.get("layers"), np.ndarray):
            self.set_layer_rows(state.pop("layers"))
        self.__dict__.update(state)

    def set_layer_rows(self, rows: np.ndarray) -> None:
        """The layer spans as `layers_array` rows, made LayerSpan objects when `layers` is first
        read (`__getattr__`): a comparison reads none, and a dense trace has ~21,000 (~11 ms to make
        at each load, ~5 ms more to make again from a forked child's pickle or the model cache)."""
        self.__dict__.pop("layers", None)
        self.__dict__["_layer_rows"] = rows

    def __getattr__(self, name: str):
        # only for what ordinary lookup does not find: `layers` while it is still rows
        if name == "layers":
            rows = self.__dict__.pop("_layer_rows", None)
            if rows is not None:
                self.__dict__["layers"] = spans = layers_from_array(rows)
                return spans
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # --- small conveniences; heavy analysis lives in other modules ---------------------------
    def memo(self, key: tuple, make):
        """`make()`, computed once per model and key. For readings that depend only on the loaded
        model (module calls, each kernel's work, the timeline of a phase): a side loaded in a forked
        child computes them there, in parallel with the other side, and they come back pickled with
        the model (never written to the disk cache, which stores arrays only)."""
        memo = self.__dict__.setdefault("_memo", {})
        if key not in memo:
            memo[key] = make()
        return memo[key]

    @property
    def label(self) -> str:
        gpu = getattr(self.info, "gpu", "") or ""
        return gpu or self.path.rsplit("/", 1)[-1]

    @property
    def gpu_time_us(self) -> float:
        return float(self.kernels.dur.sum())

    def kernel_name(self, row: int) -> str:
        return self.strings[int(self.kernels.name[row])]

    def category(self, row: int) -> str:
        c = int(self.kernels.cat[row])
        return self.categories[c] if c >= 0 else "Other"

    def rule(self, row: int) -> str:
        r = int(self.kernels.rule[row])
        return self.rules[r] if r >= 0 else ""

    def cpu_op_name(self, row: int) -> str | None:
        i = int(self.kernels.cpu_op[row])
        return self.strings[int(self.cpu_ops.name[i])] if i >= 0 else None

    def phase_mask(self, phase: str | None) -> np.ndarray:
        """Boolean mask over kernels for a phase filter ("all"/None keeps every kernel)."""
        if phase in (None, "all"):
            return np.ones(len(self.kernels), dtype=bool)
        return self.kernels.phase == PHASE_ID[phase]

    def phases_present(self) -> list[str]:
        ids = np.unique(self.kernels.phase)
        return [PHASES[i] for i in ids.tolist()]
