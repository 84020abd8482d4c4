"""Wall clock, GPU idle and launch overhead of one trace: what the user waits for, not only what the
kernels sum to.

Definitions (µs; an *activity* is a row of the kernel table: a kernel, memcpy or memset):

- span: from the first activity's start to the last activity's end in a window (the whole trace, a
  phase, one forward pass, one layer of one pass);
- busy: the length of the union of the window's activity intervals over all streams;
- idle = span − busy: the gaps in which no stream runs anything. A gap belongs to the activity that
  ends it (the first to start after it; activities that start in the same ns end it together, and a
  test below holds when it holds for any of them, so no order of ties changes a figure) and is
  counted as exactly one of
  - sync: the host was waiting on the GPU: the gap overlaps a synchronising runtime call
    (`cudaStreamSynchronize`, `cudaDeviceSynchronize`, `cudaEventSynchronize`, `hip…` alike, and the
    blocking copies `cudaMemcpy`, `hipMemcpyWithStream`…), or it follows a device-to-host copy (the
    host reads a result back, then decides what to launch);
  - launch_bound: the GPU waited for the launch: the activity's own runtime call began after the GPU
    went idle (HTA's "host wait"), or the activity started within `tolerance_us` of that call's
    return (a launch call so slow that the GPU ran dry while it was in it);
  - other: work was queued and the GPU still stood idle (a cross-stream event wait, the gaps inside a
    graph replay, dispatch latency between queued kernels);
- overlap: the per-stream busy times summed, minus busy: the time two or more streams ran at once
  (counted once per extra stream);
- launch statistics: the launch call's duration (`cudaLaunchKernel`, `cuLaunchKernelEx`,
  `cudaGraphLaunch`, `hipLaunchKernel`, `hipExtModuleLaunchKernel`, `hipGraphLaunch`…), the delay
  from its return to the start of the first activity it launched (clipped at 0, as HTA does), and the
  kernels that ran shorter than their own launch call took.

span, busy and idle of the whole trace are HTA's temporal breakdown ("kernel_time" and "idle_time"
of a rank) on the same events. Times are handled as integer nanoseconds from the trace's first
activity, so sums are exact and do not depend on the order of the events. Every figure is computed
for all windows of a kind at once (sort by start inside each window, a running maximum of the ends:
a gap is a start beyond every earlier end): one pass over the rows in C (`_gapscan.c`, where built),
else ~10 numpy passes (`_Scan._scan_numpy`, the reference the C is tested against).

All GPU activity of a model is one timeline: a file that holds several devices is read one device at
a time (kerneldiff.core.analysis.devices), and streams are told apart by (device, stream).
"""

from __future__ import annotations

import re
from dataclasses import field, fields, replace
from functools import cache, cached_property
from typing import Any

import numpy as np

from kerneldiff.core.analysis.cut_work import cut_mask
from kerneldiff.core.analysis.pass_extent import in_pass_mask
from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use: a bare `info` uses few
from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.model import KIND_KERNEL, KIND_MEMCPY, PHASE_ID, PHASES, TraceModel
from kerneldiff.core.numbers import distinct, small_unique, stable_argsort

try:   # the gap scan in C (setup.py builds it where a compiler is at hand); numpy otherwise, same figures
    from kerneldiff.core.analysis import _gapscan
except ImportError:
    _gapscan = None

LAUNCH_TOLERANCE_US = 10.0

# kernel launch calls of the CUDA runtime and driver and of HIP (with their _v2/_ptsz variants)
LAUNCH_RE = re.compile(r"^(cuda|cu|hip)(Ext)?(Module)?(Ext)?Launch\w*Kernel|^(cuda|cu|hip)GraphLaunch")
GRAPH_RE = re.compile(r"GraphLaunch")
# calls after which the host waits for the GPU: every *Synchronize, and the blocking copies
SYNC_RE = re.compile(r"^(cuda|cu|hip)\w*Synchronize|^(cuda|cu|hip)Memcpy(?!\w*Async)\w*$")
DTOH_RE = LazyPattern(r"DtoH|D2H|Device\s*->\s*(Host|Pinned|Pageable)", re.IGNORECASE)

CAT_LAUNCH, CAT_SYNC, CAT_OTHER = 0, 1, 2
_NONE = np.iinfo(np.int64).max   # no kernel (yet): the first start of a launch call's kernels
# what a scan returns per window, in the order of _gapscan.c's output rows; the last two with `streams`
_SCAN_FIELDS = ("key", "first", "count", "span", "idle", "launch", "sync", "other", "gaps", "summed", "stream_busy")
_NS = 1000.0


