"""Load a trace into a TraceModel: read → columns → join → classify → phases → layers.

Big files are decoded by worker processes: this process reads (or inflates) the file straight
into shared-memory slots, two per worker so a worker always has its next run waiting, each slot
a run of whole events cut at a boundary. Workers return each run's numpy columns through the
same slot; runs are joined in file order and names renumbered, so the model is the same as a
single-process load. Workers skip invalid events like the single-process reader does; a run
whose cut was not a real boundary (it ends inside a string) makes the whole load start again in
this process, whose reader backs off boundary by boundary.

Progress is reported as (fraction 0..1, stage, bytes read, bytes total). Reading the file is
~90% of the work, so it owns 0..0.9 of the bar; the analysis stages share the rest.
Cancellation: pass a `threading.Event`; the loader checks it between runs of events.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import multiprocessing.connection as mpc
from multiprocessing import shared_memory  # imported here: a forked worker must not import
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from kerneldiff.core.analysis import attribution
from kerneldiff.core.analysis import layers
from kerneldiff.core.analysis import phases
from kerneldiff.core.errors import LoadCancelled, TraceError
from kerneldiff.core.model import (ANNOTATION_COLUMNS, CPU_OP_COLUMNS, KERNEL_COLUMNS, LAUNCH_COLUMNS, PYTHON_COLUMNS,
                    Table, TraceModel)
from kerneldiff.core.ingest.probe import TraceInfo, _gpu_name, _truthy, _vendor, probe
from kerneldiff.core.ingest import scan
from kerneldiff.core.ingest.reader import RUN, Columns, EventReader, decode_run, read_columns
from kerneldiff.core.strings import StringTable

if TYPE_CHECKING:
    from kerneldiff.core.analysis.classify import Classifier

Progress = Callable[[float, str, int, int], Any]

READ_SHARE = 0.9
# From this many bytes on disk, worker processes pay off: measured on 2 cores, a 64 MB trace
# loads in ~0.33 s either way, 100 MB in 0.38 s with workers and 0.53 s without. gzip files are
# ~10x smaller than the JSON inside, hence their lower threshold.
PARALLEL_MIN_PLAIN = 64 * 1024 * 1024
PARALLEL_MIN_GZIP = 8 * 1024 * 1024
SCAN_MIN_PLAIN = 256 * 1024 * 1024   # from here on the compiled scanner reads (see _scan_worth)
SCAN_MIN_GZIP = 32 * 1024 * 1024
SLOTS_PER_WORKER = 2
SLOT = RUN + 2                       # '[' + a run of events + ']' (the largest slot)
MIN_RUN = 2 * 1024 * 1024            # smaller runs: a file is cut in ~16, so both workers start
                                     # early and the tail this process decodes itself is short


def _info_from_meta(info: TraceInfo, meta: dict[str, Any]) -> None:
    """Fill probe fields the head could not see (metadata written after traceEvents)."""
    devs = meta.get("deviceProperties")
    if not info.device and isinstance(devs, list):
        devs = [d for d in devs if isinstance(d, dict)]
        info.device_count = len(devs)
        info.device = dict(devs[0]) if devs else {}
    if info.vendor == "other" or not info.gpu:
        info.vendor = _vendor(meta, info.device)
        info.gpu, info.gpu_source = _gpu_name(info.vendor, info.device)
    if info.with_stack is None:
        info.with_stack = _truthy(meta.get("with_stack"))
    if info.record_shapes is None:
        info.record_shapes = _truthy(meta.get("record_shapes"))
    if not info.distributed and isinstance(meta.get("distributedInfo"), dict):
        d = meta["distributedInfo"]
        info.distributed = {k: d[k] for k in ("rank", "world_size", "backend") if k in d}
    for k, v in meta.items():
        if k.endswith("_version") and not isinstance(v, (dict, list)):
            info.runtime.setdefault(k, v)
    info.metadata_complete = bool(info.device)


class _Fallback(Exception):
    """The parallel path cannot finish this file; load it in this process instead."""


class _Read:
    """Everything reading produced: columns of runs in file order, each with its string list."""

    def __init__(self) -> None:
        self.chunks: list[tuple[list[str], dict[str, dict[str, np.ndarray]]]] = []
        self.events = self.dropped = self.negative_dur = 0
        self.meta: dict[str, Any] = {}
        self.truncated_at: int | None = None

    def count(self, col: Columns) -> None:
        self.events += col.events
        self.dropped += col.dropped
        self.negative_dur += col.negative_dur


def load(path: str | os.PathLike, *, progress: Progress | None = None, cancel=None,
         classifier: Classifier | None = None, registry: str | None = None,
         info: TraceInfo | None = None, use_cache: bool = False, workers: int | None = None) -> TraceModel:
    """Load one trace. Raises TraceError (bad input) or LoadCancelled.

    use_cache: reuse / store the loaded model in the user cache (see kerneldiff.core.ingest.cache).
    workers: decoding processes; None = one per CPU for big files, 0 or 1 = this process only.
    """
    t0 = time.perf_counter()
    path = os.fspath(path)
    info = info or probe(path)
    if info.kind == "aie":
        raise TraceError(path, "this is an AMD AIE (NPU) trace: open it with `kerneldiff aie`")
    if classifier is None:
        from kerneldiff.core.analysis.classify import Classifier

        classifier = Classifier.load(registry)

    def report(frac: float, stage: str, done: int, total: int) -> None:
        if cancel is not None and cancel.is_set():
            raise LoadCancelled(path)
        if progress is not None and progress(frac, stage, done, total) is False:
            raise LoadCancelled(path)

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
    size = max(info.size, 1)
    shown = [0.0]

    def read_progress(done: int, total: int) -> None:
        if (done, total) == (0, 1):  # queued behind another load for the worker processes
            report(shown[0], "waiting for a free core", 0, info.size)
            return
        # monotonic even when a parallel read gives up and one process starts over
        shown[0] = max(shown[0], READ_SHARE * min(done, size) / size)
        report(shown[0], "reading", done, total)

    gc_was = gc.isenabled()
    gc.disable()  # millions of small allocations, no cycles: the collector would only slow us down
    try:
        n = _worker_count(info, workers)
        read = None
        if n > 1:
            try:
                read = _read_parallel(path, n, read_progress, _slot_size(info), _scan_worth(info))
            except _Fallback:
                read = None
        if read is None:
            read = _read_sequential(path, read_progress, _scan_worth(info))
    finally:
        if gc_was:
            gc.enable()
    _info_from_meta(info, read.meta)
    report(READ_SHARE, "indexing", info.size, info.size)
    model = _build_model(path, info, read, classifier)
    if read.truncated_at is not None:
        model.warnings.append(
            f"file ends early (truncated at decompressed byte {read.truncated_at}): "
            f"kept the {read.events} complete events before it")
    report(0.93, "phases", info.size, info.size)
    phases.assign(model)
    report(0.96, "layers", info.size, info.size)
    layers.segment(model, classifier)
    attribution.quality_warnings(model, classifier)
    model.load_seconds = time.perf_counter() - t0
    if key is not None:
        from kerneldiff.core.ingest import cache

        cache.put(key, model)
    report(1.0, "done", info.size, info.size)
    return model


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _worker_count(info: TraceInfo, workers: int | None) -> int:
    if workers is not None:
        return max(1, int(workers))
    return min(_cpus(), 4) if _big(info) and _cpus() > 1 else 1


def _big(info: TraceInfo) -> bool:
    """Worth worker processes."""
    return info.size >= (PARALLEL_MIN_GZIP if info.compressed else PARALLEL_MIN_PLAIN)


def _scan_worth(info: TraceInfo) -> bool:
    """Worth the compiled scanner: loading it costs a process ~0.35 s (numba's import and its
    cache; ~8 s to compile once per install), it saves ~1.9 s of CPU per GB: a 100 MB trace
    measured 0.74 s with it and 0.44 s without."""
    return info.size >= (SCAN_MIN_GZIP if info.compressed else SCAN_MIN_PLAIN)


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
                self._free = max(_cpus(), 1)
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


# --- reading in this process -------------------------------------------------------------------

def _read_sequential(path: str, progress: Callable[[int, int], None], fast: bool) -> _Read:
    col, reader = read_columns(path, progress, fast)
    out = _Read()
    out.chunks.append((col.strings, col.arrays()))
    out.count(col)
    out.meta = reader.meta
    out.truncated_at = reader.truncated_at
    return out


# --- reading with worker processes ------------------------------------------------------------

def _mp_context():
    """fork is instant but unsafe once threads run (a UI, an inflater): use a fork server then."""
    methods = mp.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return mp.get_context("fork")
    if "forkserver" in methods:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["kerneldiff.core.ingest.reader", "kerneldiff.core.ingest.loader"])
        return ctx
    return mp.get_context("spawn")


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


def prepare() -> None:
    """Start the worker machinery ahead of the first big load. A UI, whose threads make fork
    unsafe, calls this at startup (from a background thread: it blocks until the fork server
    has imported the reader, ~0.3 s); otherwise its first big load pays that. The fork server's
    first child loads the compiled scanner, which compiles it the first time after install
    (~8 s) in that process rather than in the first big load. The server itself does not keep
    it: workers forked from a server holding numba made a pair of 100 MB loads 0.35 s slower."""
    ctx = _mp_context()
    if ctx.get_start_method() == "forkserver":
        p = ctx.Process(target=scan.warm, daemon=True)
        p.start()
        p.join()


def _worker_main(shm_name: str, slot_size: int, cmd, res, parent: int, inherited: list, fast: bool = True) -> None:
    """Decode runs of events placed in shared memory. After each run, send its columns (and
    the names first seen in it), so the transfer overlaps with decoding; then the counters."""
    for conn in inherited:  # a forked worker holds copies of the parent's pipe ends: drop them,
        conn.close()        # or it would never see the parent go away
    gc.disable()
    shm = shared_memory.SharedMemory(name=shm_name)
    col = Columns()
    sent = 0
    try:
        while True:
            while not cmd.poll(1.0):
                if not _alive(parent):  # the loading process was killed: nobody will read
                    return
            msg = cmd.recv()
            if msg is None:
                break
            slot, end, idx = msg
            base = slot * slot_size
            buf = shm.buf
            try:
                for events in decode_run(buf, base, base + end, fast=fast):
                    col.add(events)
                    del events
            except ValueError:
                res.send(("bad", idx))
                continue
            res.send(("done", (slot, idx, _pack(col.arrays(), buf, base, slot_size), col.strings[sent:])))
            sent = len(col.strings)
        res.send(("result", (col.events, col.dropped, col.negative_dur)))
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    except BaseException as e:  # anything unexpected: the parent falls back to one process
        try:
            res.send(("error", f"{type(e).__name__}: {e}"))
        except (OSError, ValueError):
            pass
    finally:
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
        ctx = _mp_context()
        self.slot = slot
        self.shms, self.procs, self.cmds, self.res = [], [], [], []
        self.free: list[list[int]] = []
        self.strings: list[list[str]] = []      # per worker: its name ids -> names
        self.runs: list[tuple[int, int, dict]] = []   # (run index, worker, columns)
        self.counts: list[tuple[int, int, int] | None] = []
        try:
            for _ in range(n):
                shm = shared_memory.SharedMemory(
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
        """Handle worker messages; raises _Fallback when a run failed or a worker died."""
        waiting = [c for c, n in zip(self.res, self.counts) if n is None]
        for conn in mpc.wait(waiting, timeout):
            w = self.res.index(conn)
            try:
                kind, value = conn.recv()
            except (EOFError, OSError):
                raise _Fallback("a decoding process died") from None
            if kind == "done":
                slot, idx, layout, new_strings = value
                self.runs.append((idx, w, _unpack(layout, self.shms[w].buf, slot * self.slot)))
                self.free[w].append(slot)
                self.strings[w].extend(new_strings)
            elif kind == "result":
                self.counts[w] = value
            else:
                raise _Fallback(f"run {value} did not decode ({kind})")

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


def _slot_size(info: TraceInfo) -> int:
    json_bytes = info.size * (10 if info.compressed else 1)   # gzip'd JSON shrinks ~10x
    return min(SLOT, max(MIN_RUN, json_bytes // 16) + 2)


def _read_parallel(path: str, n: int, progress: Callable[[int, int], None], slot: int = SLOT,
                   fast: bool = True) -> _Read:
    n = _budget.acquire(n, lambda: progress(0, 1))
    try:
        return _read_with_workers(path, n, progress, slot, fast)
    finally:
        _budget.release(n)


def _read_with_workers(path: str, n: int, progress: Callable[[int, int], None], slot: int,
                       fast: bool = True) -> _Read:
    try:
        pool = _Pool(n, slot, fast)   # before the reader: its gzip thread would make fork unsafe
    except (OSError, ValueError, ImportError) as e:  # no /dev/shm, process limits, ...
        raise _Fallback(str(e)) from None
    reader = None
    finished = False
    try:
        # the workers load the scanner while this process reads; here it would cost ~0.35 s
        # for the short tail
        reader = EventReader(path, fast=False)
        local = Columns()            # the tail of the file, decoded here
        local_runs: list[tuple[int, dict]] = []
        idx = 0

        def wait() -> None:
            progress(reader.src.consumed, reader.src.size)
            pool.poll(0.05)

        while True:
            w, slot = pool.take_slot(wait)
            base = slot * pool.slot
            view = pool.shms[w].buf[base:base + pool.slot]
            try:
                end = reader.fill_run(view)
            finally:
                view.release()
            if end is None:
                pool.free[w].append(slot)
                break
            if end < 0:
                raise _Fallback("an event is bigger than a run")
            pool.cmds[w].send((slot, end, idx))
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
    out = _Read()
    runs = [(i, pool.strings[w], cols) for i, w, cols in pool.runs]
    runs += [(i, local.strings, cols) for i, cols in local_runs]
    runs.sort(key=lambda t: t[0])
    out.chunks = [(strings, cols) for _, strings, cols in runs]
    for events, dropped, negative in pool.counts:
        out.events += events
        out.dropped += dropped
        out.negative_dur += negative
    out.count(local)
    out.meta = reader.meta
    out.truncated_at = reader.truncated_at
    return out


# --- model ----------------------------------------------------------------------------------

def _merge(read: _Read) -> tuple[StringTable, dict[str, dict[str, np.ndarray]]]:
    """Join runs in file order. String ids are renumbered in sorted order, so the model does not
    depend on how the file was split between processes."""
    if not read.chunks:
        return StringTable(), Columns().arrays()
    seen: dict[str, None] = {}
    for strings, _ in read.chunks:
        seen.update(dict.fromkeys(strings))
    table = StringTable(sorted(seen))
    remaps: dict[int, np.ndarray] = {}
    for strings, _ in read.chunks:
        if id(strings) not in remaps:
            remaps[id(strings)] = np.fromiter((table.get(s) for s in strings), np.int32, len(strings))
    out: dict[str, dict[str, np.ndarray]] = {}
    groups = read.chunks[0][1].keys() if read.chunks else ()
    for g in groups:
        out[g] = {}
        for c in read.chunks[0][1][g]:
            parts = []
            for strings, cols in read.chunks:
                a = cols[g][c]
                parts.append(remaps[id(strings)][a] if c == "name" and len(a) else a)
                cols[g][c] = None  # free as we go
            out[g][c] = np.concatenate(parts) if len(parts) > 1 else parts[0]
    read.chunks = []
    return table, out


def _build_model(path: str, info: TraceInfo, read: _Read, classifier: Classifier) -> TraceModel:
    strings, cols = _merge(read)
    k = Table(KERNEL_COLUMNS, cols["k"])
    order = np.argsort(k.ts, kind="stable")
    k = k.take(order)
    model = TraceModel(
        path=path, info=info, strings=strings, kernels=k,
        cpu_ops=Table(CPU_OP_COLUMNS, cols["c"]), launches=Table(LAUNCH_COLUMNS, cols["l"]),
        python=Table(PYTHON_COLUMNS, cols["p"]), annotations=Table(ANNOTATION_COLUMNS, cols["a"]),
        categories=list(classifier.categories), rules=[], dropped_events=read.dropped)
    if read.dropped:
        model.warnings.append(f"{read.dropped} malformed events skipped (missing or invalid ph/ts/dur/name)")
    if read.negative_dur:
        model.warnings.append(f"{read.negative_dur} events had a negative duration; counted as 0")
    _classify(model, classifier)
    attribution.link(model)
    return model


def _classify(model: TraceModel, classifier: Classifier) -> None:
    """Classify each distinct kernel name once, then broadcast to rows."""
    k = model.kernels
    if len(k) == 0:
        return
    uniq, inverse = np.unique(k.name, return_inverse=True)
    names = [model.strings[int(i)] for i in uniq]
    cats, rules = classifier.classify_names(names)
    cat_index = {c: i for i, c in enumerate(model.categories)}
    rule_index: dict[str, int] = {}
    cat_ids = np.empty(len(uniq), dtype=np.int16)
    rule_ids = np.empty(len(uniq), dtype=np.int32)
    for j, (c, r) in enumerate(zip(cats, rules)):
        if c not in cat_index:
            cat_index[c] = len(model.categories)
            model.categories.append(c)
        cat_ids[j] = cat_index[c]
        if r not in rule_index:
            rule_index[r] = len(model.rules)
            model.rules.append(r)
        rule_ids[j] = rule_index[r]
    k.cat = cat_ids[inverse]
    k.rule = rule_ids[inverse]
