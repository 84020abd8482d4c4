"""Load a trace into a TraceModel: read → columns → join → classify → phases → layers.

The pipeline: the cache first; then the file is read into columns in this process (source.py,
slices.py, decode.py, columns.py) or, for big files, by worker processes (workers.py); the columns
become a TraceModel (build.py), then the analysis readings (phases, layers, quality warnings).
A parallel read that meets a cut inside a string starts again in this process, whose reader
backs off boundary by boundary.

Progress is reported as (fraction 0..1, stage, bytes read, bytes total). Reading the file is
~90% of the work, so it owns 0..0.9 of the bar; the analysis stages share the rest.
Cancellation: pass a `threading.Event`; the loader checks it between runs of events.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kerneldiff.core.analysis import attribution
from kerneldiff.core.analysis import eager_attention
from kerneldiff.core.analysis import layers
from kerneldiff.core.analysis import phases
from kerneldiff.core.errors import LoadCancelled, TraceError
from kerneldiff.core.model import TraceModel
from kerneldiff.core.ingest.probe import TraceInfo, _gpu_name, _truthy, _vendor, clean_device, clean_distributed, probe
from kerneldiff.core.ingest.source import read_columns
from kerneldiff.core.ingest.build import build_model
from kerneldiff.core.ingest.workers import (ParallelFallback, ReadResult, read_parallel, scan_worth, slot_size,
                                            worker_count)

if TYPE_CHECKING:
    from kerneldiff.core.analysis.classify import Classifier

Progress = Callable[[float, str, int, int], Any]

READ_SHARE = 0.9


def _info_from_meta(info: TraceInfo, meta: dict[str, Any]) -> None:
    """Fill probe fields the head could not see (metadata written after traceEvents)."""
    devs = meta.get("deviceProperties")
    if not info.device and isinstance(devs, list):
        devs = [d for d in devs if isinstance(d, dict)]
        info.device_count = len(devs)
        info.device = clean_device(devs[0]) if devs else {}
        info.devices = [clean_device(d) for d in devs]
    if info.vendor == "other" or not info.gpu:
        info.vendor = _vendor(meta, info.device)
        info.gpu, info.gpu_source = _gpu_name(info.vendor, info.device)
    if info.with_stack is None:
        info.with_stack = _truthy(meta.get("with_stack"))
    if info.record_shapes is None:
        info.record_shapes = _truthy(meta.get("record_shapes"))
    if getattr(info, "profile_memory", None) is None:
        info.profile_memory = _truthy(meta.get("profile_memory"))
    if not info.distributed and isinstance(meta.get("distributedInfo"), dict):
        info.distributed = clean_distributed(meta["distributedInfo"])
    for k, v in meta.items():
        if k.endswith("_version") and not isinstance(v, (dict, list)):
            info.runtime.setdefault(k, v)
    info.metadata_complete = bool(info.device)



def load(path: str | os.PathLike, *, progress: Progress | None = None, cancel=None,
         classifier: Classifier | None = None, registry: str | None = None,
         info: TraceInfo | None = None, use_cache: bool = False, workers: int | None = None) -> TraceModel:
    """Load one trace. Raises TraceError (bad input) or LoadCancelled.

    use_cache: reuse / store the loaded model in the user cache (see kerneldiff.core.ingest.cache).
    workers: decoding processes; None = one per CPU for big files, 0 or 1 = this process only.
    """
    t0 = time.perf_counter()
    path = os.fspath(path)
    info = info or probe(path)
    if info.kind == "aie":
        raise TraceError(path, "this is an AMD AIE (NPU) trace: open it with `kerneldiff aie`")
    def load_classifier():
        from kerneldiff.core.analysis.classify import Classifier

        return Classifier.load(registry)

    if classifier is None and use_cache:   # the cache key names the rules
        classifier = load_classifier()

    def report(frac: float, stage: str, done: int, total: int) -> None:
        if cancel is not None and cancel.is_set():
            raise LoadCancelled(path)
        if progress is not None and progress(frac, stage, done, total) is False:
            raise LoadCancelled(path)

    report(0.0, "reading", 0, info.size)
    key = None
    if use_cache:
        from kerneldiff.core.ingest import cache

        key = cache.key_for(path, classifier)
        model = cache.get(key) if key is not None else None
        if model is not None:
            model.path = path
            if model.info is not None:
                model.info.path = path
            model.load_seconds = time.perf_counter() - t0
            report(1.0, "done", info.size, info.size)
            return model
    size = max(info.size, 1)
    shown = [0.0]

    def read_progress(done: int, total: int) -> None:
        if (done, total) == (0, 1):  # queued behind another load for the worker processes
            report(shown[0], "waiting for a free core", 0, info.size)
            return
        # monotonic even when a parallel read gives up and one process starts over
        shown[0] = max(shown[0], READ_SHARE * min(done, size) / size)
        report(shown[0], "reading", done, total)

    # the file read is the one the key names: a symlink re-pointed mid-load must not make one
    # trace's numbers stored under another's key
    source = os.path.realpath(path)
    gc_was = gc.isenabled()
    # millions of small allocations and no cycles, from reading to layers: the collector would
    # only walk the growing heap (1 GB: building the model 0.18-0.29 s with it, 0.13 s without)
    gc.disable()
    try:
        model = _read_and_build(path, source, info, workers, read_progress, classifier, load_classifier, report)
    finally:
        if gc_was:
            gc.enable()
    model.load_seconds = time.perf_counter() - t0
    if key is not None:
        from kerneldiff.core.ingest import cache

        if cache.key_for(path, classifier) == key:   # unchanged while it was read (else not stored)
            cache.put(key, model)
    report(1.0, "done", info.size, info.size)
    return model


def _read_and_build(path: str, source: str, info: TraceInfo, workers: int | None, read_progress, classifier,
                    load_classifier, report) -> TraceModel:
    """Read the file (worker processes when worth it) and build the model with its phases and
    layers; without a `classifier`, `load_classifier()` makes one, while worker processes
    decode when there are some (this process waits for them anyway)."""
    loaded: list = []
    try:
        n = worker_count(info, workers)
        read = None
        if n > 1:
            try:
                idle = (lambda: loaded.append(load_classifier())) if classifier is None else None
                read = read_parallel(source, n, read_progress, slot_size(info), scan_worth(info), idle)
            except ParallelFallback:
                read = None
        if read is None:
            read = _read_sequential(source, read_progress, scan_worth(info))
    except TraceError as e:
        if e.path != source or source == path:
            raise
        raise TraceError(path, e.problem) from None   # errors name the file as the user gave it
    if classifier is None:
        classifier = loaded[0] if loaded else load_classifier()
    _info_from_meta(info, read.meta)
    report(READ_SHARE, "indexing", info.size, info.size)
    model = build_model(path, info, read, classifier)
    if read.truncated_at is not None:
        model.warnings.append(
            f"file ends early (truncated at {'decompressed ' if info.compressed else ''}byte {read.truncated_at}): "
            f"kept the {read.events} complete events before it")
    report(0.93, "phases", info.size, info.size)
    eager_attention.mark(model, classifier)
    phases.assign(model, classifier)
    report(0.96, "layers", info.size, info.size)
    layers.segment(model, classifier)
    attribution.quality_warnings(model, classifier)
    return model


# --- reading in this process -------------------------------------------------------------------

def _read_sequential(path: str, progress: Callable[[int, int], None], fast: bool) -> ReadResult:
    col, reader = read_columns(path, progress, fast)
    out = ReadResult()
    out.chunks.append((col.strings, col.arrays()))
    out.count(col)
    out.meta = reader.meta
    out.truncated_at = reader.truncated_at
    out.notes = reader.notes
    return out
