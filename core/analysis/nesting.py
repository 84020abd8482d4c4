"""Nested CPU intervals (module calls, operators, Python frames, runtime calls) on their threads:
each interval's parent, and the innermost interval around a time.

Profiler events on one thread nest: a call starts after and ends before the call it is made in. In
start order (the longer first at equal starts) an interval's depth is the number of earlier
intervals not yet ended at its start, and its parent is the last earlier interval one level up.
Where a recording breaks the nesting (an end rounded past its parent's), the parent found is still
an interval that started earlier on the thread, and every reading built on `innermost` still gives
each instant to exactly one interval (or none): sums over it stay exact.
"""

from __future__ import annotations

import numpy as np

from kerneldiff.core.analysis.modules import NEST_TOLERANCE_US, start_order
from kerneldiff.core.numbers import stable_argsort


class Nest:
    """Intervals sorted by (thread, start, longer first) with their parents; `order` maps each
    sorted position to the caller's row."""

    def __init__(self, ts: np.ndarray, end: np.ndarray, tid: np.ndarray) -> None:
        ts, end, tid = np.asarray(ts, np.float64), np.asarray(end, np.float64), np.asarray(tid, np.int64)
        if len(ts) and bool((tid == tid[0]).all()):   # one thread: by start, ties by duration (~linear)
            self.order = start_order(ts, end - ts)
        else:
            self.order = np.lexsort((-(end - ts), ts, tid)) if len(ts) else np.zeros(0, np.int64)
        self.ts, self.end, self.tid = ts[self.order], end[self.order], tid[self.order]
        n = len(self.ts)
        self.parent = np.full(n, -1, np.int64)
        self.threads: dict[int, tuple[int, int]] = {}
        if n == 0:
            return
        cuts = np.flatnonzero(self.tid[1:] != self.tid[:-1]) + 1
        bounds = np.concatenate(([0], cuts, [n]))
        depth = np.zeros(n, np.int64)
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            self.threads[int(self.tid[a])] = (a, b)
            ended = np.searchsorted(np.sort(self.end[a:b]), self.ts[a:b] + NEST_TOLERANCE_US, side="right")
            depth[a:b] = np.maximum(np.arange(b - a) - ended, 0)
        # the parent: the last earlier interval of the thread one level up (one search for all levels;
        # the keys in order by a stable sort of the depths, which are small: a radix sort)
        by_depth = stable_argsort(depth)
        sk = depth[by_depth] * n + by_depth
        want = np.flatnonzero(depth > 0)
        j = np.searchsorted(sk, (depth[want] - 1) * n + want) - 1
        ok = j >= 0
        cand = np.where(ok, sk[np.maximum(j, 0)], -1)
        ok &= cand // n == depth[want] - 1
        p = cand % n
        ok &= self.tid[np.where(ok, p, 0)] == self.tid[want]
        self.parent[want[ok]] = p[ok]
        self.depth = depth

    def innermost(self, t: np.ndarray, tid: np.ndarray, closed: bool = True) -> np.ndarray:
        """For each time t on thread tid, the sorted position of the innermost interval holding it
        (start <= t <= end with `closed`, start <= t < end otherwise), -1 where none does."""
        t, tid = np.asarray(t, np.float64), np.asarray(tid, np.int64)
        out = np.full(len(t), -1, np.int64)
        for th in np.unique(tid).tolist():
            span = self.threads.get(int(th))
            if span is None:
                continue
            a, b = span
            sel = np.flatnonzero(tid == th)
            out[sel] = np.searchsorted(self.ts[a:b], t[sel], side="right") - 1 + a
            out[sel[out[sel] < a]] = -1
        todo = np.flatnonzero(out >= 0)
        while len(todo):
            j = out[todo]
            outside = self.end[j] < t[todo] if closed else self.end[j] <= t[todo]
            todo = todo[outside]
            out[todo] = self.parent[out[todo]]
            todo = todo[out[todo] >= 0]
        return out


def intern_paths(nest: Nest, labels: list[str]) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """Each sorted interval's path (its label and its ancestors', outermost first) as an id, and the
    distinct paths. `labels` is each sorted interval's label. A parent precedes its children in start
    order, so one pass builds every path from its parent's."""
    ids: dict[tuple[str, ...], int] = {}
    paths: list[tuple[str, ...]] = []
    out = np.empty(len(labels), np.int64)
    parent = nest.parent.tolist()
    for i, lab in enumerate(labels):
        p = parent[i]
        path = (paths[out[p]] if p >= 0 else ()) + (lab,)
        k = ids.get(path)
        if k is None:
            k = ids[path] = len(paths)
            paths.append(path)
        out[i] = k
    return out, paths
