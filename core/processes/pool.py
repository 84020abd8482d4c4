"""A pool of forked processes for many independent pieces of work (the policy: the package's
docstring)."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor


def fork_pool(workers: int) -> ProcessPoolExecutor:
    """`workers` processes forked from this one: each inherits what was read before (the classifier),
    so a piece of work starts without reading it again."""
    import multiprocessing as mp

    return ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork"))