@cache
def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def _flat(obj) -> dict[str, Any]:
    """`dataclasses.asdict` of the flat dataclasses here (numbers and strings): the same dict, without
    its recursion and deep copies (~5 ms for a comparison's timelines, ~200 windows)."""
    return {name: getattr(obj, name) for name in _names(type(obj))}


@dataclass
class Window:
    """GPU time in one window of a trace."""

    span_us: float = 0.0
    busy_us: float = 0.0
    idle_us: float = 0.0
    launch_bound_us: float = 0.0
    sync_us: float = 0.0
    other_us: float = 0.0
    overlap_us: float = 0.0      # two or more streams at once (per-stream busy summed − busy)
    kernel_us: float = 0.0       # the activities' durations summed (what kernel-time reports add up)
    # activities overlapping on one stream (summed − per-stream busy): with overlap_us, what the gap
    # ledger's overlap row counts (summed − busy)
    same_stream_overlap_us: float = 0.0
    kernels: int = 0             # activities (kernels, copies, memsets)
    gaps: int = 0                # idle gaps
    # the first activity's start, µs after the trace's first activity (cut work included): where
    # the window lies, so the time between passes can be measured (kerneldiff.core.compare.pass_basis)
    start_us: float = 0.0


@dataclass
class PassWindow(Window):
    """One forward pass (a TraceModel step) on its own: its activities only."""

    index: int = 0
    name: str = ""
    phase: str = "unknown"
    kind: str = "steady"         # steady | warmup | capture | compile (kerneldiff.core.analysis.pass_kinds)


@dataclass
class LayerIdle:
    """One layer over the passes of a window: what its kernels take against how long it lasts."""

    layer: int
    passes: int = 0
    span_us: float = 0.0         # summed over the passes: first to last kernel of the layer
    busy_us: float = 0.0
    idle_us: float = 0.0         # the gaps inside the layer
    launch_bound_us: float = 0.0
    sync_us: float = 0.0
    idle_median_us: float = 0.0  # per pass
    idle_max_us: float = 0.0     # the worst pass


@dataclass
class LaunchStats:
    launches: int = 0                   # launch calls that started a kernel in the window
    api_p50_us: float | None = None     # launch call duration
    api_p95_us: float | None = None
    delay_p50_us: float | None = None   # launch call's return -> first kernel it launched starts
    delay_p95_us: float | None = None
    kernels_launched: int = 0           # kernels started by a plain (non-graph) launch call
    kernels_shorter_than_launch: int = 0


@dataclass
class Timeline:
    phase: str                          # the window `whole` covers: "all" (the whole trace) or a phase
    whole: Window
    phases: dict[str, Window] = field(default_factory=dict)   # "all" and every phase present
    passes: list[PassWindow] = field(default_factory=list)    # the passes in `phase`, in trace order
    layers: list[LayerIdle] = field(default_factory=list)     # over the passes in `phase`
    launch: LaunchStats = field(default_factory=LaunchStats)
    devices: int = 0
    streams: int = 0
    tolerance_us: float = LAUNCH_TOLERANCE_US
    # GPU time in two or more passes at once (their first-to-last-activity intervals overlap: a
    # training step's queue runs deeper than one pass); summing the passes' spans would count it twice
    passes_overlap_us: float = 0.0

    def layer(self, index: int) -> LayerIdle | None:
        return next((l for l in self.layers if l.layer == index), None)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape (`a.timeline` of a comparison): the window's figures at the top level."""
        d: dict[str, Any] = {"phase": self.phase, **_flat(self.whole)}
        d["passes"] = [{"pass": p.index, "name": p.name, "phase": p.phase, "kind": p.kind,
                        **{k: v for k, v in _flat(p).items() if k not in ("index", "name", "phase", "kind")}}
                       for p in self.passes]
        d["phases"] = [{"phase": name, **_flat(w)} for name, w in self.phases.items()]
        d["layers"] = [_flat(l) for l in self.layers]
        d["launch"] = _flat(self.launch)
        d["kernels_shorter_than_launch"] = self.launch.kernels_shorter_than_launch
        d["devices"], d["streams"], d["tolerance_us"] = self.devices, self.streams, self.tolerance_us
        return d


def name_mask(model: TraceModel, names: np.ndarray, pattern: re.Pattern) -> np.ndarray:
    """names (string ids) matching a pattern, as a boolean array; one regex test per distinct name."""
    return name_masks(model, names, [pattern])[0]


