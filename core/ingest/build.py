"""Columns of every run -> one TraceModel: names renumbered into one string table, tables
joined, then put in one total order (`canonical`). Its readings (joins, classes, phases, layers)
are computed after, by `kerneldiff.core.analysis.readings`."""

from __future__ import annotations

import numpy as np

from kerneldiff.core.model import (ANNOTATION_COLUMNS, CPU_OP_COLUMNS, KERNEL_COLUMNS, LAUNCH_COLUMNS, PYTHON_COLUMNS,
                    Table, TraceModel)
from kerneldiff.core.ingest.probe import TraceInfo
from kerneldiff.core.ingest.columns import Columns
from kerneldiff.core.ingest.longstrings import CUT_MARK, NAME_CAP
from kerneldiff.core.numbers import equal_runs
from kerneldiff.core.strings import StringTable
from kerneldiff.core.ingest.read_result import ReadResult

_STRING_COLUMNS = ("name", "dims", "types", "grid", "block", "comm", "concrete")   # ids into a run's own string list, renumbered here


def _merge(read: ReadResult) -> tuple[StringTable, dict[str, dict[str, np.ndarray]]]:
    """Join runs in file order. String ids are renumbered in sorted order, so the model does not
    depend on how the file was split between processes."""
    if not read.chunks:
        return StringTable(), Columns().arrays()
    seen: dict[str, None] = {}
    lists = {id(strings): strings for strings, _ in read.chunks}   # a worker's runs share one growing list
    for strings in lists.values():
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
                if c in _STRING_COLUMNS and len(a):
                    r = remaps[id(strings)]
                    a = r[a] if c == "name" else np.where(a >= 0, r[np.maximum(a, 0)], -1).astype(np.int32)
                parts.append(a)
                cols[g][c] = None  # free as we go
            out[g][c] = np.concatenate(parts) if len(parts) > 1 else parts[0]
    read.chunks = []
    return table, out


# ids the profiler hands out in creation order (External id, Python id): an operator and the one it
# calls can share their start and end to the µs, and then only the order they were made in tells
# which encloses which (the caller first)
_CREATION = ("ext", "pyid")
# columns the loader fills later (joins, classification, segmentation): constant while sorting
_DERIVED = {"cpu_op", "launch", "cat", "rule", "step", "phase", "layer"}


def canonical(table: Table) -> Table:
    """The rows in one total order that the file's order of events cannot change: by start, the
    longer first at equal starts (an enclosing event before what it encloses), the first made at
    equal spans (`_CREATION`), then by name (ids follow the text: the string table is sorted) and
    every other column. Every later sort is stable,
    so two events that start in the same µs are taken in this order, never in the file's.
    A stable sort of the starts (nearly in order already), then only the runs of equal starts
    sorted by the rest."""
    if len(table) < 2:
        return table
    cols = table.columns
    ts = cols["ts"]
    order = np.argsort(ts, kind="stable")
    s = ts[order]
    pos, run = equal_runs(s[1:] == s[:-1])
    if len(pos):
        sub = order[pos]
        made = [cols[name][sub] for name in reversed(_CREATION) if name in cols]
        first = (cols["name"][sub], *made, -cols["dur"][sub], run)
        o = np.lexsort(first)
        sub = sub[o]
        # rows still equal in all of these (rare): every other column decides, among them only
        key = [k[o] for k in first]
        same = np.ones(len(sub) - 1, dtype=bool)
        for k in key:
            same &= k[1:] == k[:-1]
        if same.any():
            at, group = equal_runs(same)
            rows = sub[at]
            rest = [cols[name][rows] for name, _, _ in reversed(table._spec)
                    if name not in ("ts", "dur", "name", *_CREATION) and name not in _DERIVED]
            sub[at] = rows[np.lexsort((*rest, group))]
        order[pos] = sub
    if bool((order[1:] > order[:-1]).all()):   # already in that order (the file's kernels often are)
        return table
    return table.take(order)


def build_model(path: str, info: TraceInfo, read: ReadResult) -> TraceModel:
    strings, cols = _merge(read)
    model = TraceModel(
        path=path, info=info, strings=strings, kernels=canonical(Table(KERNEL_COLUMNS, cols["k"])),
        cpu_ops=canonical(Table(CPU_OP_COLUMNS, cols["c"])), launches=canonical(Table(LAUNCH_COLUMNS, cols["l"])),
        python=canonical(Table(PYTHON_COLUMNS, cols["p"])), annotations=canonical(Table(ANNOTATION_COLUMNS, cols["a"])),
        categories=[], rules=[], dropped_events=read.dropped)
    if read.dropped:
        model.warnings.append(f"{read.dropped} malformed events skipped (missing or invalid ph/ts/dur/name)")
    if read.negative_dur:
        model.warnings.append(f"{read.negative_dur} events had a negative duration; counted as 0")
    model.warnings.extend(read.notes)
    if read.cut_names:
        model.warnings.append(f"{read.cut_names} names longer than {NAME_CAP:,} characters were cut to that length "
                              f"(marked {CUT_MARK})")
    if read.non_integer_ids:
        model.warnings.append(f"{read.non_integer_ids} events had a non-integer id (correlation, External id, "
                              "Python id, pid/tid, ...): those ids were ignored, not rounded, so nothing is "
                              "joined through them")
    return model
