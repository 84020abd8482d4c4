"""How worker processes are started, apart from the reader so that a UI can start the fork server
before its first frame without importing numpy and the reader into its own process (~70 ms of the
first frame when it did)."""

from __future__ import annotations

import multiprocessing as mp
import threading

# what the fork server imports once, so that each worker it forks starts ready
PRELOAD = ["kerneldiff.core.ingest.source", "kerneldiff.core.ingest.workers", "kerneldiff.core.ingest.loader",
           "multiprocessing.connection", "multiprocessing.shared_memory"]


def mp_context():
    """fork is instant but unsafe once threads run (a UI, an inflater): use a fork server then."""
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