def name_masks(model: TraceModel, names: np.ndarray, patterns: list[re.Pattern]) -> list[np.ndarray]:
    """[name_mask(model, names, p) for p in patterns], the distinct names found once."""
    if len(names) == 0:
        return [np.zeros(0, dtype=bool) for _ in patterns]
    if int(names.min()) < -1 or int(names.max()) >= len(model.strings):
        ids, inv = np.unique(names, return_inverse=True)
        ids = ids.tolist()
    else:   # ids from -1 (no name) up: told apart by a table the size of the string table, not a sort
        shifted, inv = small_unique(names.astype(np.int64) + 1, len(model.strings) + 1)
        ids = (shifted - 1).tolist()
    inv = inv.reshape(-1)
    text = [model.strings[int(i)] if i >= 0 else None for i in ids]
    return [np.array([t is not None and bool(p.search(t)) for t in text], dtype=bool)[inv] for p in patterns]


def merge_intervals(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals [s, e) as disjoint sorted intervals (the one copy: the ledger's host
    time and the collectives' overlap use it too)."""
    if len(s) == 0:
        return s, e
    if not bool((s[1:] >= s[:-1]).all()):   # kernel rows usually come in time order already
        o = np.argsort(s, kind="stable")
        s, e = s[o], e[o]
    cm = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > cm[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], len(s)) - 1
    return s[starts], cm[ends]


def _streams(device: np.ndarray, stream: np.ndarray) -> tuple[np.ndarray, int]:
    """(each row's stream id, the number of devices). A stream is (device, stream): stream ids
    restart on every device. Ids number the pairs in sorted order, as np.unique(axis=0) does, but
    from one integer per pair (an O(n) table when the pairs span little: the 2-D unique sorted
    structured rows, ~0.14 s for 257k kernels)."""
    if len(device) == 0:
        return np.zeros(0, np.int64), 0
    d, s = np.asarray(device, dtype=np.int64), np.asarray(stream, dtype=np.int64)
    d0, s0 = int(d.min()), int(s.min())
    dw, sw = int(d.max()) - d0 + 1, int(s.max()) - s0 + 1
    if dw * sw >= 1 << 62:
        uniq, inv = np.unique(np.stack([d, s], axis=1), axis=0, return_inverse=True)
        return inv.reshape(-1).astype(np.int64), int(len(np.unique(uniq[:, 0])))
    # (d - d0) * sw + (s - s0), one new array (one device, the usual case: s - s0)
    pair = np.subtract(s, s0)
    if dw > 1:
        pair += (d - d0) * sw
    uniq, inv = small_unique(pair, dw * sw)
    return inv, int(len(distinct(uniq // sw)))


def _ns(ts: np.ndarray, dur: np.ndarray, t0: float) -> tuple[np.ndarray, np.ndarray]:
    """Start and end as integer ns from t0: round((ts - t0) * 1000) and the start plus
    round(max(dur, 0) * 1000) (np.round is rint), in place: two new arrays where the plain
    expressions made nine, each a fresh buffer whose pages fault in on first touch (~0.4 ms apiece
    at 257k rows)."""
    x = np.subtract(ts, t0, dtype=np.float64)
    x *= _NS
    np.rint(x, out=x)
    s = x.astype(np.int64)
    np.maximum(dur, 0.0, out=x)
    x *= _NS
    np.rint(x, out=x)
    e = x.astype(np.int64)
    e += s
    return s, e


class _Scan:
    """One model's activities as integer ns, with what the gap classification needs."""

    def __init__(self, model: TraceModel, tolerance_us: float) -> None:
        k, L = model.kernels, model.launches
        self.model = model
        n = len(k)
        ts = k.ts
        self.t0 = float(ts.min()) if n else 0.0
        self.s, self.e = _ns(ts, k.dur, self.t0)
        if n > 1 and not bool(np.all(self.s[1:] >= self.s[:-1])):
            self.order = np.argsort(self.s, kind="stable")
        else:
            self.order = np.arange(n)
        self.tol = int(round(tolerance_us * _NS))
        self.launch = k.launch.astype(np.int64)
        self.kind = np.ascontiguousarray(k.kind, dtype=np.int8)   # as the C reads it (a view may be strided)
        # launch calls, in the same clock (launch rows are read only through kernels that link to them)
        self.l_s, self.l_e = _ns(L.ts, L.dur, self.t0)
        self.l_is_launch, graph, sync = name_masks(model, L.name, [LAUNCH_RE, GRAPH_RE, SYNC_RE])
        self.l_is_graph = graph & self.l_is_launch
        self.sync_s, self.sync_e = merge_intervals(self.l_s[sync], self.l_e[sync])
        self.dtoh = np.zeros(n, dtype=bool)
        cp = np.flatnonzero(k.kind == KIND_MEMCPY)
        if len(cp):
            self.dtoh[cp] = name_mask(model, k.name[cp], DTOH_RE)
        self.stream_id, self.devices = _streams(k.device, k.stream)
        self.streams = int(self.stream_id.max()) + 1 if n else 0

    @cached_property
    def serial(self) -> bool:
        """No two activities of one stream overlap (a stream runs its work in turn): then any
        window's busy time per stream is its activities' summed durations, and the numpy scan needs
        no second scan per stream. In (stream, start) order, each must start at or after the one
        before it ends (ends never precede starts, so that one's end is the running maximum)."""
        by_stream = self.order[stable_argsort(self.stream_id[self.order])] if len(self.order) else self.order
        same = self.stream_id[by_stream[1:]] == self.stream_id[by_stream[:-1]]
        return not bool((same & (self.s[by_stream[1:]] < self.e[by_stream[:-1]])).any())

    # --- the one primitive ----------------------------------------------------------------------
    use_c = _gapscan is not None   # False: the numpy scan (the reference; tests set it per instance)

    def scan(self, rows: np.ndarray, key: np.ndarray, classify: bool = True,
             streams: bool = False) -> dict[str, np.ndarray]:
        """Windows over `rows` (kernel rows in time order) grouped by `key` (one int per row).

        Returns, per window in ascending key order: key, first (ns), count, span, idle, and with
        `classify` the idle split into launch-bound, sync and other, plus the gap count; with
        `streams` also summed (the activities' durations) and stream_busy (each stream's busy time,
        summed over the streams). int64 ns throughout."""
        if self.use_c:
            return self._scan_c(rows, key, classify, streams)
        return self._scan_numpy(rows, key, classify, streams)

    def _scan_c(self, rows, key, classify, streams) -> dict[str, np.ndarray]:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        key = np.ascontiguousarray(key, dtype=np.int64)
        tables = (self.s, self.e, self.stream_id, self.launch, self.l_s, self.l_e, self.dtoh, self.sync_s, self.sync_e)
        out = _gapscan.scan(rows, key, *tables, self.tol, self.streams, classify, streams)
        if out is None:   # keys not ascending: stable, so time order stays inside each window
            o = stable_argsort(key)
            out = _gapscan.scan(rows[o], key[o], *tables, self.tol, self.streams, classify, streams)
        out = np.frombuffer(out, dtype=np.int64).reshape(len(_SCAN_FIELDS), -1)
        return {name: out[i] for i, name in enumerate(_SCAN_FIELDS[:None if streams else -2])}

    def _scan_numpy(self, rows, key, classify, streams, gaps: list | None = None) -> dict[str, np.ndarray]:
        """`gaps`: a list that receives each chunk's classified gaps: (start, end) in ns, CAT_*, the
        window's index and the row of the activity that ends the gap (the first to start then)."""
        if len(rows) == 0:
            z = np.zeros(0, dtype=np.int64)
            return {name: z for name in _SCAN_FIELDS[:None if streams else -2]}
        if len(key) > 1 and not bool(np.all(key[1:] >= key[:-1])):
            o = stable_argsort(key)   # stable: time order inside each window
            rows, key = rows[o], key[o]
        first = np.ones(len(rows), dtype=bool)
        first[1:] = key[1:] != key[:-1]
        dense = np.cumsum(first) - 1
        n_win = int(dense[-1]) + 1
        s, e = self.s[rows], self.e[rows]
        width = int(e.max()) + 1          # s, e >= 0: every window's times fit in [0, width)
        out = {name: np.zeros(n_win, dtype=np.int64) for name in ("span", "idle", "launch", "sync", "other", "gaps")}
        # shift window w by w * width so that one running maximum never crosses a window's start;
        # in chunks of windows when the shifted times would not fit in int64
        per_chunk = max(1, (1 << 62) // max(width, 1) - 1)
        starts = np.flatnonzero(first)
        bounds = np.append(starts, len(rows))
        for c0 in range(0, n_win, per_chunk):
            c1 = min(n_win, c0 + per_chunk)
            a, b = int(bounds[c0]), int(bounds[c1])
            self._chunk(rows[a:b], s[a:b], e[a:b], dense[a:b] - c0, first[a:b], width, out, c0, classify, gaps)
        r = {"key": key[starts], "first": s[starts], "count": np.diff(bounds), **out}
        if streams:
            # float sums of integers, exact below 2**53 ns (104 days)
            r["summed"] = np.bincount(dense, weights=e - s, minlength=n_win).astype(np.int64)
            if self.serial:   # each stream's busy time is its summed durations
                r["stream_busy"] = r["summed"]
            else:             # the same windows split by stream, without classification
                nst = max(self.streams, 1)
                sub = self._scan_numpy(rows, key.astype(np.int64) * nst + self.stream_id[rows], False, False)
                pos = np.searchsorted(r["key"], sub["key"] // nst)
                r["stream_busy"] = np.bincount(pos, weights=sub["span"] - sub["idle"],
                                               minlength=n_win).astype(np.int64)
        return r

    def _chunk(self, rows, s, e, w, first, width, out, w0, classify, gaps=None) -> None:
        shift = w.astype(np.int64) * width
        ss, es = s + shift, e + shift
        cm = np.maximum.accumulate(es)
        last = np.append(np.flatnonzero(first)[1:], len(rows)) - 1
        n_win = int(w[-1]) + 1
        out["span"][w0:w0 + n_win] = cm[last] - ss[first]
        prev = np.empty_like(cm)
        prev[0] = 0
        prev[1:] = cm[:-1]
        gap = ss - prev
        gap[first] = 0
        np.maximum(gap, 0, out=gap)
        out["idle"][w0:w0 + n_win] = np.bincount(w, weights=gap, minlength=n_win).astype(np.int64)
        if not classify:
            return
        g, cat = self._classify(rows, s, ss, es, cm, prev, shift, gap)
        if len(g) == 0:
            return
        wg, gg = w[g], gap[g]
        if gaps is not None:
            gaps.append((prev[g] - shift[g], s[g], cat, wg + w0, rows[g]))
        for name, c in (("launch", CAT_LAUNCH), ("sync", CAT_SYNC), ("other", CAT_OTHER)):
            m = cat == c
            out[name][w0:w0 + n_win] = np.bincount(wg[m], weights=gg[m], minlength=n_win).astype(np.int64)
        out["gaps"][w0:w0 + n_win] = np.bincount(wg, minlength=n_win)

    def _classify(self, rows, s, ss, es, cm, prev, shift, gap) -> tuple[np.ndarray, np.ndarray]:
        """(positions in `rows` of the activities that end a gap, each gap's CAT_*), for `_chunk`'s
        shifted times and running maximum."""
        g = np.flatnonzero(gap > 0)
        if len(g) == 0:
            return g, np.zeros(0, dtype=np.int8)
        g_start = prev[g] - shift[g]          # back in the trace's clock
        g_end = s[g]
        cat = np.full(len(g), CAT_OTHER, dtype=np.int8)
        # Activities that start in the same ns after a gap all end it, and several may end at the
        # running maximum before it: each test below asks whether any of them qualifies, so that
        # which one a sort put first (ties broken by file order or by ids) changes nothing.
        idx = np.arange(len(rows))
        tie_first = np.maximum.accumulate(np.where(np.r_[True, ss[1:] != ss[:-1]], idx, 0))
        closers = np.flatnonzero(gap[tie_first] > 0)      # every activity that ends a gap
        # launch-bound: the activity's own call began after the GPU went idle, or it started within
        # the tolerance after that call returned
        li = self.launch[rows[closers]]
        has = li >= 0
        c_start = prev[tie_first[closers]] - shift[closers]
        lb_c = np.zeros(len(closers), dtype=bool)
        lig = li[has]
        lb_c[has] = (self.l_s[lig] >= c_start[has]) | (s[closers][has] <= self.l_e[lig] + self.tol)
        lb_at = np.zeros(len(rows), dtype=bool)
        lb_at[tie_first[closers[lb_c]]] = True
        cat[lb_at[g]] = CAT_LAUNCH
        # sync / host waits win over launch-bound: after a sync every next kernel waits for its launch
        sync = np.zeros(len(g), dtype=bool)
        if len(self.sync_s):
            j = np.searchsorted(self.sync_s, g_end, side="left") - 1
            ok = j >= 0
            sync[ok] = self.sync_e[j[ok]] > g_start[ok]
        # an activity whose end opened the gap (one that reached the running maximum before it) is
        # a D2H copy; the running maximum is constant from its first holder to the gap
        d2h = self.dtoh[rows] & (es == cm)
        level = np.cumsum(np.r_[True, cm[1:] != cm[:-1]]) - 1
        d2h_level = np.bincount(level, weights=d2h, minlength=int(level[-1]) + 1) > 0
        sync |= d2h_level[level[g - 1]]
        cat[sync] = CAT_SYNC
        return g, cat

    def windows(self, rows: np.ndarray, key: np.ndarray, cls: type = Window) -> tuple[np.ndarray, list]:
        """(keys, a `cls` (Window or a subclass) per key) for rows grouped by key, overlap and summed
        durations included."""
        r = self.scan(rows, key, streams=True)
        wins = []
        for span, idle, lb, sync, other, stream_busy, summed, count, gaps, first in zip(
                *(r[name].tolist() for name in ("span", "idle", "launch", "sync", "other", "stream_busy",
                                                "summed", "count", "gaps", "first"))):
            busy = span - idle
            wins.append(cls(span_us=span / _NS, busy_us=busy / _NS, idle_us=idle / _NS,
                            launch_bound_us=lb / _NS, sync_us=sync / _NS, other_us=other / _NS,
                            overlap_us=max(stream_busy - busy, 0) / _NS, kernel_us=summed / _NS,
                            kernels=count, gaps=gaps, start_us=first / _NS,
                            same_stream_overlap_us=(summed - max(stream_busy, busy)) / _NS))
        return r["key"], wins

    def launch_stats(self, rows: np.ndarray) -> LaunchStats:
        k = self.model.kernels
        call_dur = self.l_e - self.l_s
        if self.use_c:   # one pass, a first start per launch row
            first = np.full(len(call_dur), _NONE, dtype=np.int64)
            plain, shorter = _gapscan.launch_firsts(np.ascontiguousarray(rows, dtype=np.int64), self.kind, self.launch,
                                                    self.s, self.e, self.l_is_launch, self.l_is_graph, call_dur,
                                                    first, KIND_KERNEL)
            calls = np.flatnonzero(first != _NONE)
            first = first[calls]
        else:
            li = self.launch[rows]
            ok = (k.kind[rows] == KIND_KERNEL) & (li >= 0)
            ok[ok] = self.l_is_launch[li[ok]]
            rows, li = rows[ok], li[ok]
            calls, inv = small_unique(li, len(self.l_s))   # launch rows: a table, not a sort
            first = np.full(len(calls), _NONE, dtype=np.int64)
            np.minimum.at(first, inv, self.s[rows])
            by_plain = ~self.l_is_graph[li]
            pr = rows[by_plain]
            plain = len(pr)
            shorter = int(np.count_nonzero(self.e[pr] - self.s[pr] < call_dur[li[by_plain]]))
        if len(calls) == 0:
            return LaunchStats()
        api = call_dur[calls] / _NS
        delay = np.maximum(first - self.l_e[calls], 0) / _NS
        qa, qd = np.percentile(api, [50, 95]), np.percentile(delay, [50, 95])
        return LaunchStats(launches=int(len(calls)), api_p50_us=float(qa[0]), api_p95_us=float(qa[1]),
                           delay_p50_us=float(qd[0]), delay_p95_us=float(qd[1]),
                           kernels_launched=int(plain), kernels_shorter_than_launch=int(shorter))


def timeline(model: TraceModel, phase: str = "all", tolerance_us: float = LAUNCH_TOLERANCE_US,
             keep_cut: bool = True) -> Timeline:
    """The timeline figures of one trace; `whole`, `passes`, `layers` and `launch` cover `phase`
    ("all": the whole trace; a phase: its activities, as the comparison's phase filter selects).
    keep_cut False leaves out work launched before the trace's window, as comparisons do
    (kerneldiff.core.analysis.cut_work); True times every activity recorded, as HTA does."""
    if phase not in ("all", *PHASES):
        raise ValueError(f"unknown phase {phase!r}")
    return model.memo(("timeline", phase, tolerance_us, keep_cut),
                      lambda: _timeline(model, phase, tolerance_us, keep_cut))


def whole_window(model: TraceModel, tolerance_us: float = LAUNCH_TOLERANCE_US) -> Window:
    """`timeline(model, "all", keep_cut=False).whole` alone (what `info` prints): the same scan of
    the same rows, without the phases', passes' and layers' windows (~40% of the timeline's time on
    a dense 60 MB trace). Taken from the full timeline when that is already computed."""
    full = model.__dict__.get("_memo", {}).get(("timeline", "all", tolerance_us, False))
    if full is not None:
        return full.whole
    return model.memo(("timeline_whole", tolerance_us), lambda: _whole(model, tolerance_us))


def _whole(model: TraceModel, tolerance_us: float) -> Window:
    sc = _Scan(model, tolerance_us)
    rows = sc.order[~cut_mask(model)[sc.order]]
    if len(rows) == 0:
        return Window()
    _, (whole,) = sc.windows(rows, np.zeros(len(rows), dtype=np.int64))
    return whole


def _passes_overlap(start: np.ndarray, end: np.ndarray, step: np.ndarray) -> float:
    """µs the passes' intervals (first start to last end of each) cover more than once: their
    spans summed minus the length of their union (integer ns underneath)."""
    if len(step) == 0:
        return 0.0
    # each pass's first start and last end: reduceat over the activities grouped by pass (ufunc.at
    # per element takes ~16 ms on a dense 60 MB trace's 1.3M activities)
    by = stable_argsort(step)
    firsts = np.concatenate(([0], np.flatnonzero(np.diff(step[by])) + 1))
    lo = np.minimum.reduceat(start[by].astype(np.int64), firsts)
    hi = np.maximum.reduceat(end[by].astype(np.int64), firsts)
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    # each interval adds what reaches past everything before it
    union = int(hi[0] - lo[0]) + int(np.maximum(hi[1:] - np.maximum(lo[1:], reach[:-1]), 0).sum())
    return (int((hi - lo).sum()) - union) / _NS


def _timeline(model: TraceModel, phase: str, tolerance_us: float, keep_cut: bool) -> Timeline:
    sc = _Scan(model, tolerance_us)
    model.memo(("queued_gaps",), lambda: _queued_gaps(sc))    # the fusion model's launch cost, same scan
    k = model.kernels
    rows = sc.order if keep_cut else sc.order[~cut_mask(model)[sc.order]]
    tl = Timeline(phase=phase, whole=Window(), devices=sc.devices, streams=sc.streams, tolerance_us=tolerance_us)
    if len(rows) == 0:
        tl.phases["all"] = Window()
        return tl
    _, (whole,) = sc.windows(rows, np.zeros(len(rows), dtype=np.int64))
    tl.phases["all"] = whole
    ph = k.phase[rows]
    if ph.min() == ph.max():   # one phase: its window is the whole trace's (the same rows)
        keys, wins = ph[:1].astype(np.int64), [replace(whole)]
    else:
        keys, wins = sc.windows(rows, ph.astype(np.int64))
    for p, w in zip(keys.tolist(), wins):
        tl.phases[PHASES[p]] = w
    sel = _in_phase(model, rows, phase)
    tl.whole = tl.phases.get(phase, Window())
    tl.launch = sc.launch_stats(sel)
    in_pass, key = _pass_windows(model, sel)
    steps = model.steps
    keys, wins = sc.windows(in_pass, key, PassWindow)
    for s, w in zip(keys.tolist(), wins):
        w.index = s
        if s < len(steps):
            w.name, w.phase, w.kind = steps[s].name, steps[s].phase, getattr(steps[s], "kind", "steady")
    tl.passes = wins
    tl.passes_overlap_us = _passes_overlap(sc.s[in_pass], sc.e[in_pass], k.step[in_pass])
    # layers: each (pass, layer) on its own, then summed per layer
    in_layer = in_pass[k.layer[in_pass] >= 0]
    if len(in_layer):
        width = int(k.layer[in_layer].max()) + 1
        r = sc.scan(in_layer, k.step[in_layer].astype(np.int64) * width + k.layer[in_layer])
        tl.layers = _layers(r, width)
    return tl


def _in_phase(model: TraceModel, rows: np.ndarray, phase: str) -> np.ndarray:
    return rows if phase == "all" else rows[model.kernels.phase[rows] == PHASE_ID[phase]]


def _pass_windows(model: TraceModel, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pass windows over `rows` (in time order): the rows a pass is measured on (the kernels
    launched inside its forward call, kerneldiff.core.analysis.pass_extent) and each one's pass.
    The one definition the timeline's passes and `launch_bound_closers(by_pass=True)` both read."""
    in_pass = rows[in_pass_mask(model)[rows]]
    return in_pass, model.kernels.step[in_pass].astype(np.int64)


def launch_bound_closers(model: TraceModel, phase: str = "all", tolerance_us: float = LAUNCH_TOLERANCE_US,
                         by_pass: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The launch-bound idle gaps of the comparison's window of `phase` (work cut by the trace's
    window left out, as `timeline(keep_cut=False).whole` counts them): (start, end) as integer ns
    from the trace's first activity, that origin in µs, and per gap the kernel row that ends it (the
    first activity to start then): the GPU waited for its launch. `by_pass`: the gaps inside each
    pass instead, over the timeline's own pass windows (`_pass_windows`). The windows are scanned as
    the timeline scans them, all at once, by the numpy scan (the reference the C scan is tested
    against): the gaps' lengths sum to the window's launch_bound_us, or to the passes' summed,
    exactly (memoised)."""
    return model.memo(("launch_bound_gaps", phase, tolerance_us, by_pass),
                      lambda: _launch_bound_gaps(model, phase, tolerance_us, by_pass))


def _launch_bound_gaps(model, phase, tolerance_us, by_pass):
    sc = _Scan(model, tolerance_us)
    rows = _in_phase(model, sc.order[~cut_mask(model)[sc.order]], phase)
    if by_pass:
        rows, key = _pass_windows(model, rows)
    else:
        key = np.zeros(len(rows), dtype=np.int64)
    found: list = []
    if len(rows):
        sc._scan_numpy(rows, key, True, False, gaps=found)
    z = np.zeros(0, dtype=np.int64)
    gs, ge, closer = (np.concatenate([f[i][f[2] == CAT_LAUNCH] for f in found]) if found else z for i in (0, 1, 4))
    return gs, ge, np.float64(sc.t0), closer


def _layers(r: dict[str, np.ndarray], width: int) -> list[LayerIdle]:
    """Each layer's (pass, layer) windows of a scan summed, all layers at once: windows ordered by
    layer, then by idle, so each layer's median is read at the middle of its run."""
    lay = r["key"] % width
    o = np.lexsort((r["idle"], lay))
    lay, idle = lay[o], r["idle"][o]
    starts = np.flatnonzero(np.r_[True, lay[1:] != lay[:-1]])
    ends = np.r_[starts[1:], len(lay)]
    sums = {name: np.add.reduceat(r[name][o], starts).tolist() for name in ("span", "idle", "launch", "sync")}
    busy = np.add.reduceat(r["span"][o] - r["idle"][o], starts).tolist()
    idle_us = idle / _NS
    mid = starts + (ends - starts) // 2
    # np.median's: the middle value, or the mean of the two middle ones
    med = np.where((ends - starts) % 2 == 1, idle_us[mid], (idle_us[mid - 1] + idle_us[mid]) / 2)
    return [LayerIdle(layer=l, passes=n, span_us=float(span) / _NS, busy_us=float(b) / _NS,
                      idle_us=float(i) / _NS, launch_bound_us=float(lb) / _NS, sync_us=float(sy) / _NS,
                      idle_median_us=float(md), idle_max_us=float(mx))
            for l, n, span, b, i, lb, sy, md, mx in zip(
                lay[starts].tolist(), (ends - starts).tolist(), sums["span"], busy, sums["idle"], sums["launch"],
                sums["sync"], med.tolist(), idle_us[ends - 1].tolist())]


# A median over fewer queued kernels than this is not a measurement (the fusion model then keeps
# its family default and says so).
MIN_QUEUED = 20


def dispatch_gap(model: TraceModel, rows: np.ndarray) -> tuple[float | None, int]:
    """What a kernel boundary costs the GPU on this trace: the median gap between a kernel and the
    one before it on its stream, over the kernels that were already queued (their launch call had
    returned before the one before them ended), so the gap is the GPU's own dispatch latency and
    not a wait for the host. µs, and how many such kernels `rows` hold; None when fewer than
    MIN_QUEUED (a launch-bound trace: nearly every kernel waited for its launch).

    Measured on the real traces: 1.6 µs on H100 (Qwen, HF eager), 0 on MI300X (ROCm writes
    back-to-back kernels end to start), 2–3 µs on A100/V100 training."""
    gaps = model.memo(("queued_gaps",), lambda: _queued_gaps(_Scan(model, LAUNCH_TOLERANCE_US)))
    g = gaps[rows] if len(rows) else gaps[:0]
    g = g[g >= 0]
    if len(g) < MIN_QUEUED:
        return None, int(len(g))
    return float(np.median(g)) / _NS, int(len(g))


FLOOR_PERCENTILE = 5


def kernel_floor(model: TraceModel, rows: np.ndarray) -> float | None:
    """The time any kernel takes on this GPU whatever its work (ramp-up and drain): the
    FLOOR_PERCENTILE-th percentile of the kernels' durations in `rows` (the shortest few are
    launch-latency-bound no-op-sized kernels). µs; None without kernels. Measured: 1.15 µs on the
    H100 Llama traces, 0.93 on H200, 2.69 on B200, 4.57 on MI300X."""
    k = model.kernels
    r = rows[k.kind[rows] == KIND_KERNEL] if len(rows) else rows
    if len(r) == 0:
        return None
    return float(np.percentile(k.dur[r], FLOOR_PERCENTILE))


def _queued_gaps(sc: _Scan) -> np.ndarray:
    """Per kernel row: the gap (ns) after the previous kernel on its stream when it was queued, else
    -1. int32 (a gap past 2.1 s is kept as 2.1 s: the median is what is read): it is memoised on the
    model and travels back from a forked child with it."""
    model = sc.model
    k = model.kernels
    n = len(k)
    out = np.full(n, -1, dtype=np.int32)
    if n < 2:
        return out
    if sc.use_c:
        _gapscan.queued_gaps(sc.order, sc.kind, sc.stream_id, sc.launch, sc.s, sc.e, sc.l_e,
                             sc.l_is_launch & ~sc.l_is_graph, out, sc.streams, KIND_KERNEL)
        return out
    kern = sc.order[k.kind[sc.order] == KIND_KERNEL]
    o = kern[stable_argsort(sc.stream_id[kern])]   # by stream, then start (then row: ties stay in file order)
    cur, prev = o[1:], o[:-1]
    li = sc.launch[cur]
    ok = (sc.stream_id[cur] == sc.stream_id[prev]) & (li >= 0)
    cur, prev, li = cur[ok], prev[ok], li[ok]
    ok = sc.l_is_launch[li] & ~sc.l_is_graph[li] & (sc.l_e[li] <= sc.e[prev])
    cur, prev = cur[ok], prev[ok]
    out[cur] = np.clip(sc.s[cur] - sc.e[prev], 0, np.iinfo(np.int32).max)
    return out
