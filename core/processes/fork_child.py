"""One function run in a forked child while this process does other work (the policy for when:
the package's docstring); the first use, loading one trace while this process loads the other.

A trace below the worker threshold (`forkserver.big`) is decoded by one process on one core, so a
pair of them loaded in turn leaves the second core idle for the whole load. Forking a child for
side B and sending its model back (a 60 MB trace's model: ~14 MB; its arrays out of band through
an in-memory file, see `_dump`) halves the wall time of the pair on two cores. Only for callers
on the main thread with no other threads running (the CLI): fork copies one thread, and a lock
held elsewhere would stay held in the child.
"""

from __future__ import annotations

import gc
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


def _memfd() -> int | None:
    try:
        return os.memfd_create("kerneldiff-beside", os.MFD_CLOEXEC)
    except (AttributeError, OSError):   # not Linux, or no memfd: everything goes through the pipe
        return None


def _dump(reply, mem: int | None) -> bytes:
    """The reply for the pipe: the whole pickle, or (with `mem`) a small pickle whose array
    buffers are written to `mem` one after another, and their sizes."""
    if mem is None:
        return pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(reply, protocol=5, buffer_callback=buffers.append)
    sizes = []
    with os.fdopen(os.dup(mem), "wb") as f:
        for b in buffers:
            raw = b.raw()
            sizes.append(raw.nbytes)
            f.write(raw)
    return pickle.dumps(("mem", sizes, head), protocol=5)


def _load(data: bytes, mem: int | None):
    first = pickle.loads(data)
    if not (type(first) is tuple and len(first) == 3 and first[0] == "mem"):
        return first
    import mmap

    _, sizes, head = first
    total = sum(sizes)
    if not total:   # nothing to map (no arrays, or only empty ones)
        return pickle.loads(head, buffers=[bytearray() for _ in sizes])
    # private and writable: the arrays behave like any others, and the file goes with its map
    m = mmap.mmap(mem, total, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    view, buffers, at = memoryview(m), [], 0
    for n in sizes:
        buffers.append(view[at:at + n])
        at += n
    return pickle.loads(head, buffers=buffers)


class Beside:
    """`fn()` running in a child process; `result()` returns its value or raises its TraceError.
    `then(value)`, if given, runs in the child after its value is sent (work this process need
    not wait for, such as storing the value): `result()` returns without waiting for it, and the
    child is reaped by a thread once it ends (`join` waits for that)."""

    def __init__(self, fn: Callable[[], Any], then: Callable[[Any], Any] | None = None) -> None:
        read, write = os.pipe()
        # the model's arrays travel out of band through an in-memory file both processes hold:
        # the child writes them once and leaves, this process maps them (no pickling of 14 MB of
        # columns into one string, no pipe to drain, no copy on unpickling)
        mem = _memfd()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: run, send one pickled reply, leave without cleanup handlers
            # no cyclic garbage collection in a short-lived child: a collection walks every object
            # the parent had, and each one it touches copies its page from the parent
            gc.disable()
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
                data = _dump(reply, mem)
            except BaseException as e:  # noqa: BLE001
                data = pickle.dumps(("crash", f"cannot send the model back: {type(e).__name__}: {e}"))
            try:
                with os.fdopen(write, "wb") as f:
                    f.write(data)
            except BaseException:  # noqa: BLE001 - the parent sees a short read
                code = 1
            if then is not None and reply[0] == "ok" and code == 0:
                try:
                    then(reply[1])
                except BaseException:  # noqa: BLE001 - nobody waits for it: its work is lost, nothing else
                    pass
            os._exit(code)
        os.close(write)
        self.pid = pid
        self._read = read
        self._mem = mem
        self._then = then is not None
        self._reaper: threading.Thread | None = None

    def ended(self) -> bool:
        """Has the child sent its reply, or died? (Never blocks; True once `result` has run.)"""
        if not self.pid:
            return True
        import select

        try:
            return bool(select.select([self._read], [], [], 0)[0])
        except (OSError, ValueError):
            return True

    def result(self) -> Any:
        try:
            with os.fdopen(self._read, "rb") as f:
                data = f.read()
        except BaseException:
            self._reap()
            raise
        if not data:
            self._reap()
            self._close_mem()
            raise RuntimeError("the child process ended without a reply")
        # unpickling makes many objects at once: a collection it sets off walks this whole heap
        collecting = gc.isenabled()
        gc.disable()
        try:
            kind, value = _load(data, self._mem)
        finally:
            if collecting:
                gc.enable()
            self._close_mem()
            if self._then:   # the child goes on with `then`: reaped when it ends, by a thread
                pid, self.pid = self.pid, 0
                self._reaper = threading.Thread(target=_reap_pid, args=(pid,), name="kerneldiff-reap", daemon=True)
                self._reaper.start()
            else:
                self._reap()   # after unpickling: the child's exit (unmapping its memory) ran meanwhile
        if kind == "ok":
            return value
        if kind == "trace_error":
            raise TraceError(*value)
        raise RuntimeError(value)

    def join(self, timeout: float | None = None) -> None:
        """Wait for the child to have ended (after `then`, when there is one)."""
        if self._reaper is not None:
            self._reaper.join(timeout)
        elif self.pid:
            self._reap()

    def _close_mem(self) -> None:
        if self._mem is not None:
            os.close(self._mem)
            self._mem = None

    def cancel(self) -> None:
        """Stop the child (this side failed: its result is no longer wanted)."""
        if self.pid:   # 0 once reaped (and os.kill(0, ...) would signal this whole process group)
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.close(self._read)
        except OSError:
            pass
        self._reap()
        self._close_mem()

    def _reap(self) -> None:
        if self.pid:
            _reap_pid(self.pid)
            self.pid = 0


def _reap_pid(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
