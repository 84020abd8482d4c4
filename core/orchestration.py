"""How a Session's work is carried out, apart from what it answers: a trace loaded (read by ingest,
its readings computed by `kerneldiff.core.analysis.readings`, the result kept in the model cache),
which process loads which trace
(a pair side by side in a forked child, workers for a big trace; the policy is
`kerneldiff.core.processes`), the fork server started ahead of a UI's first load, comparisons kept
on disk and read back (`kerneldiff.core.comparison_cache`), and a comparison computed ahead in a
forked child while the explorer starts.

Each function takes the `Session` it works for (`kerneldiff.core.trace_session`, which calls
them) and reads its settings and its loaded models.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from kerneldiff.core.errors import TraceError

if TYPE_CHECKING:
    from kerneldiff.core.analysis.classify import Classifier
    from kerneldiff.core.ingest.probe import TraceInfo
    from kerneldiff.core.model import TraceModel
    from kerneldiff.core.trace_session import Session


# --- one trace ----------------------------------------------------------------------------------

def load(path: str | os.PathLike, *, progress: Callable[[float, str, int, int], Any] | None = None, cancel=None,
         classifier: Classifier | None = None, registry: str | None = None,
         info: TraceInfo | None = None, use_cache: bool = False, workers: int | None = None) -> TraceModel:
    """One trace as a TraceModel with all its readings: from the model cache when allowed, else
    read (`kerneldiff.core.ingest.loader`), its readings computed (`kerneldiff.core.analysis.readings`)
    and stored in the cache. Raises TraceError (bad input) or LoadCancelled.

    use_cache: reuse / store the model in the user cache (see kerneldiff.core.ingest.cache).
    workers: decoding processes; None = one per CPU for big files, 0 or 1 = this process only.
    """
    from kerneldiff.core.analysis import readings
    from kerneldiff.core.ingest import loader

    t0 = time.perf_counter()
    path = os.fspath(path)
    info = loader.probed(path, info)

    def load_classifier():
        from kerneldiff.core.analysis.classify import Classifier

        return Classifier.load(registry)

    if classifier is None and use_cache:   # the cache key names the rules
        classifier = load_classifier()
    report = loader.reporter(path, progress, cancel)
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
    gc_was = gc.isenabled()
    gc.disable()   # the readings, like the read, make many objects and no cycles
    try:
        # the classifier is read while worker processes decode, when there are some
        loaded: list = []
        idle = (lambda: loaded.append(load_classifier())) if classifier is None else None
        model = loader.read_reported(path, info, workers, report, idle)
        if classifier is None:
            classifier = loaded[0] if loaded else load_classifier()
        readings.read(model, classifier, lambda frac, stage: report(frac, stage, info.size, info.size))
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


# --- processes ----------------------------------------------------------------------------------

def warm_up(s: Session) -> None:
    """Traces big enough for worker processes are decoded by them: start their fork server now,
    in a background thread, so that the first load does not pay its ~0.3 s start-up (a UI calls
    this before its first frame; its threads make plain fork unsafe). Decided in that thread
    (`needs_workers`): a pair that loads in one process each, or whose big traces are in the
    model cache, starts nothing."""
    from kerneldiff.core.processes.forkserver import prepare

    def warm() -> None:
        if needs_workers(s):
            prepare()

    threading.Thread(target=warm, name="kerneldiff-prepare", daemon=True).start()


def needs_workers(s: Session) -> bool:
    """Will loading read, from its JSON, a probed trace big enough for worker processes? Not
    when every such trace is in the model cache: the explorer then starts no fork server
    (~0.3 s of CPU beside its first frames, for nothing)."""
    from kerneldiff.core.processes.forkserver import big, cpus

    if cpus() < 2 or s.load_workers() == 1:
        return False
    wanted = [i for i, info in enumerate(s.infos) if info is not None and big(info.size, info.compressed)]
    if not wanted or not s.use_cache or s.loader is not None:
        return bool(wanted)
    from kerneldiff.core.ingest import cache

    return not all(cache.has(s.paths[i], s.classifier) for i in wanted)


def load_pair_beside(s: Session, progress: Callable[..., Any] | None = None,
                     stored: Callable[[int], None] | None = None) -> bool:
    """Load one trace here and the other in a forked child at once, when each load would use one
    core only, or when the pair, on two CPUs, is of sizes alike enough that one process each beats
    workers in turn (`forkserver.pair_beside`). False when that does not apply (the caller loads
    them in turn). `progress(i, fraction, stage, done, total)` and `stored(i)` (trace i loaded, in
    the model cache when that is on) are called from both processes: they must write where this
    process's parent can read (`progress_board`), not post to this process."""
    from kerneldiff.core.processes.fork_child import Beside, can_fork
    from kerneldiff.core.ingest.probe import json_bytes
    from kerneldiff.core.processes.forkserver import pair_beside, worker_count

    if not (s.fork_pair and len(s.paths) == 2 and s.loader is None and all(m is None for m in s.models)
            and can_fork()):
        return False
    one_each = all(worker_count(info, s.load_workers()) == 1 for info in s.infos)
    sizes = [json_bytes(info) for info in s.infos]
    if not (one_each or (s.load_workers() is None and pair_beside(sizes))):
        return False
    # what both loads need, imported and read once before the fork rather than in both
    # processes. The comparison's modules only this process needs: imported once its own side
    # is ready, while the child still sends its model back (~26 ms off the child's path)
    import numpy.ma  # noqa: F401 - np.unique imports it on first use
    import kerneldiff.core.ingest.decode  # noqa: F401
    import kerneldiff.core.ingest.loader  # noqa: F401
    from kerneldiff.core.analysis.side_readings import prepare_side
    s.classifier

    # The child also sends its model back (~10 ms at 60 MB): it takes the smaller trace (by its
    # JSON bytes, the best guess of the work before reading), so the larger one is read here.
    here = 1 if sizes[1] > sizes[0] else 0
    there = 1 - here

    def step(i: int):
        return None if progress is None else (lambda *a: progress(i, *a))

    def load_there():
        m = s.load(there, step(there))
        if stored is not None:
            stored(there)
        prepare_side(m)
        return m, s._identities[there]   # the file as the child read it: names a kept comparison

    s._one_process = True   # each side read by its own process, no workers (`pair_beside`)
    try:
        beside = Beside(load_there)
        try:
            m = s.load(here, step(here))
            if stored is not None:
                stored(here)
            prepare_side(m)
            import kerneldiff.core.compare.engine  # noqa: F401
        except BaseException:
            beside.cancel()
            raise
    finally:
        s._one_process = False
    model, s._identities[there] = beside.result()
    model = s.models[there] = s._keep_passes(model)
    s.infos[there] = getattr(model, "info", s.infos[there])
    return True


