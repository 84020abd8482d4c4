"""A pair's comparison computed ahead, in a forked child, while the explorer starts (Session.compare_ahead).

The child is forked before the explorer imports Textual (no thread runs yet). It reads the model
cache first:
* both models are there: it compares them (~0.3 s, about the explorer's own start) and sends the
  comparison back; the explorer waits for it and opens on it as on a stored one;
* otherwise it loads the pair as the CLI does (one process a trace, side by side, or workers in
  turn: `orchestration.load_pair_beside`), stores each model in the cache as it is ready, then
  compares and sends the comparison back. The explorer does not wait: its loads follow
  the child's progress (a `ProgressBoard` on shared memory) and read each model from the cache once
  the child has stored it, and its comparison of that phase is the child's. Either way the child
  stores the comparison after sending it (`Beside`'s `then`), for the next time. The explorer's own loads
  run in threads of one interpreter, the GIL between them: on two cores the real eager/compiled
  pair reached its comparison in ~2.4 s that way, against ~1.2 s for the CLI's processes.
A child that fails or is cancelled leaves the work to the explorer's own loads and comparison,
which then report any error themselves. Nothing is started where cache writing is off
(KERNELDIFF_CACHE_MAX=0); a cache that refuses a model (a full disk) costs a second read of
that trace, in the explorer.
"""

from __future__ import annotations

import os
import threading
import time
from functools import partial
from typing import TYPE_CHECKING, Any, Callable

from kerneldiff.core.errors import LoadCancelled, TraceError
from kerneldiff.core.processes.progress_board import COMPARING, LOADING, STORED, UNDECIDED, ProgressBoard

if TYPE_CHECKING:
    from kerneldiff.core.trace_session import Session

POLL = 0.02   # seconds between looks at the board: progress bars redraw ten times a second


class Ahead:
    """The child at work on session `s`'s pair in `phase`; its methods are this process's side."""

    def __init__(self, s: Session, phase: str) -> None:
        from kerneldiff.core.processes.fork_child import Beside

        self.phase = phase
        self.paths = list(s.paths)
        self.board = board = ProgressBoard(len(s.paths))
        self._lock = threading.Lock()
        self._done = False
        self._result = None

        def work() -> Any:
            from kerneldiff.core import orchestration
            from kerneldiff.core.ingest import cache

            _yield_to_the_explorer()

            # the CLI's policy, not the explorer's threads (this session is the child's copy): a
            # side's readings for the comparison computed where it is loaded, beside the other
            s.fork_pair = True
            if all(cache.has(p, s.classifier) for p in s.paths):
                board.decide(COMPARING)
                s.load_all()
                return s.compare(phase, keep=False), s.phases()   # the explorer opens on it
            board.decide(LOADING)
            s.side_by_side = False   # and workers for a big trace, as the CLI's
            if not orchestration.load_pair_beside(s, board.report, board.stored):
                for i in range(len(s.paths)):
                    s.load(i, partial(board.report, i))
                    board.stored(i)
            return s.compare(phase, keep=False), s.phases()

        def then(value) -> None:
            # sent back as it is (~10 ms to unpickle against ~80 ms to read the stored JSON back),
            # and stored once sent, for the next time this pair is opened
            s.keep_comparison(phase, value[0])

        self._beside = Beside(work, then)

    def plan(self) -> int:
        """COMPARING or LOADING once the child has looked at the cache; UNDECIDED if it ended before."""
        while True:
            plan = self.board.plan()
            if plan != UNDECIDED or self._beside.ended():
                return plan
            time.sleep(0.002)

    def finish(self):
        """Wait for the child's answer: (the comparison, the pair's phases), stored by the child
        once sent; or None (it failed or was cancelled: the caller compares the pair itself)."""
        with self._lock:
            if not self._done:
                self._done = True
                try:
                    self._result = self._beside.result()
                except (TraceError, RuntimeError, ValueError):
                    self._result = None
            return self._result

    def cancel(self) -> None:
        with self._lock:
            if not self._done:
                self._done = True
                self._beside.cancel()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the child to have ended (the comparison it sent is then stored)."""
        self._beside.join(timeout)

    def wait_stored(self, index: int, progress: Callable[[float, str, int, int], object] | None, cancel) -> None:
        """Until the child has stored trace `index` in the model cache, or has ended without (the
        caller then reads it itself), passing its progress on. Raises LoadCancelled (and stops the
        child) when `cancel` is set or `progress` returns False."""
        while True:
            state, fraction, stage, done, total = self.board.read(index)
            if (cancel is not None and cancel.is_set()) or \
                    (progress is not None and state != STORED and progress(fraction, stage, done, total) is False):
                self.cancel()
                raise LoadCancelled(self.paths[index])
            if state == STORED or self._done or self._beside.ended():
                return
            time.sleep(POLL)


def compare_ahead(s: Session, phase: str) -> Callable[[], bool] | None:
    """See `Session.compare_ahead`."""
    from kerneldiff.core import comparison_cache, orchestration
    from kerneldiff.core.processes.fork_child import can_fork

    if s.single or s.loaded or any(e is not None for e in s.errors) or not can_fork() or _cache_writing_off():
        return None
    key = orchestration.comparison_key(s, phase)
    if key is None or comparison_cache.entry_path(key).is_file():
        return None
    ahead = Ahead(s, phase)
    s._ahead = ahead   # after the fork: the child's session has none

    def wait() -> bool:
        if ahead.plan() == LOADING:
            return False     # the session's loads and comparison follow the child
        s._ahead = None
        got = ahead.finish()
        if got is None:
            return False
        s._received = (phase, *got)   # what `stored_comparison(phase)` answers, before the cache
        return True

    return wait


# The child's niceness. While the explorer imports Textual and draws its first frame (~0.3 s of one
# core), the child and its own child load: three processes on two cores, each got two thirds of one,
# and the first frame of the real eager/compiled pair came ~0.14 s later than without a child
# (medians of 9: 743 ms against 607 ms). At nice 4 (weight 423 against 1024) two such processes
# weigh less than the explorer, which then gets a core of its own (618 ms); they take the cores
# back as soon as the explorer waits, and the comparison came as soon (1.77 s against 1.73 s).
# Against other busy processes the loads keep 41% of a nice-0 process's share, not 10% as at nice 10.
NICE = 4


def _yield_to_the_explorer() -> None:
    try:
        os.nice(NICE)
    except (OSError, AttributeError):   # not permitted, or no nice here: run as the explorer does
        pass


def _cache_writing_off() -> bool:
    """KERNELDIFF_CACHE_MAX=0: the child could store no model, and the explorer's loads would read
    each trace again after it. (The cache module, numpy with it, is imported only when it is set.)"""
    if not os.environ.get("KERNELDIFF_CACHE_MAX", "").strip():
        return False
    from kerneldiff.core.ingest.cache import max_bytes

    return max_bytes() <= 0
