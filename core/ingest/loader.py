"""Read a trace into a TraceModel of its columns: read → columns → one model.

The file is read into columns in this process (source.py, slices.py, decode.py, columns.py) or,
for big files, by worker processes (workers.py); the columns become a TraceModel (build.py). Its
readings (joins, classes, phases, layers, quality warnings) are computed after, by
`kerneldiff.core.analysis.readings`, and the model cache is the caller's
(`kerneldiff.core.orchestration.load`). A parallel read that meets a cut inside a string starts
again in this process, whose reader backs off boundary by boundary.

Progress is reported as (fraction 0..1, stage, bytes read, bytes total). Reading the file is
~90% of the work, so it owns 0..0.9 of the bar; the readings share the rest.
Cancellation: pass a `threading.Event`; the loader checks it between runs of events.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from typing import Any

from kerneldiff.core.errors import LoadCancelled, TraceError
from kerneldiff.core.model import TraceModel
from kerneldiff.core.ingest.probe import TraceInfo, _gpu_name, _truthy, _vendor, clean_device, clean_distributed, probe
from kerneldiff.core.ingest.source import read_columns
from kerneldiff.core.ingest.build import build_model
from kerneldiff.core.ingest.read_result import ReadResult
from kerneldiff.core.processes.forkserver import worker_count

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



def read_trace(path: str | os.PathLike, *, progress: Progress | None = None, cancel=None,
               info: TraceInfo | None = None, workers: int | None = None,
               idle: Callable[[], Any] | None = None) -> TraceModel:
    """One trace's columns as a TraceModel, without its readings (those are
    `kerneldiff.core.analysis.readings.read`'s). Raises TraceError (bad input) or LoadCancelled.

    workers: decoding processes; None = one per CPU for big files, 0 or 1 = this process only.
    idle: called once while worker processes decode, when there are some (this process waits for
    them anyway).
    """
    path = os.fspath(path)
    info = probed(path, info)
    report = reporter(path, progress, cancel)
    report(0.0, "reading", 0, info.size)
    return read_reported(path, info, workers, report, idle)


def probed(path: str, info: TraceInfo | None) -> TraceInfo:
    """The trace's probe (`info`, or read now); an AIE trace is refused."""
    info = info or probe(path)
    if info.kind == "aie":
        raise TraceError(path, "this is an AMD AIE (NPU) trace: open it with `kerneldiff aie`")
    return info


def read_reported(path: str, info: TraceInfo, workers: int | None, report, idle=None) -> TraceModel:
    """`read_trace` once the start is reported: progress and cancellation through `report`
    (`reporter`'s)."""
    size = max(info.size, 1)
    shown = [0.0]

    def read_progress(done: int, total: int) -> None:
        if (done, total) == (0, 1):  # queued behind another load for the worker processes
            report(shown[0], "waiting for a free core", 0, info.size)
            return
        # monotonic even when a parallel read gives up and one process starts over
        shown[0] = max(shown[0], READ_SHARE * min(done, size) / size)
        report(shown[0], "reading", done, total)

    # the file read is the one the caller's cache key names: a symlink re-pointed mid-load must
    # not make one trace's numbers stored under another's key
    source = os.path.realpath(path)
    gc_was = gc.isenabled()
    # millions of small allocations and no cycles, from reading to layers: the collector would
    # only walk the growing heap (1 GB: building the model 0.18-0.29 s with it, 0.13 s without)
    gc.disable()
    try:
        return _read_and_build(path, source, info, workers, read_progress, idle, report)
    finally:
        if gc_was:
            gc.enable()


def reporter(path: str, progress: Progress | None, cancel) -> Callable[[float, str, int, int], None]:
    """progress(fraction, stage, done, total), raising LoadCancelled once `cancel` is set or
    `progress` returns False."""
    def report(frac: float, stage: str, done: int, total: int) -> None:
        if cancel is not None and cancel.is_set():
            raise LoadCancelled(path)
        if progress is not None and progress(frac, stage, done, total) is False:
            raise LoadCancelled(path)

    return report


def _read_and_build(path: str, source: str, info: TraceInfo, workers: int | None, read_progress, idle,
                    report) -> TraceModel:
    """Read the file (worker processes when worth it) and build the model."""
    try:
        n = worker_count(info, workers)
        read = None
        if n > 1:   # the worker machinery only then (a load in one process needs none of it)
            from kerneldiff.core.ingest.workers import ParallelFallback, read_parallel, slot_size

            try:
                read = read_parallel(source, n, read_progress, slot_size(info), scan_worth(info), idle)
            except ParallelFallback:
                read = None
        if read is None:
            # a load given the machine (workers: the reader's choice) may scan ahead on a spare
            # core (the reader knows whether there is one); one held to one process (a pair read
            # beside each other, --workers 1) does not
            read = _read_sequential(source, read_progress, scan_worth(info), workers is None)
    except TraceError as e:
        if e.path != source or source == path:
            raise
        raise TraceError(path, e.problem) from None   # errors name the file as the user gave it
    _info_from_meta(info, read.meta)
    report(READ_SHARE, "indexing", info.size, info.size)
    model = build_model(path, info, read)
    if read.truncated_at is not None:
        model.warnings.append(
            f"file ends early (truncated at {'decompressed ' if info.compressed else ''}byte {read.truncated_at}): "
            f"kept the {read.events} complete events before it")
    return model


def scan_worth(info: TraceInfo) -> bool:
    """Worth the compiled scanner: always, where it was built (it costs ~1 ms to import; the
    reader hands it the bulk of each slice and lets msgspec read what it leaves)."""
    return True


# --- reading in this process -------------------------------------------------------------------

def _read_sequential(path: str, progress: Callable[[int, int], None], fast: bool, ahead: bool = False) -> ReadResult:
    col, reader = read_columns(path, progress, fast, ahead)
    out = ReadResult()
    out.chunks.append((col.strings, col.arrays()))
    out.count(col)
    out.meta = reader.meta
    out.truncated_at = reader.truncated_at
    out.notes = reader.notes
    return out