# --- comparisons kept on disk -------------------------------------------------------------------

def identity(s: Session, index: int):
    """The file as it is now, where comparisons are kept (comparison_cache's key names it)."""
    if comparison_key_parts(s) is None:
        return None
    from kerneldiff.core.cache_keys import file_identity

    return file_identity(s.paths[index])


def comparison_key_parts(s: Session) -> dict[str, Any] | None:
    """What a stored comparison's key names besides the files and phase; None where none is kept:
    without keep_comparisons or the cache, with a stand-in loader (tests) or a peaks table other
    than the shipped one, or for one trace."""
    if not (s.keep_comparisons and s.use_cache) or s.loader is not None or s.peaks is not None \
            or s.single:
        return None
    if s.all_passes:   # the stored comparisons are of the steady passes
        return None
    return dict(registry=s.registry, device=s.device, fusion_overrides=s.fusion_overrides)


def comparison_key(s: Session, phase: str, loaded: bool = False) -> str | None:
    """The key of the comparison in `phase`: of the files as they are now, or (`loaded`) as they
    were when loaded (None if either changed while it was read)."""
    parts = comparison_key_parts(s)
    if parts is None or (loaded and any(i is None for i in s._identities)):
        return None
    from kerneldiff.core import comparison_cache

    return comparison_cache.key_for(s.paths, phase, identities=s._identities if loaded else None, **parts)


def compare(s: Session, phase: str, keep: bool):
    """The comparison of the loaded pair in `phase`: the stored one when there is one, else computed
    (its kernel pairs in a forked child where one may be forked) and stored unless not `keep`."""
    key = comparison_key(s, phase, loaded=True)
    if key is not None:
        from kerneldiff.core import comparison_cache

        stored = comparison_cache.get(key)
        if stored is not None:
            return stored[0]
    from kerneldiff.core.compare.engine import compare as compare_models
    from kerneldiff.core.processes.fork_child import can_fork

    comparison = compare_models(s.models[0], s.models[1], phase=phase, classifier=s.classifier,
                                fusion_overrides=s.fusion_overrides, peaks=s.peaks, beside=can_fork())
    if key is not None and keep:
        comparison_cache.put(key, comparison, s.phases())
    return comparison


def keep_comparison(s: Session, phase: str, comparison) -> bool:
    """See `Session.keep_comparison`."""
    key = comparison_key(s, phase, loaded=True) if s.loaded else None
    if key is None:
        return False
    from kerneldiff.core import comparison_cache

    return comparison_cache.entry_path(key).is_file() or comparison_cache.put(key, comparison, s.phases())


def stored_comparison(s: Session, phase: str):
    """See `Session.stored_comparison`."""
    if s._received is not None and s._received[0] == phase:   # sent by the compare-ahead child
        _, comparison, s._stored_phases = s._received
        return comparison
    key = comparison_key(s, phase)
    if key is None:
        return None
    from kerneldiff.core import comparison_cache

    stored = comparison_cache.get(key)
    if stored is None:
        return None
    comparison, s._stored_phases = stored
    return comparison
