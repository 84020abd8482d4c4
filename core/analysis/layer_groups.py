"""One side's kernels grouped by (layer, step), one group per forward pass of a layer, with each
group's total time and kernel-name sequence id: what the comparison's layer rows and kernel
alignments read. It depends on one side alone, so a side loaded in a forked child groups its
kernels there (`side_readings.prepare_side`), in parallel with the other side, and the arrays come
back with its model."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kerneldiff.core.analysis.cut_work import compared_mask


class LayerGroupArrays(NamedTuple):
    """Groups are segments [start, start+length) of `sorted_pos` (positions into the compared rows
    of the phase), ordered by layer, then step; inside a group kernels keep their time order."""
    sorted_pos: np.ndarray   # positions into the phase's compared rows, group after group
    start: np.ndarray        # each group's first index into sorted_pos
    length: np.ndarray       # each group's kernel count
    layer: np.ndarray        # each group's layer
    dur: np.ndarray          # the kernels' durations, in sorted_pos order
    total: np.ndarray        # each group's summed duration
    names: np.ndarray        # the kernels' name ids, in sorted_pos order
    sig: np.ndarray          # each group's kernel-name sequence id (equal sequences, equal ids)


def layer_groups(model, phase: str) -> LayerGroupArrays:
    """The groups of the kernels a comparison of `phase` reads (memoised on the model)."""
    return model.memo(("layer_groups", phase), lambda: _group(model, phase))


def _group(model, phase: str) -> LayerGroupArrays:
    k = model.kernels
    mask = compared_mask(model, phase)
    rows = None if mask.all() else np.nonzero(mask)[0]

    def take(column: np.ndarray) -> np.ndarray:
        return column if rows is None else column[rows]

    lay = take(k.layer)
    sel = np.flatnonzero(lay >= 0)
    key = lay[sel].astype(np.int64) * (len(model.steps) + 1) + take(k.step)[sel]
    n = len(key)
    # A (layer, step) is usually one contiguous run in time order: sort the runs (tens of
    # thousands), not the kernels. Concatenating stably sorted runs gives the kernels' stable sort.
    brk = np.flatnonzero(key[1:] != key[:-1]) + 1
    run_start = np.concatenate(([0], brk)).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    run_len = np.diff(np.append(run_start, n))
    ro = np.argsort(key[run_start], kind="stable")
    lens = run_len[ro]
    offs = np.cumsum(lens) - lens
    sorted_pos = sel[np.repeat(run_start[ro] - offs, lens) + np.arange(n)]
    skey = key[run_start[ro]]
    first = np.ones(len(skey), dtype=bool)
    first[1:] = skey[1:] != skey[:-1]
    start = offs[first]
    length = np.diff(np.append(start, n))
    dur = take(k.dur)[sorted_pos]
    names = take(k.name)[sorted_pos]
    out = LayerGroupArrays(sorted_pos, start, length, lay[sorted_pos[start]], dur, segment_sums(dur, start, length),
                           names, row_ids(names, start, length))
    for a in out:   # shared by every comparison of the model: read-only
        a.flags.writeable = False
    return out


def segment_sums(values: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """values[s:s+l].sum() for every segment. Segments of one length are summed as the rows of a
    matrix (pairwise, like a 1-D sum); np.add.reduceat would add sequentially and round differently."""
    out = np.zeros(len(start))
    by_len = np.argsort(length, kind="stable")
    cuts = np.flatnonzero(np.diff(length[by_len])) + 1
    for seg in np.split(by_len, cuts) if len(by_len) else []:
        out[seg] = values[start[seg, None] + np.arange(length[seg[0]])].sum(axis=1)
    return out


def row_ids(values: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """An id per segment, equal for segments holding the same sequence of values (exact, no hashing)."""
    ids = np.zeros(len(start), dtype=np.int64)
    by_len = np.argsort(length, kind="stable")
    cuts = np.flatnonzero(np.diff(length[by_len])) + 1
    base = 0
    for seg in np.split(by_len, cuts) if len(by_len) else []:
        n = int(length[seg[0]])
        mat = values[start[seg, None] + np.arange(n)]
        order = np.lexsort(mat.T[::-1]) if n else np.arange(len(seg))
        srt = mat[order]
        new = np.ones(len(seg), dtype=bool)
        new[1:] = (srt[1:] != srt[:-1]).any(axis=1)
        ids[seg[order]] = base + np.cumsum(new) - 1
        base += int(new.sum())
    return ids
