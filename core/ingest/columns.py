"""Decoded events -> numpy columns, one table per event group (kernels, Python frames, cpu_ops,
launches, annotations), a field at a time (C-level map + np.fromiter), never an event at a time."""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter, is_not, itemgetter
from typing import Any

import numpy as np

from kerneldiff.core.ingest import scan, schema
from kerneldiff.core.ingest.longstrings import NAME_CAP, cut_name
from kerneldiff.core.ingest.decode import COMM_FIELDS, comm_text, shape_text
from kerneldiff.core.ingest.decode import (_EMPTY_ARGS, G_ANNOT, G_CPU, G_GPU_ANNOT, G_KERNEL, G_LAUNCH, G_MEMSET, G_PYTHON, G_UNREADABLE, GROUP_OF, NOT_INTEGER, _int)

CHUNK_EVENTS = 4096   # events columnised at once (see Columns.add)

# --- columns ----------------------------------------------------------------------------------

# columns of each table, in the dtypes of kerneldiff.core.model
SPECS: dict[str, tuple[tuple[str, str], ...]] = {
    "k": (("ts", "f8"), ("dur", "f8"), ("name", "i4"), ("kind", "i1"), ("stream", "i8"), ("device", "i8"),
          ("corr", "i8"), ("ext", "i8"), ("regs", "i4"), ("smem", "i8"), ("occupancy", "i2"),
          ("grid", "i4"), ("block", "i4")),   # launch configuration; grid/block: text ids
    "p": (("ts", "f8"), ("dur", "f8"), ("name", "i4"), ("pyid", "i8"), ("parent", "i8"), ("tid", "i8"),
          ("pid", "i8")),
    "c": (("ts", "f8"), ("dur", "f8"), ("name", "i4"), ("ext", "i8"), ("tid", "i8"), ("pid", "i8"),
          ("dims", "i4"), ("types", "i4"),    # record_shapes text, ids into strings (-1: not recorded)
          ("comm", "i4"),                     # a collective's parameters (decode.comm_text), likewise
          ("concrete", "i4")),                # record_shapes' Concrete Inputs text, likewise
    "l": (("ts", "f8"), ("dur", "f8"), ("name", "i4"), ("corr", "i8"), ("ext", "i8"), ("tid", "i8"),
          ("pid", "i8")),
    "a": (("ts", "f8"), ("dur", "f8"), ("name", "i4"), ("tid", "i8"), ("pid", "i8"), ("gpu", "i1"),
          ("dims", "i4"), ("types", "i4")),   # record_shapes text of annotations (nccl:all_reduce's tensors)
}
_SCAN_TABLES = scan.tables(GROUP_OF)
_GROUP_CODES = {"k": (G_KERNEL, G_MEMSET), "p": (G_PYTHON, G_PYTHON), "c": (G_CPU, G_CPU),
                "l": (G_LAUNCH, G_LAUNCH), "a": (G_ANNOT, G_GPU_ANNOT)}
MAX_TS, MAX_DUR = 1e18, 1e15   # beyond these a timestamp / duration is garbage, not data

_cat, _name, _ts, _dur, _pid, _tid, _args = (attrgetter(f) for f in ("cat", "name", "ts", "dur", "pid", "tid", "args"))
# the fields each table reads (kerneldiff.core.ingest.schema): integer args (the first one also
# detects events without args), integer event fields, raw-text args; each field's column
_ARG_FIELDS = {g: schema.read_by(g) for g in SPECS}
_EVENT_INTS = {g: schema.read_by(g, schema.EVENT_FIELDS) for g in SPECS}
_TEXT_FIELDS = {g: schema.read_by(g, loose=("text",)) for g in SPECS}
_COMM_READ = {g: bool(schema.read_by(g, loose=("any",))) for g in SPECS}   # a collective's fields: one column
_COLUMN = {f.attr: f.column for f in schema.EVENT_FIELDS + schema.ARG_FIELDS}
_ON_EVENT = {g: tuple(attrgetter("args." + f) for f in fs) for g, fs in _ARG_FIELDS.items()}
_ON_ARGS = {g: tuple(attrgetter(f) for f in fs) for g, fs in _ARG_FIELDS.items()}
_ON_ITSELF = {g: tuple(attrgetter(f) for f in fs) for g, fs in _EVENT_INTS.items()}
# a kernel without a stream / device arg takes its tid / pid
_FALLBACK = {"stream": "tid", "device": "pid"}


def _pick(seq, idx: np.ndarray):
    if len(idx) == len(seq):
        return seq
    if len(idx) == 1:
        return [seq[int(idx[0])]]
    return itemgetter(*idx.tolist())(seq)


