"""Load a trace into a TraceModel: read → collect columns → join → classify → phases → layers.

Progress is reported as (fraction 0..1, stage, bytes read, bytes total). Reading the file is
~90% of the work, so it owns 0..0.9 of the bar; the analysis stages share the rest.
Cancellation: pass a `threading.Event`; the loader checks it between batches.
"""

from __future__ import annotations

import gc
import os
import time
from array import array
from collections.abc import Callable
from typing import Any

import numpy as np

from . import attribution, layers, phases
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .classify import Classifier
from .errors import LoadCancelled, TraceError
from .model import (ANNOTATION_COLUMNS, CPU_OP_COLUMNS, KERNEL_COLUMNS, KIND_KERNEL, KIND_MEMCPY,
                    KIND_MEMSET, LAUNCH_COLUMNS, PYTHON_COLUMNS, Table, TraceModel)
from .probe import TraceInfo, _gpu_name, _truthy, _vendor, probe
from .reader import EventReader
from .strings import StringTable

Progress = Callable[[float, str, int, int], Any]

READ_SHARE = 0.9
GPU_CATS = {"kernel": KIND_KERNEL, "gpu_memcpy": KIND_MEMCPY, "gpu_memset": KIND_MEMSET,
            # older Kineto / HTA spellings
            "Kernel": KIND_KERNEL, "Memcpy": KIND_MEMCPY, "Memset": KIND_MEMSET,
            "gpu_memcpy_async": KIND_MEMCPY}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver", "hip_runtime", "hip_api", "Runtime", "cuda_api"}
CPU_OP_CATS = {"cpu_op", "operator", "Operator"}
ANNOTATION_CATS = {"user_annotation": 0, "gpu_user_annotation": 1}


def _num(v: Any, default: float = -1) -> float:
    """Numbers arrive as ints, floats or strings depending on the writer; anything else -> default."""
    if v is None:
        return default
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        try:
            return float(v) if ("." in v or "e" in v or "E" in v) else int(v)
        except ValueError:
            return default
    return default


def _int(v: Any) -> int:
    x = _num(v, -1)
    if x != x or x in (float("inf"), float("-inf")):
        return -1
    try:
        x = int(x)
    except (OverflowError, ValueError):
        return -1
    return x if -(2**63) <= x < 2**63 else -1


def _tid(v: Any) -> int:
    """pid/tid may be ints, numeric strings, or labels like "Spans": labels become -1."""
    return _int(v)


