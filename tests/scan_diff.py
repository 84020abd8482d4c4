"""Differential check: the compiled scanner and the msgspec reader must give identical columns."""

from __future__ import annotations

import numpy as np

from kerneldiff.core.ingest.source import read_columns as reader_columns


def read_columns(path, fast: bool):
    col, reader = reader_columns(str(path), fast=fast)
    strings = np.array(col.strings + [None], dtype=object)   # id -1 -> None
    out = {}
    for g, cols in col.arrays().items():
        for c, a in cols.items():
            out[g, c] = strings[a] if c in ("name", "dims", "types", "grid", "block", "comm", "concrete") else a   # ids differ, texts must not
    return out, (col.events, col.dropped, col.negative_dur, reader.truncated_at)


def differences(path) -> list[str]:
    """What differs between the two readers on one file ([] when identical)."""
    fast, fast_counts = read_columns(path, True)
    slow, slow_counts = read_columns(path, False)
    diffs = []
    if fast_counts != slow_counts:
        diffs.append(f"counts (events, dropped, negative, truncated) {fast_counts} != {slow_counts}")
    for key, a in slow.items():
        b = fast[key]
        if a.shape != b.shape:
            diffs.append(f"{key}: {len(b)} rows != {len(a)}")
        elif a.dtype == object:
            if not (a == b).all():
                i = int(np.flatnonzero(a != b)[0])
                diffs.append(f"{key}: row {i}: {b[i]!r} != {a[i]!r}")
        elif not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
            i = int(np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b)) if a.dtype.kind == "f" else a == b))[0])
            diffs.append(f"{key}: row {i}: {b[i]!r} != {a[i]!r}")
    return diffs