def _floats(seq, get) -> np.ndarray:
    try:
        return np.fromiter(map(get, seq), np.float64, len(seq))   # None -> NaN
    except (OverflowError, TypeError, ValueError):  # ints beyond float range (read as infinite)
        return np.fromiter(map(_float, map(get, seq)), np.float64, len(seq))


def _float(v: Any) -> float:
    try:
        return float(v) if v is not None else float("nan")
    except OverflowError:
        return float("inf")
    except (TypeError, ValueError):
        return float("nan")


def _ints(seq, get) -> np.ndarray:
    """int64 column; None and junk -> -1 (fast path: plain ints or numeric strings)."""
    try:
        return np.fromiter(map(get, seq), np.int64, len(seq))
    except (TypeError, ValueError, OverflowError):
        pass
    values = list(map(get, seq))
    if values.count(None) == len(values):   # a field this trace never writes (CUPTI args on ROCm)
        return np.full(len(values), -1, np.int64)
    try:
        return np.array([-1 if v is None else v for v in values], dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return np.fromiter(map(_int, values), np.int64, len(values))


def _ints_or(seq, get, fallback_seq, fallback_get) -> np.ndarray:
    """Like _ints, but a missing (None) value takes the value of the fallback field."""
    try:
        return np.fromiter(map(get, seq), np.int64, len(seq))
    except (TypeError, ValueError, OverflowError):
        pass
    return np.fromiter((_int(f) if v is None else _int(v)
                        for v, f in zip(map(get, seq), map(fallback_get, fallback_seq))), np.int64, len(seq))


def _struct_ints(g: str, sub) -> dict[str, np.ndarray]:
    """The integer columns of group `g` from decoded events (see SPECS)."""
    cols: dict[str, np.ndarray] = {}
    fields = _ARG_FIELDS[g]
    if fields:
        src, get = sub, _ON_EVENT[g]
        try:
            first = _ints(src, get[0])
        except AttributeError:  # some events have no args: read those as empty args
            src, get = [x if x is not None else _EMPTY_ARGS for x in map(_args, sub)], _ON_ARGS[g]
            first = _ints(src, get[0])
        cols[_COLUMN[fields[0]]] = first
        for f, getter in zip(fields[1:], get[1:]):
            other = _FALLBACK.get(f)
            cols[_COLUMN[f]] = _ints(src, getter) if other is None else _ints_or(src, getter, sub, attrgetter(other))
    for f, getter in zip(_EVENT_INTS[g], _ON_ITSELF[g]):
        cols[_COLUMN[f]] = _ints(sub, getter)
    return cols


_NARROW = {"regs": np.int32, "occupancy": np.int16}   # kernel columns stored narrower than int64


def _clear_non_integers(ints: dict[str, np.ndarray]) -> int:
    """Ids that were not integers (0.5, "1.5") become -1 (no id): rounding one would join it to
    another event. Returns how many rows had one; the columns are narrowed to their dtypes."""
    rows = None
    for c, a in ints.items():
        m = a == NOT_INTEGER
        if m.any():
            a[m] = -1
            rows = m if rows is None else rows | m
        if c in _NARROW:
            ints[c] = a.astype(_NARROW[c])
    return 0 if rows is None else int(rows.sum())


# integer columns of each group, as fields of the scanner's rows (kerneldiff.core.ingest.scan)
_SCAN_OF = {f.attr: f.scan for f in schema.EVENT_FIELDS + schema.ARG_FIELDS}
_SCANNED_FIELDS = {g: {_COLUMN[f]: getattr(scan, _SCAN_OF[f]) for f in _ARG_FIELDS[g] + _EVENT_INTS[g]} for g in SPECS}
# raw-text columns of each group, as columns of the scanner's `shape` (a collective's args: COMM)
_SCANNED_TEXTS = {g: tuple((_COLUMN[f], getattr(scan, _SCAN_OF[f])) for f in _TEXT_FIELDS[g])
                  + ((("comm", scan.COMM),) if _COMM_READ[g] else ()) for g in SPECS}
_SCANNED_FALLBACK = {c: getattr(scan, _SCAN_OF[other]) for c, other in _FALLBACK.items()}


def _scanned_ints(g: str, ints: np.ndarray, idx: np.ndarray) -> dict[str, np.ndarray]:
    """The integer columns of group `g` from the scanner's rows `idx`: absent or null reads as -1,
    as on the struct path; a kernel without a stream / device arg takes its tid / pid. Each
    column is gathered on its own (the group reads 4 to 9 of the 11 fields)."""
    def field(f: int) -> np.ndarray:
        v = ints[f][idx]
        v[v == scan.MISSING] = -1
        return v

    cols = {}
    for c, f in _SCANNED_FIELDS[g].items():
        other = _SCANNED_FALLBACK.get(c)
        if other is None:
            cols[c] = field(f)
        else:
            v = ints[f][idx]
            absent = v == scan.MISSING
            if absent.any():
                v[absent] = field(other)[absent]
            cols[c] = v
        if c in _NARROW:
            cols[c] = cols[c].astype(_NARROW[c])
    return cols


class Columns:
    """Accumulates the columns of the five event tables, slice by slice."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self._ids: dict[str | None, int] = {None: -1}
        self.parts: dict[str, dict[str, list[np.ndarray]]] = {g: {c: [] for c, _ in spec} for g, spec in SPECS.items()}
        self.events = 0
        self.dropped = 0
        self.negative_dur = 0
        self.non_integer_ids = 0   # events with an id such as 0.5: kept, that id not joined
        self.cut_names = 0         # distinct names longer than NAME_CAP, stored cut
        self._raw_cache: dict[bytes, int] = {b"": -1}

    def _intern(self, sub) -> np.ndarray:
        d = self._ids
        try:
            return np.fromiter(map(d.__getitem__, map(_name, sub)), np.int32, len(sub))
        except KeyError:
            pass
        names = self._capped(list(map(_name, sub)))
        for s in dict.fromkeys(names):
            if s not in d:
                d[s] = len(self.strings)
                self.strings.append(s)
        return np.fromiter(map(d.__getitem__, names), np.int32, len(names))

    def _capped(self, names: list) -> list:
        """Names longer than NAME_CAP cut (a table of names must not hold a 600 MB one); the cut
        text is what is interned, so the full one is not kept alive as a key."""
        if not any(type(s) is str and len(s) > NAME_CAP for s in names):
            return names
        out = []
        for s in names:
            if type(s) is str and len(s) > NAME_CAP:
                s = cut_name(s)
                if s not in self._ids:
                    self.cut_names += 1
            out.append(s)
        return out

    def _intern_texts(self, texts) -> np.ndarray:
        """String ids of texts (None -> -1), added to the same table as names."""
        d = self._ids
        out = np.empty(len(texts), np.int32)
        for i, s in enumerate(texts):
            v = d.get(s)
            if v is None:
                v = d[s] = len(self.strings)
                self.strings.append(s)
            out[i] = v
        return out

    def _raw_ids(self, raws: list) -> np.ndarray:
        """String ids of raw JSON values (shapes, grid, block) by their bytes: each distinct text is
        made canonical and interned once per reader (b"": absent, -1)."""
        cache = self._raw_cache
        keys = list(map(bytes, raws))
        try:
            return np.fromiter(map(cache.__getitem__, keys), np.int32, len(keys))
        except KeyError:
            pass
        for key in set(keys).difference(cache):
            text = shape_text(key)
            cache[key] = -1 if text is None else int(self._intern_texts([text])[0])
        return np.fromiter(map(cache.__getitem__, keys), np.int32, len(keys))

    def _arg_texts(self, g: str, sub) -> dict[str, np.ndarray]:
        """The raw-text args group `g` reads (shapes, grid, block) as string ids."""
        args = [a if a is not None else _EMPTY_ARGS for a in map(_args, sub)]
        return {_COLUMN[f]: self._raw_ids([getattr(a, f) for a in args]) for f in _TEXT_FIELDS[g]}

    def _comm_ids(self, sub) -> np.ndarray:
        """String ids of the collective parameters of cpu ops (-1: none). Few operators carry them
        (record_param_comms): a C-level pass per field finds those, and only they are read."""
        args = [a if a is not None else _EMPTY_ARGS for a in map(_args, sub)]
        out = np.full(len(args), -1, np.int32)
        rows = None
        for f in COMM_FIELDS:
            has = np.fromiter(map(is_not, map(attrgetter(f), args), repeat(None)), bool, len(args))
            rows = has if rows is None else rows | has
        for r in np.flatnonzero(rows).tolist():
            a = args[r]
            text = comm_text([getattr(a, f) for f in COMM_FIELDS])
            if text is not None:
                out[r] = self._intern_texts([text])[0]
        return out

    def add(self, evs: list) -> None:
        """Add a decoded slice, a few thousand events at a time: the objects of one chunk stay
        in the CPU cache across the per-field passes (a 16 MB slice decodes to ~40 MB of
        objects; walking all of them once per field costs more than decoding them)."""
        if type(evs) is scan.Scanned:
            self._add_scanned(evs)
            return
        self.events += len(evs)
        if len(evs) <= CHUNK_EVENTS:
            self._add_chunk(evs)
            return
        for i in range(0, len(evs), CHUNK_EVENTS):
            self._add_chunk(evs[i:i + CHUNK_EVENTS])

    def _add_chunk(self, evs: list) -> None:
        codes = np.fromiter(map(GROUP_OF.get, map(_cat, evs), repeat(0)), np.int8, len(evs))
        for g, (lo, hi) in _GROUP_CODES.items():
            sel = (codes == lo) if lo == hi else ((codes >= lo) & (codes <= hi))
            idx = np.flatnonzero(sel)
            if len(idx):
                self._add_group(g, _pick(evs, idx), codes[idx])
        self.dropped += int(np.count_nonzero(codes == G_UNREADABLE))

    def _add_group(self, g: str, sub, codes: np.ndarray) -> None:
        ts = _floats(sub, _ts)
        dur = _floats(sub, _dur)
        name = self._intern(sub)
        keep = self._valid_rows(ts, dur, name)
        if keep is not None:
            if not len(keep):
                return
            sub, codes, ts, dur, name = _pick(sub, keep), codes[keep], ts[keep], dur[keep], name[keep]
        ints = _struct_ints(g, sub)
        self.non_integer_ids += _clear_non_integers(ints)
        if _TEXT_FIELDS[g]:
            ints.update(self._arg_texts(g, sub))
        if _COMM_READ[g]:
            ints["comm"] = self._comm_ids(sub)
        self._append(g, ts, dur, name, codes, ints)

    def _add_scanned(self, sc: scan.Scanned) -> None:
        """Rows of the compiled scanner: the same filtering and columns as _add_group."""
        self.events += sc.events
        if not len(sc):
            return
        d = self._ids
        names = sc.names if sc.longest is not None and sc.longest <= NAME_CAP else self._capped(sc.names)
        for s in names:
            if s not in d:
                d[s] = len(self.strings)
                self.strings.append(s)
        ids = np.fromiter(map(d.__getitem__, names), np.int32, len(names))
        name_all = ids[sc.name]
        for g, (lo, hi) in _GROUP_CODES.items():
            sel = (sc.code == lo) if lo == hi else ((sc.code >= lo) & (sc.code <= hi))
            idx = np.flatnonzero(sel)
            if not len(idx):
                continue
            ts, dur, name = sc.floats[0][idx], sc.floats[1][idx], name_all[idx]
            keep = self._valid_rows(ts, dur, name)
            if keep is not None:
                if not len(keep):
                    continue
                idx, ts, dur, name = idx[keep], ts[keep], dur[keep], name[keep]
            ints = _scanned_ints(g, sc.ints, idx)
            if _SCANNED_TEXTS[g]:
                # the scan's distinct raw texts as string ids; the extra last entry maps -1 to -1
                ids = np.append(self._intern_texts(sc.texts), np.int32(-1))
                for col, j in _SCANNED_TEXTS[g]:
                    ints[col] = ids[sc.shape[idx, j]]
            self._append(g, ts, dur, name, sc.code[idx], ints)

    def _valid_rows(self, ts: np.ndarray, dur: np.ndarray, name: np.ndarray) -> np.ndarray | None:
        """Indexes of the rows to keep (None: all of them); the others are counted as dropped."""
        bad = ~(np.isfinite(ts) & np.isfinite(dur)) | (np.abs(ts) > MAX_TS) | (dur > MAX_DUR) | (name < 0)
        if not bad.any():
            return None
        self.dropped += int(bad.sum())
        return np.flatnonzero(~bad)

    def _append(self, g: str, ts, dur, name, codes: np.ndarray, ints: dict[str, np.ndarray]) -> None:
        neg = dur < 0
        if neg.any():
            self.negative_dur += int(neg.sum())
            dur[neg] = 0.0
        out = self.parts[g]
        out["ts"].append(ts)
        out["dur"].append(dur)
        out["name"].append(name)
        if g == "k":
            out["kind"].append((codes - G_KERNEL).astype(np.int8))
        elif g == "a":
            out["gpu"].append((codes == G_GPU_ANNOT).astype(np.int8))
        for c, a in ints.items():
            out[c].append(a)

    def arrays(self) -> dict[str, dict[str, np.ndarray]]:
        """Joined columns of everything added since the last call (the pieces are released)."""
        out: dict[str, dict[str, np.ndarray]] = {}
        for g, spec in SPECS.items():
            cols = {}
            for c, dt in spec:
                pieces = self.parts[g][c]
                if len(pieces) == 1:
                    cols[c] = pieces[0]
                else:
                    cols[c] = np.concatenate(pieces) if pieces else np.empty(0, dtype=dt)
                pieces.clear()
            out[g] = cols
        return out
