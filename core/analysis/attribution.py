"""Who launched a kernel: kernel → runtime launch (correlation) → cpu_op (External id) → Python stack.

Joins are vectorised with sorted keys + searchsorted; the Python stack is resolved only when a
user asks for one kernel, walking `Python parent id` with a guard against cycles.
"""

from __future__ import annotations

import numpy as np

from kerneldiff.core.model import TraceModel
from kerneldiff.core.numbers import distinct, small_unique, stable_argsort

try:   # the stream-overlap pass in C, beside the timeline's gap scan; numpy otherwise, the same figure
    from kerneldiff.core.analysis import _gapscan
except ImportError:
    _gapscan = None


def _lookup(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row in `keys` holding each wanted value (first occurrence), -1 where absent or wanted < 0."""
    out = np.full(len(wanted), -1, dtype=np.int64)
    if len(keys) == 0 or len(wanted) == 0:
        return out
    lo, hi = int(keys.min()), int(keys.max())
    if hi - lo < 8 * (len(keys) + len(wanted)) + 4096:
        # ids spanning little (correlation and External ids count up): a table indexed by id, not a
        # search of every wanted value (250k kernels against 300 launch calls: ~5 -> ~1.5 ms)
        ids, first = np.unique(keys, return_index=True)
        table = np.full(hi - lo + 1, -1, dtype=np.int64)
        table[ids - lo] = first
        ok = (wanted >= max(lo, 0)) & (wanted <= hi)
        out[ok] = table[wanted[ok] - lo]
        return out
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    pos = np.searchsorted(sk, wanted, side="left")
    pos_c = np.minimum(pos, len(sk) - 1)
    hit = (pos < len(sk)) & (sk[pos_c] == wanted) & (wanted >= 0)
    out[hit] = order[pos_c[hit]]
    return out


def link(model: TraceModel) -> None:
    k = model.kernels
    # Only launches with a correlation can be joined; several runtime calls can share a
    # correlation on some ROCm versions, the first one (in file order) is the launch.
    k.launch = _lookup(model.launches.corr, k.corr)
    ext = k.ext.copy()
    has_launch = k.launch >= 0
    missing = (ext < 0) & has_launch
    ext[missing] = model.launches.ext[k.launch[missing]]
    k.ext = ext
    k.cpu_op = _lookup(model.cpu_ops.ext, ext)
    todo = np.nonzero((k.cpu_op < 0) & has_launch)[0]
    if len(todo) and len(model.cpu_ops):
        # once per launch call: a graph launch's kernels (thousands) share one
        calls, each = small_unique(k.launch[todo], len(model.launches))
        k.cpu_op[todo] = _enclosing_ops(model, calls)[each]


ENCLOSING_LOOKBACK = 8  # nested ops start after their parents: the innermost is among the last few


def _enclosing_ops(model: TraceModel, launches: np.ndarray) -> np.ndarray:
    """Innermost cpu_op on the launching thread that encloses each launch (for traces whose
    External ids do not join, e.g. older Kineto where kernels carry the correlation instead)."""
    c, L = model.cpu_ops, model.launches
    out = np.full(len(launches), -1, dtype=np.int64)
    lt, ltid = L.ts[launches], L.tid[launches]
    for tid in distinct(ltid).tolist():  # a handful of threads: loop them, vectorise inside
        ops = np.nonzero(c.tid == tid)[0]
        if len(ops) == 0:
            continue
        ops = ops[np.argsort(c.ts[ops], kind="stable")]
        ts, ends = c.ts[ops], c.ts[ops] + c.dur[ops]
        mine = np.nonzero(ltid == tid)[0]
        j = np.searchsorted(ts, lt[mine], side="right") - 1
        found = np.full(len(mine), -1, dtype=np.int64)
        for back in range(ENCLOSING_LOOKBACK):
            q = j - back
            ok = (found < 0) & (q >= 0)
            qq = np.maximum(q, 0)
            hit = ok & (ends[qq] >= lt[mine])
            found[hit] = ops[qq[hit]]
        left = np.nonzero(found < 0)[0]
        if len(left):
            # launched by an operator that first ran more than a few children (an autograd node
            # after its ops): one sweep with a stack of open operators finds the innermost exactly
            found[left] = _innermost_open(ops, ts, ends, lt[mine][left])
        out[mine] = found
    return out


def _innermost_open(ops: np.ndarray, ts: np.ndarray, ends: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each time in `at`, the latest-starting of `ops` (sorted by start `ts`) still open then
    (end ≥ the time), or -1."""
    order = np.argsort(at, kind="stable")
    out = np.full(len(at), -1, dtype=np.int64)
    stack: list[int] = []
    i, n = 0, len(ops)
    tsl, endl = ts.tolist(), ends.tolist()
    for w in order.tolist():
        t = float(at[w])
        while i < n and tsl[i] <= t:
            while stack and endl[stack[-1]] < tsl[i]:
                stack.pop()
            stack.append(i)
            i += 1
        while stack and endl[stack[-1]] < t:
            stack.pop()
        out[w] = ops[stack[-1]] if stack else -1
    return out


def launch_time(model: TraceModel) -> np.ndarray:
    """CPU time at which each kernel was launched; NaN where the launch is unknown. A trace recorded
    without runtime events still links kernels to their operator (External id): the operator's
    window bounds the launch: it happened inside the operator and before the kernel started, so the
    latest such time stands for it (an operator can be a compiled region that began before the
    pass's own entry: its start would place a graph replay's kernels in the pass before). Passes and
    layers then read the same with and without runtime events."""
    k = model.kernels
    t = np.full(len(k), np.nan)
    ok = k.launch >= 0
    t[ok] = model.launches.ts[k.launch[ok]]
    by_op = ~ok & (k.cpu_op >= 0)
    if by_op.any():
        op = k.cpu_op[by_op]
        c = model.cpu_ops
        t[by_op] = np.maximum(c.ts[op], np.minimum(c.ts[op] + c.dur[op], k.ts[by_op]))
    return t


def enclosing(ts: np.ndarray, dur: np.ndarray, t: float, among: np.ndarray | None = None) -> np.ndarray:
    """Rows whose [ts, ts+dur] contains t (and `among`, a boolean mask, holds), outermost first. A
    mask, not a row list: intersecting row lists hashes every event of the thread (45 ms a call on
    the 35k-kernel Llama trace, asked for each kernel detail the explorer opens)."""
    inside = (ts <= t) & (ts + dur >= t)
    sel = np.nonzero(inside if among is None else inside & among)[0]
    return sel[np.lexsort((-dur[sel], ts[sel]))] if len(sel) else sel


def cpu_op_stack(model: TraceModel, row: int) -> list[str]:
    """Names of the cpu_ops enclosing the launch of kernel `row`, outermost first."""
    k = model.kernels
    li = int(k.launch[row])
    if li < 0:
        i = int(k.cpu_op[row])
        return [model.strings[int(model.cpu_ops.name[i])]] if i >= 0 else []
    t = float(model.launches.ts[li])
    c = model.cpu_ops
    rows = enclosing(c.ts, c.dur, t, c.tid == model.launches.tid[li])
    return [model.strings[int(c.name[r])] for r in rows]


def python_stack(model: TraceModel, row: int, limit: int = 64) -> list[str]:
    """Python frames around the launch of kernel `row`, innermost first ([] without with_stack)."""
    p = model.python
    if len(p) == 0:
        return []
    k = model.kernels
    li = int(k.launch[row])
    if li >= 0:
        t, tid = float(model.launches.ts[li]), int(model.launches.tid[li])
    else:
        i = int(k.cpu_op[row])
        if i < 0:
            return []
        t, tid = float(model.cpu_ops.ts[i]), int(model.cpu_ops.tid[i])
    rows = enclosing(p.ts, p.dur, t, p.tid == tid)
    if len(rows) == 0:  # some writers put Python events on their own pid/tid
        rows = enclosing(p.ts, p.dur, t)
    if len(rows) == 0:
        return []
    # innermost frame = last of the enclosing ones; then follow parent ids (cycle-safe)
    cache = model.__dict__.setdefault("_pyid_index", {})
    if "order" not in cache:
        cache["order"] = np.argsort(p.pyid, kind="stable")
        cache["sorted"] = p.pyid[cache["order"]]
    order, sk = cache["order"], cache["sorted"]
    frames: list[str] = []
    seen: set[int] = set()
    r = int(rows[-1])
    while r >= 0 and len(frames) < limit and r not in seen:
        seen.add(r)
        frames.append(model.strings[int(p.name[r])])
        parent = int(p.parent[r])
        if parent < 0:
            break
        pos = int(np.searchsorted(sk, parent))
        r = int(order[pos]) if pos < len(sk) and sk[pos] == parent else -1
    return frames


# Kernels of one stream may overlap a little in real traces (programmatic dependent launch starts
# the next kernel's prologue early; clock skew): 0.02% of the kernel time at most in the shipped
# traces. Overlap above this share is not a stream's work but broken timestamps.
OVERLAP_SHARE = 0.05


# Timestamps are µs in 64-bit floats: exact to 1/4 µs at today's epoch µs (1.7e15), but a trace
# whose clock reads beyond 2^52 µs loses whole microseconds, silently, in every gap and busy sum.
TS_RESOLUTION = 0.5


def _stream_key(k) -> np.ndarray:
    return k.device.astype(np.int64) * (1 << 32) + (k.stream.astype(np.int64) & 0xFFFFFFFF)


def _stream_overlap(k) -> float:
    """µs of kernel time that overlaps earlier kernels of the same device and stream: in one pass
    in C (`_gapscan.stream_overlap`: ~2.4 ms at 250k kernels, the stream ids included) where it is
    built, else numpy (~8 ms)."""
    if _gapscan is None or len(k) == 0:
        return _stream_overlap_numpy(k)
    key = _stream_key(k)
    lo, span = int(key.min()), int(key.max()) - int(key.min()) + 1
    sid = small_unique(key - lo, span)[1] if span < 1 << 62 else np.unique(key, return_inverse=True)[1]
    order = None if bool((k.ts[1:] >= k.ts[:-1]).all()) else np.argsort(k.ts, kind="stable")
    return _gapscan.stream_overlap(np.ascontiguousarray(k.ts, dtype=np.float64),
                                   np.ascontiguousarray(k.dur, dtype=np.float64),
                                   np.ascontiguousarray(sid.reshape(-1), dtype=np.int64), order, int(sid.max()) + 1)


def _stream_overlap_numpy(k) -> float:
    """`_stream_overlap` by sorting every column by stream: the reference the C pass is held to."""
    key = _stream_key(k)
    # kernel rows come in time order: then a stable sort by key alone is the same order (a radix
    # sort where the keys span little)
    order = stable_argsort(key) if bool((k.ts[1:] >= k.ts[:-1]).all()) else np.lexsort((k.ts, key))
    key, ts, end, dur = key[order], k.ts[order], (k.ts + k.dur)[order], k.dur[order]
    cuts = np.flatnonzero(key[1:] != key[:-1]) + 1
    over = 0.0
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(key)]):
        if hi - lo < 2:
            continue
        reach = np.maximum.accumulate(end[lo:hi - 1])        # how far the earlier kernels ran
        over += float(np.clip(reach - ts[lo + 1:hi], 0.0, dur[lo + 1:hi]).sum())
    return over


