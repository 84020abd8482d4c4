"""Load one trace in a forked child while this process loads the other.

A trace below the worker threshold (`workers._big`) is decoded by one process on one core, so a
pair of them loaded in turn leaves the second core idle for the whole load. Forking a child for
side B and pickling its model back (a 60 MB trace's model: ~11 MB, ~25 ms both ways) halves the
wall time of the pair on two cores. Only for callers on the main thread with no other threads
running (the CLI): fork copies one thread, and a lock held elsewhere would stay held in the child.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
from typing import Any, Callable

from kerneldiff.core.errors import TraceError


def can_fork() -> bool:
    return (hasattr(os, "fork") and threading.current_thread() is threading.main_thread()
            and threading.active_count() == 1)


def _die_with(parent: int) -> None:
    """Linux: the child is killed when its parent dies (a CLI killed by a timeout must not leave a
    load running on its own)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:   # the parent died before prctl took effect
        os._exit(1)


class Beside:
    """`fn()` running in a child process; `result()` returns its value or raises its TraceError."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        read, write = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: run, send one pickled reply, leave without cleanup handlers
            os.close(read)
            _die_with(parent)
            code = 0
            try:
                reply = ("ok", fn())
            except TraceError as e:
                reply = ("trace_error", (e.path, e.problem))
            except BaseException as e:  # noqa: BLE001 - reported to the parent, which re-raises
                reply = ("crash", f"{type(e).__name__}: {e}")
            try:
                data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as e:  # noqa: BLE001
                data = pickle.dumps(("crash", f"cannot send the model back: {type(e).__name__}: {e}"))
            try:
                with os.fdopen(write, "wb") as f:
                    f.write(data)
            except BaseException:  # noqa: BLE001 - the parent sees a short read
                code = 1
            os._exit(code)
        os.close(write)
        self.pid = pid
        self._read = read

    def result(self) -> Any:
        try:
            with os.fdopen(self._read, "rb") as f:
                data = f.read()
        finally:
            self._reap()
        if not data:
            raise RuntimeError("the process loading the second trace ended without a reply")
        kind, value = pickle.loads(data)
        if kind == "ok":
            return value
        if kind == "trace_error":
            raise TraceError(*value)
        raise RuntimeError(value)

    def cancel(self) -> None:
        """Stop the child (this side failed: its result is no longer wanted)."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.close(self._read)
        except OSError:
            pass
        self._reap()

    def _reap(self) -> None:
        if self.pid:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self.pid = 0