class _Collector:
    """Appends fields of the events kerneldiff uses into compact typed arrays."""

    def __init__(self) -> None:
        self.strings = StringTable()
        self.k = {c: array("d") for c in ("ts", "dur")} | {c: array("q") for c in ("name", "kind", "stream", "device", "corr", "ext")}
        self.c = {c: array("d") for c in ("ts", "dur")} | {c: array("q") for c in ("name", "ext", "tid", "pid")}
        self.l = {c: array("d") for c in ("ts", "dur")} | {c: array("q") for c in ("name", "corr", "ext", "tid", "pid")}
        self.p = {c: array("d") for c in ("ts", "dur")} | {c: array("q") for c in ("name", "pyid", "parent", "tid", "pid")}
        self.a = {c: array("d") for c in ("ts", "dur")} | {c: array("q") for c in ("name", "tid", "pid", "gpu")}
        self.dropped = 0
        self.events = 0
        self.negative_dur = 0
        self.process_names: dict[int, str] = {}

    def add(self, events: list) -> None:
        intern = self.strings.intern
        for e in events:
            self.events += 1
            if e is None:
                self.dropped += 1
                continue
            if e.ph != "X":
                if e.ph == "M" and e.name == "process_name" and e.args is not None and isinstance(e.args.name, str):
                    self.process_names[_tid(e.pid)] = e.args.name
                continue
            cat = e.cat
            if not isinstance(cat, str):
                continue
            target = None
            kind = GPU_CATS.get(cat)
            if kind is not None:
                target = "k"
            elif cat == "python_function":
                target = "p"
            elif cat in CPU_OP_CATS:
                target = "c"
            elif cat in LAUNCH_CATS:
                target = "l"
            elif cat in ANNOTATION_CATS:
                target = "a"
            else:
                continue
            ts = _num(e.ts, None)
            dur = _num(e.dur, None)
            name = e.name
            if (ts is None or dur is None or not isinstance(name, str) or ts != ts or dur != dur
                    or abs(ts) == float("inf") or abs(dur) == float("inf") or abs(ts) > 1e18 or dur > 1e15):
                self.dropped += 1
                continue
            if dur < 0:
                self.negative_dur += 1
                dur = 0.0
            a = e.args
            if target == "k":
                col = self.k
                col["kind"].append(kind)
                if a is not None:
                    col["stream"].append(_int(a.stream) if a.stream is not None else _tid(e.tid))
                    col["device"].append(_int(a.device) if a.device is not None else _tid(e.pid))
                    col["corr"].append(_int(a.correlation))
                    col["ext"].append(_int(a.external_id))
                else:
                    col["stream"].append(_tid(e.tid))
                    col["device"].append(_tid(e.pid))
                    col["corr"].append(-1)
                    col["ext"].append(-1)
            elif target == "p":
                col = self.p
                col["pyid"].append(_int(a.python_id) if a is not None else -1)
                col["parent"].append(_int(a.python_parent) if a is not None else -1)
                col["tid"].append(_tid(e.tid))
                col["pid"].append(_tid(e.pid))
            elif target == "c":
                col = self.c
                col["ext"].append(_int(a.external_id) if a is not None else -1)
                col["tid"].append(_tid(e.tid))
                col["pid"].append(_tid(e.pid))
            elif target == "l":
                col = self.l
                col["corr"].append(_int(a.correlation) if a is not None else -1)
                col["ext"].append(_int(a.external_id) if a is not None else -1)
                col["tid"].append(_tid(e.tid))
                col["pid"].append(_tid(e.pid))
            else:
                col = self.a
                col["gpu"].append(ANNOTATION_CATS[cat])
                col["tid"].append(_tid(e.tid))
                col["pid"].append(_tid(e.pid))
            col["ts"].append(ts)
            col["dur"].append(dur)
            col["name"].append(intern(name))

    @staticmethod
    def table(spec, cols: dict[str, array]) -> Table:
        return Table(spec, {k: np.frombuffer(v, dtype="f8" if v.typecode == "d" else "i8") for k, v in cols.items()})


def _info_from_meta(info: TraceInfo, meta: dict[str, Any]) -> None:
    """Fill probe fields the head could not see (metadata written after traceEvents)."""
    devs = meta.get("deviceProperties")
    if not info.device and isinstance(devs, list):
        devs = [d for d in devs if isinstance(d, dict)]
        info.device_count = len(devs)
        info.device = dict(devs[0]) if devs else {}
    if info.vendor == "other" or not info.gpu:
        info.vendor = _vendor(meta, info.device)
        info.gpu, info.gpu_source = _gpu_name(info.vendor, info.device)
    if info.with_stack is None:
        info.with_stack = _truthy(meta.get("with_stack"))
    if info.record_shapes is None:
        info.record_shapes = _truthy(meta.get("record_shapes"))
    if not info.distributed and isinstance(meta.get("distributedInfo"), dict):
        d = meta["distributedInfo"]
        info.distributed = {k: d[k] for k in ("rank", "world_size", "backend") if k in d}
    for k, v in meta.items():
        if k.endswith("_version") and not isinstance(v, (dict, list)):
            info.runtime.setdefault(k, v)
    info.metadata_complete = bool(info.device)


