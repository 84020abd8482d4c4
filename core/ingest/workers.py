"""Reading a big trace with worker processes: this process reads (or inflates) the file straight
into shared-memory slots, two per worker so a worker always has its next run waiting, each slot a
run of whole events cut at a boundary. Workers return each run's numpy columns through the same
slot; runs are joined in file order and names renumbered (build.py), so the model is the same as a
single-process load. A run whose cut was not a real boundary makes the load raise `ParallelFallback`,
and the loader starts again in one process. Loads in one process share one worker budget.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from kerneldiff.core.ingest.probe import TraceInfo
from kerneldiff.core.ingest.columns import Columns
from kerneldiff.core.ingest.slices import RUN, decode_run
from kerneldiff.core.ingest.read_result import ReadResult
# when workers pay off and how they start
from kerneldiff.core.processes.forkserver import cpus, mp_context
from kerneldiff.core.ingest.source import EventReader
from kerneldiff.core.ingest.shm import Segment

Progress = Callable[[float, str, int, int], Any]


def _connection():
    """multiprocessing's connection module, imported by the parent when it starts workers, not by
    every load: a trace small enough for one process never needs it. Forked workers find it
    imported; the fork server preloads it."""
    import multiprocessing.connection as mpc

    return mpc


SLOTS_PER_WORKER = 2
SLOT = RUN + 2                       # '[' + a run of events + ']' (the largest slot)
MIN_RUN = 2 * 1024 * 1024            # smaller runs: a file is cut in ~16, so both workers start
                                     # early and the tail this process decodes itself is short


class ParallelFallback(Exception):
    """The parallel path cannot finish this file; load it in this process instead."""


class _Budget:
    """Decoding processes this process may run at once: one per CPU. Two loads at once (an app
    opening both traces) would otherwise run twice as many CPU-bound processes as cores, which
    thrash each other's caches; the second load waits for the first one's workers instead, and
    the first trace is ready in half the time."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._free: int | None = None

    def acquire(self, want: int, tick: Callable[[], None]) -> int:
        with self._cond:
            if self._free is None:
                self._free = max(cpus(), 1)
            while self._free == 0:
                self._cond.wait(0.1)
                tick()  # progress / cancellation while waiting
            got = min(want, self._free)
            self._free -= got
            return got

    def release(self, n: int) -> None:
        with self._cond:
            self._free += n
            self._cond.notify_all()


_budget = _Budget()


# --- reading with worker processes ------------------------------------------------------------

def _pack(cols: dict[str, dict[str, np.ndarray]], buf, base: int, size: int):
    """Write a run's columns into its own slot (its JSON is decoded, the space is free): the
    parent copies them out, cheaper than pickling them through a pipe. Returns their layout;
    the columns themselves when they do not fit."""
    layout, off = [], 0
    for g, cs in cols.items():
        for c, a in cs.items():
            n = a.nbytes
            if off + n > size:
                return cols
            buf[base + off:base + off + n] = memoryview(a).cast("B")
            layout.append((g, c, a.dtype.str, off, len(a)))
            off += -(-n // 8) * 8  # keep every column 8-byte aligned
    return layout


def _unpack(layout, buf, base: int) -> dict[str, dict[str, np.ndarray]]:
    if isinstance(layout, dict):
        return layout
    cols: dict[str, dict[str, np.ndarray]] = {}
    for g, c, dt, off, n in layout:
        cols.setdefault(g, {})[c] = np.frombuffer(buf, dtype=dt, count=n, offset=base + off).copy()
    return cols


class _Mapped:
    """A worker's private map of a plain trace file (runs are decoded where they lie, nothing
    is copied by the parent). Opened by path, so it is checked to be the very file the parent
    has open (device, inode, size, mtime); private and writable because decoding patches the
    bytes around a run, which must never reach the file."""

    def __init__(self, path: str, ident: tuple) -> None:
        import mmap

        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)   # a FIFO put there must not block
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != ident:
                raise ValueError("the file changed during the load")
            self.mm = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        self.key = (path, ident)

    def release(self, start: int, end: int) -> None:
        """Drop the pages of a decoded run (and the private copies of the patched ones): the
        worker's memory stays one run, not the file."""
        import mmap

        lo = start - start % mmap.PAGESIZE
        try:
            self.mm.madvise(mmap.MADV_DONTNEED, lo, min(end + 2, len(self.mm)) - lo)
        except (AttributeError, OSError, ValueError):
            pass