def _kernels_sharing_a_launch(model: TraceModel) -> tuple[int, int] | None:
    """(kernels, launches) where one plain launch call (cudaLaunchKernel, hipModuleLaunchKernel, ...)
    is joined to more than one kernel; a graph launch runs many kernels and is not counted."""
    k, launches = model.kernels, model.launches
    has = k.launch >= 0
    if not has.any():
        return None
    n = np.bincount(k.launch[has], minlength=len(launches))
    many = np.flatnonzero(n > 1)
    if not len(many):
        return None
    # each call's name read once per distinct name (a decode trace's hundreds of graph launches share one)
    names = launches.name[many].tolist()
    graph = {i: "graph" in model.strings[i].lower() for i in set(names)}
    plain = [r for r, i in zip(many.tolist(), names) if not graph[i]]
    return (int(n[plain].sum()), len(plain)) if plain else None


def quality_warnings(model: TraceModel, classifier) -> None:
    """Trace-quality warnings a user should see before trusting a comparison."""
    k = model.kernels
    w = model.warnings
    if len(k) == 0:
        w.append("no GPU kernels in this trace")
        return
    total = float(k.dur.sum())
    if "Other" in model.categories and total > 0:
        other = float(k.dur[k.cat == model.categories.index("Other")].sum()) / total
        if other > 0.10:
            w.append(f"{other:.0%} of kernel time is unclassified (Other)")
    from kerneldiff.core.analysis.cut_work import cut_work, prewindow_mask

    cut = cut_work(model)
    if cut is not None:
        w.append(f"{cut.kernels:,} kernels ({cut.time_us / 1000:.2f} ms) were {cut.why}: comparisons leave them out"
                 + (f" with the {cut.passes} pass(es) they begin" if cut.passes else ""))
    rest = ~prewindow_mask(model)
    linked = float((k.launch[rest] >= 0).mean()) if rest.any() else 1.0
    if linked < 0.9:
        # say which is missing: the kernels' correlation ids, or the runtime launch calls they name
        with_corr = float((k.corr[rest] >= 0).mean()) if rest.any() else 1.0
        why = ("no CUDA/HIP runtime launch events recorded" if len(model.launches) == 0 else
               "correlation ids missing" if with_corr < 0.9 else
               "their correlation ids name no recorded launch call")
        w.append(f"only {linked:.0%} of kernels link to a CPU launch ({why})")
    shared = _kernels_sharing_a_launch(model)
    if shared:
        w.append(f"{shared[0]:,} kernels share {shared[1]:,} single-kernel launch call(s) (one correlation id for "
                 "several kernels, outside any graph launch): their launching operators, and what is read from "
                 "them, are not to be trusted")
    reach = float(np.abs(k.ts).max())
    step = float(np.spacing(reach))
    if step > TS_RESOLUTION:
        w.append(f"timestamps reach {reach:.3g} µs, where a 64-bit float resolves only {step:g} µs: "
                 "busy and idle time, gaps and the timeline are rounded to that (each duration is exact)")
    over = _stream_overlap(k)
    if total > 0 and over / total > OVERLAP_SHARE:
        w.append(f"kernels on one stream overlap for {over / total:.0%} of the kernel time: a stream runs its "
                 "kernels in turn, so the timestamps are wrong; time summed over kernels counts the overlap "
                 "(busy and idle time count it once)")
    if len(model.python) == 0:
        w.append("no Python stacks (trace recorded without with_stack)")
    if len(model.cpu_ops) and not bool((model.cpu_ops.dims >= 0).any()):
        w.append("no operator input shapes (trace recorded without record_shapes): no FLOPs, GEMM or attention "
                 "shapes, and passes' phases are not read from their token counts")
