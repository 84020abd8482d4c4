"""How worker processes are started (the policy for when: the package's docstring), apart from the reader so that a UI can start the fork server
before its first frame without importing numpy and the reader into its own process (~70 ms of the
first frame when it did)."""

from __future__ import annotations

import os
import sys
import threading


def cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def thresholds(n_cpus: int) -> tuple[int, int]:
    """(plain, gzip): from this many bytes on disk, worker processes pay off; below it, starting them,
    finding cuts, shipping the columns back and joining them costs about what they save. gzip files
    are ~10-13x smaller than the JSON inside, hence their lower threshold. On two CPUs a load in one
    process already uses the second core (it scans its next buffer there: `slices.Scanner.scan_ahead`),
    and on two idle cores it won or tied, for 15-25% less CPU, up to ~200 MB of event-dense JSON
    (workers won by 7% at 250 MB), ~280 MB of real traces' JSON and ~42 MB of their gzip
    (docs/PERFORMANCE.md, "The worker threshold", round 11; bench/bench_workers.py). With more
    CPUs a load takes up to four workers: not measured here, so the thresholds of two busy CPUs
    before the scan ahead stay (64 MB, 8 MB)."""
    if n_cpus == 2:
        return 192 * 1024 * 1024, 24 * 1024 * 1024
    return 64 * 1024 * 1024, 8 * 1024 * 1024


PARALLEL_MIN_PLAIN, PARALLEL_MIN_GZIP = thresholds(cpus())


def big(size: int, compressed: bool) -> bool:
    """Is a file of this size worth worker processes?"""
    return size >= (PARALLEL_MIN_GZIP if compressed else PARALLEL_MIN_PLAIN)


def worker_count(info, workers: int | None) -> int:
    """Processes that decode the probed trace `info` (a TraceInfo): `workers` when given, else one
    per CPU (at most 4) for a big file, else this process alone."""
    if workers is not None:
        return max(1, int(workers))
    return min(cpus(), 4) if big(info.size, info.compressed) and cpus() > 1 else 1


# A pair on two CPUs: each trace read by one process, side by side, against each read in turn by two
# workers. The turn pays the workers' overhead (cuts, columns shipped back and joined) twice, the pair
# beside only once a side is done and the other is not: beside wins while the larger trace is at most
# this much larger (the real eager/compiled H100 pair, 140 MB and 112 MB of JSON: compared 1.15 s
# against 1.23-1.48 s in turn; docs/PERFORMANCE.md, "The worker threshold"). With more CPUs, a
# load's workers use them all, and the turn wins.
PAIR_BESIDE_RATIO = 1.5


def pair_beside(json_sizes: list[int]) -> bool:
    """Should a pair of traces of these JSON sizes load side by side, one process each, even when
    one is big enough for workers? (Two below the threshold always do: `worker_count`.)"""
    return (cpus() == 2 and len(json_sizes) == 2 and min(json_sizes) > 0
            and max(json_sizes) <= PAIR_BESIDE_RATIO * min(json_sizes))


# what the fork server imports once, so that each worker it forks starts ready
PRELOAD = ["kerneldiff.core.ingest.source", "kerneldiff.core.ingest.workers", "kerneldiff.core.ingest.loader",
           "multiprocessing.connection", "kerneldiff.core.ingest.shm"]


def mp_context():
    """fork is instant but unsafe once threads run (a UI, an inflater): use a fork server then."""
    import multiprocessing as mp   # here: deciding whether workers are worth it needs none of it

    methods = mp.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return mp.get_context("fork")
    if "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        start_tracker()
        return ctx
    return mp.get_context("spawn")


def start_tracker() -> None:
    """Start multiprocessing's resource tracker, which the fork server starts first, with the real
    stderr. The tracker hands its process `sys.stderr.fileno()`; under a Textual app sys.stderr is
    a capture whose fileno() is -1, the start then fails ("bad value(s) in fds_to_keep") and every
    big load in the explorer fell back to reading in one process. Swapped back at once (the
    tracker starts in a few ms), and only if nothing else has replaced sys.stderr meanwhile."""
    from multiprocessing import resource_tracker

    err = sys.stderr
    try:
        usable = err.fileno() >= 0
    except Exception:   # no descriptor at all: the tracker leaves stderr out by itself
        usable = True
    if usable:
        resource_tracker.ensure_running()
        return
    sys.stderr = sys.__stderr__
    try:
        resource_tracker.ensure_running()
    finally:
        if sys.stderr is sys.__stderr__:
            sys.stderr = err


def prepare() -> None:
    """Start the worker machinery ahead of the first big load. A UI, whose threads make fork
    unsafe, calls this at startup (from a background thread: it blocks until the fork server
    has imported the reader, ~0.3 s); otherwise its first big load pays that."""
    ctx = mp_context()
    if ctx.get_start_method() == "forkserver":
        p = ctx.Process(target=_started, daemon=True)
        p.start()
        p.join()


def _started() -> None:
    """The first child of the fork server: starting it is what starts the server."""
