"""How worker processes are started (the policy for when: the package's docstring), apart from the reader so that a UI can start the fork server
before its first frame without importing numpy and the reader into its own process (~70 ms of the
first frame when it did)."""

from __future__ import annotations

import os
import threading

# From this many bytes on disk, worker processes pay off: measured on 2 cores, a 64 MB trace
# loads in ~0.33 s either way, 100 MB in 0.38 s with workers and 0.53 s without. gzip files are
# ~10x smaller than the JSON inside, hence their lower threshold. Measured again on real and
# event-dense shapes (issue 31, bench/bench_workers.py), the threshold is kept, but the figures
# ask for a higher one: by CPU time the real 112/140 MB Llama traces and a dense 100 MB one should
# gain from workers on two free cores, yet in wall time, at a quiet hour (load ~2), one process won
# everywhere: 140 MB plain 0.48 against 0.72 s, 10.5 MB gzip 0.74 against 1.21 s, dense 100 MB
# 0.79 against 1.19 s, and pairs, whose sides then load side by side in one process each, the
# H100/H200 gzip pair 0.81 against 1.20 s; dense 200/300 MB 1.82/2.25 against 2.29/3.00 s. No
# second core was free on that shared machine; the break-even on two idle cores (the 1 GB traces
# gain: 653 MB/s) is not measured yet.
PARALLEL_MIN_PLAIN = 64 * 1024 * 1024
PARALLEL_MIN_GZIP = 8 * 1024 * 1024


def cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def big(size: int, compressed: bool) -> bool:
    """Is a file of this size worth worker processes?"""
    return size >= (PARALLEL_MIN_GZIP if compressed else PARALLEL_MIN_PLAIN)


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
        return ctx
    return mp.get_context("spawn")


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