def _worker_main(shm_name: str, slot_size: int, cmd, res, parent: int, inherited: list, fast: bool = True) -> None:
    """Decode runs of events, placed in shared memory by the parent or, for plain files, read
    straight from the worker's own map of the file (see _Mapped). After each run, send its
    columns (and the names first seen in it), so the transfer overlaps with decoding; then the
    counters."""
    for conn in inherited:  # a forked worker holds copies of the parent's pipe ends: drop them,
        conn.close()        # or it would never see the parent go away
    gc.disable()
    shm = Segment(shm_name)
    col = Columns()
    sent = 0
    mapped: _Mapped | None = None
    try:
        while True:
            while not cmd.poll(1.0):
                if not _alive(parent):  # the loading process was killed: nobody will read
                    return
            msg = cmd.recv()
            if msg is None:
                break
            slot, run, idx = msg
            base = slot * slot_size
            try:
                if type(run) is int:   # '[' + events in the slot, ']' at index `run`
                    src, lo, hi = shm.buf, base, base + run
                else:                  # (path, identity, first event, end of the last)
                    path, ident, first, end = run
                    if mapped is None or mapped.key != (path, ident):
                        mapped = _Mapped(path, ident)
                    src, lo, hi = mapped.mm, first - 1, end
                for events in decode_run(src, lo, hi, fast=fast):
                    col.add(events)
                    del events
                if src is not shm.buf:
                    mapped.release(lo, hi)
            except (ValueError, OSError):
                res.send(("bad", idx))
                continue
            res.send(("done", (slot, idx, _pack(col.arrays(), shm.buf, base, slot_size), col.strings[sent:])))
            sent = len(col.strings)
        res.send(("result", (col.events, col.dropped, col.negative_dur, col.non_integer_ids, col.cut_names)))
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    except BaseException as e:  # anything unexpected: the parent falls back to one process
        try:
            res.send(("error", f"{type(e).__name__}: {e}"))
        except (OSError, ValueError):
            pass
    finally:
        if mapped is not None:
            try:
                mapped.mm.close()
            except BufferError:
                pass
        shm.close()


SHM_PREFIX = "kerneldiff-"