def load(path: str | os.PathLike, *, progress: Progress | None = None, cancel=None,
         classifier: Classifier | None = None, registry: str | None = None,
         info: TraceInfo | None = None) -> TraceModel:
    """Load one trace. Raises TraceError (bad input) or LoadCancelled."""
    t0 = time.perf_counter()
    path = os.fspath(path)
    info = info or probe(path)
    if info.kind == "aie":
        raise TraceError(path, "this is an AMD AIE (NPU) trace: open it with `kerneldiff aie`")
    if classifier is None:
        from .classify import Classifier

        classifier = Classifier.load(registry)

    def report(frac: float, stage: str, done: int, total: int) -> None:
        if cancel is not None and cancel.is_set():
            raise LoadCancelled(path)
        if progress is not None and progress(frac, stage, done, total) is False:
            raise LoadCancelled(path)

    size = max(info.size, 1)
    report(0.0, "reading", 0, info.size)
    reader = EventReader(path, progress=lambda done, total: report(READ_SHARE * done / size, "reading", done, total))
    col = _Collector()
    gc_was = gc.isenabled()
    gc.disable()  # millions of small allocations, no cycles: the collector would only slow us down
    try:
        for batch in reader.batches():
            col.add(batch)
            report(READ_SHARE * reader.src.consumed / size, "reading", reader.src.consumed, info.size)
    finally:
        reader.close()
        if gc_was:
            gc.enable()
    _info_from_meta(info, reader.meta)
    report(READ_SHARE, "indexing", info.size, info.size)
    model = _build_model(path, info, col, classifier)
    if reader.truncated_at is not None:
        model.warnings.append(
            f"file ends early (truncated at decompressed byte {reader.truncated_at}): "
            f"kept the {col.events} complete events before it")
    report(0.93, "phases", info.size, info.size)
    phases.assign(model)
    report(0.96, "layers", info.size, info.size)
    layers.segment(model, classifier)
    attribution.quality_warnings(model, classifier)
    model.load_seconds = time.perf_counter() - t0
    report(1.0, "done", info.size, info.size)
    return model


def _build_model(path: str, info: TraceInfo, col: _Collector, classifier: Classifier) -> TraceModel:
    k = col.table(KERNEL_COLUMNS, col.k)
    order = np.argsort(k.ts, kind="stable")
    k = k.take(order)
    model = TraceModel(
        path=path, info=info, strings=col.strings, kernels=k,
        cpu_ops=col.table(CPU_OP_COLUMNS, col.c), launches=col.table(LAUNCH_COLUMNS, col.l),
        python=col.table(PYTHON_COLUMNS, col.p), annotations=col.table(ANNOTATION_COLUMNS, col.a),
        categories=list(classifier.categories), rules=[], dropped_events=col.dropped)
    if col.dropped:
        model.warnings.append(f"{col.dropped} malformed events skipped (missing or invalid ph/ts/dur/name)")
    if col.negative_dur:
        model.warnings.append(f"{col.negative_dur} events had a negative duration; counted as 0")
    _classify(model, classifier)
    attribution.link(model)
    return model


def _classify(model: TraceModel, classifier: Classifier) -> None:
    """Classify each distinct kernel name once, then broadcast to rows."""
    k = model.kernels
    if len(k) == 0:
        return
    uniq, inverse = np.unique(k.name, return_inverse=True)
    names = [model.strings[int(i)] for i in uniq]
    cats, rules = classifier.classify_names(names)
    cat_index = {c: i for i, c in enumerate(model.categories)}
    rule_index: dict[str, int] = {}
    cat_ids = np.empty(len(uniq), dtype=np.int16)
    rule_ids = np.empty(len(uniq), dtype=np.int32)
    for j, (c, r) in enumerate(zip(cats, rules)):
        if c not in cat_index:
            cat_index[c] = len(model.categories)
            model.categories.append(c)
        cat_ids[j] = cat_index[c]
        if r not in rule_index:
            rule_index[r] = len(model.rules)
            model.rules.append(r)
        rule_ids[j] = rule_index[r]
    k.cat = cat_ids[inverse]
    k.rule = rule_ids[inverse]