def _sweep_stale_segments() -> None:
    """Remove shared memory left by a kerneldiff process that was killed mid-load (its
    `finally` never ran); segments are named after the process that made them."""
    try:
        names = os.listdir("/dev/shm")
    except OSError:
        return
    for name in names:
        if not name.startswith(SHM_PREFIX):
            continue
        try:
            pid = int(name[len(SHM_PREFIX):].split("-")[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            try:
                os.unlink(os.path.join("/dev/shm", name))
            except OSError:
                pass
        except (ValueError, PermissionError, OSError):
            pass  # not ours to judge, or alive


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass
    return True


def _widen(conn) -> None:
    """1 MB pipe buffer (Linux): a run's columns (~3 MB) cross in a few writes, not fifty."""
    try:
        import fcntl

        fcntl.fcntl(conn.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (ImportError, OSError):
        pass


class _Pool:
    """Worker processes with shared-memory slots; owned by one load, torn down at its end."""

    def __init__(self, n: int, slot: int = SLOT, fast: bool = True) -> None:
        _sweep_stale_segments()
        ctx = mp_context()
        self.slot = slot
        self.shms, self.procs, self.cmds, self.res = [], [], [], []
        self.free: list[list[int]] = []
        self.strings: list[list[str]] = []      # per worker: its name ids -> names
        self.runs: list[tuple[int, int, dict]] = []   # (run index, worker, columns)
        self.counts: list[tuple[int, int, int, int, int] | None] = []
        try:
            for _ in range(n):
                shm = Segment(
                    name=f"{SHM_PREFIX}{os.getpid()}-{os.urandom(4).hex()}", create=True,
                    size=SLOTS_PER_WORKER * slot)
                self.shms.append(shm)
                cmd_r, cmd_w = ctx.Pipe(duplex=False)
                res_r, res_w = ctx.Pipe(duplex=False)
                _widen(res_r)
                # a forked child inherits every open pipe end; other start methods pass only args
                inherited = [cmd_w, res_r, *self.cmds, *self.res] if ctx.get_start_method() == "fork" else []
                p = ctx.Process(target=_worker_main, args=(shm.name, slot, cmd_r, res_w, os.getpid(), inherited, fast),
                                daemon=True, name="kerneldiff-decode")
                p.start()
                cmd_r.close()
                res_w.close()
                self.procs.append(p)
                self.cmds.append(cmd_w)
                self.res.append(res_r)
                self.free.append(list(range(SLOTS_PER_WORKER)))
                self.strings.append([])
                self.counts.append(None)
        except BaseException:
            self.close(finished=False)
            raise

    def poll(self, timeout: float | None) -> None:
        """Handle worker messages; raises ParallelFallback when a run failed or a worker died."""
        waiting = [c for c, n in zip(self.res, self.counts) if n is None]
        for conn in _connection().wait(waiting, timeout):
            w = self.res.index(conn)
            try:
                kind, value = conn.recv()
            except (EOFError, OSError):
                raise ParallelFallback("a decoding process died") from None
            if kind == "done":
                slot, idx, layout, new_strings = value
                self.runs.append((idx, w, _unpack(layout, self.shms[w].buf, slot * self.slot)))
                self.free[w].append(slot)
                self.strings[w].extend(new_strings)
            elif kind == "result":
                self.counts[w] = value
            else:
                raise ParallelFallback(f"run {value} did not decode ({kind})")

    def take_slot(self, wait: Callable[[], None]) -> tuple[int, int]:
        while True:
            w = max(range(len(self.free)), key=lambda i: len(self.free[i]))
            if self.free[w]:
                return w, self.free[w].pop()
            wait()

    def finish(self, tick: Callable[[], None]) -> None:
        """Tell the workers there is no more work and collect everything they still send."""
        for c in self.cmds:
            c.send(None)
        while any(n is None for n in self.counts):
            tick()
            self.poll(0.05)

    def close(self, finished: bool) -> None:
        for c in self.cmds:
            try:
                c.close()
            except OSError:
                pass
        for p in self.procs:
            if not finished:  # cancelled or failed: do not wait for runs nobody will read
                p.terminate()
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
        for c in self.res:
            c.close()
        for shm in self.shms:
            try:
                shm.close()
            except BufferError:  # a view is still alive somewhere; the mapping dies with it
                pass
            try:
                shm.unlink()
            except FileNotFoundError:
                pass


def slot_size(info: TraceInfo) -> int:
    json_bytes = info.size * (10 if info.compressed else 1)   # gzip'd JSON shrinks ~10x
    return min(SLOT, max(MIN_RUN, json_bytes // 16) + 2)


def read_parallel(path: str, n: int, progress: Callable[[int, int], None], slot: int = SLOT,
                   fast: bool = True, idle: Callable[[], Any] | None = None) -> ReadResult:
    """Read with `n` worker processes. `idle`: work of the caller's run once, the first time
    this process waits for the workers (its time is then free)."""
    n = _budget.acquire(n, lambda: progress(0, 1))
    try:
        return _read_with_workers(path, n, progress, slot, fast, idle)
    finally:
        _budget.release(n)


def _read_with_workers(path: str, n: int, progress: Callable[[int, int], None], slot: int,
                       fast: bool = True, idle: Callable[[], Any] | None = None) -> ReadResult:
    try:
        pool = _Pool(n, slot, fast)   # before the reader: its gzip thread would make fork unsafe
    except (OSError, ValueError, ImportError) as e:  # no /dev/shm, process limits, ...
        raise ParallelFallback(str(e)) from None
    reader = None
    finished = False
    try:
        reader = EventReader(path, fast=fast)
        local = Columns()            # the tail of the file, decoded here
        local_runs: list[tuple[int, dict]] = []
        idx = 0

        pending = [idle] if idle is not None else []

        def wait() -> None:
            progress(reader.src.consumed, reader.src.size)
            if pending:
                pending.pop()()
            pool.poll(0.05)

        mapped = reader.mappable()   # plain file: workers map it, this process copies nothing
        while True:
            w, slot = pool.take_slot(wait)
            if mapped is not None:
                span = reader.next_span(pool.slot - 2)
                run = None if span is None else span if type(span) is int else (*mapped, *span)
            else:
                base = slot * pool.slot
                view = pool.shms[w].buf[base:base + pool.slot]
                try:
                    run = reader.fill_run(view)
                finally:
                    view.release()
            if run is None:
                pool.free[w].append(slot)
                break
            if type(run) is int and run < 0:
                raise ParallelFallback("an event is bigger than a run")
            pool.cmds[w].send((slot, run, idx))
            idx += 1
            progress(reader.src.consumed, reader.src.size)
            pool.poll(0)
        for events in reader.finish_batches():
            local.add(events)
            local_runs.append((idx, local.arrays()))
            idx += 1
        pool.finish(lambda: progress(reader.src.consumed, reader.src.size))
        finished = True
    finally:
        if reader is not None:
            reader.close()
        pool.close(finished)
    out = ReadResult()
    runs = [(i, pool.strings[w], cols) for i, w, cols in pool.runs]
    runs += [(i, local.strings, cols) for i, cols in local_runs]
    runs.sort(key=lambda t: t[0])
    out.chunks = [(strings, cols) for _, strings, cols in runs]
    for events, dropped, negative, non_integer, cut_names in pool.counts:
        out.events += events
        out.dropped += dropped
        out.negative_dur += negative
        out.non_integer_ids += non_integer
        out.cut_names += cut_names
    out.count(local)
    out.meta = reader.meta
    out.truncated_at = reader.truncated_at
    out.notes = reader.notes
    return out
