"""Streaming reader: trace bytes -> compact columns of the events kerneldiff uses.

The `traceEvents` array is cut into slices of ~1 MB at event boundaries (`}` `,` `{`), and each
slice is decoded by msgspec straight from the buffer (the brackets are patched in place, nothing
is copied). Decoding is typed: "ph" is the tag of a union, so flows, instants and metadata
become empty objects without reading a field, and complete events keep only the seven fields
kerneldiff uses — shapes, strides, grids and every other key are skipped by the C decoder.
`Columns.add` then turns a slice into numpy columns one *field* at a time (C-level map +
np.fromiter), never one event at a time in Python: that is what makes a GB cost seconds.

Correctness never depends on how the JSON is formatted. A boundary found by a byte search can
sit inside a string: a slice cut there ends inside the string and cannot decode, so an earlier
boundary is tried (or more data read: one event can be huge). Invalid events (NaN, raw control
bytes, invalid UTF-8, numbers beyond float range) are skipped and counted, the rest kept; a file
that just stops (a killed profiler, plain or gzip) keeps its complete events. Values of
unexpected types (numbers as strings, nulls, labels as thread ids) are converted by the decoder
or, for the rare slice it rejects, event by event (`_lenient`).
"""

from __future__ import annotations

import os
import queue
import re
import threading
import zlib
from collections.abc import Callable, Iterator
from itertools import islice, repeat
from operator import attrgetter, itemgetter
from typing import Any, ClassVar, Union

import msgspec
import numpy as np

from kerneldiff.core.ingest import scan
from kerneldiff.core.errors import TraceError, file_error

try:  # ISA-L inflates 2-3x faster than zlib with the same API, and releases the GIL
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover
    _zlib = zlib

# Bytes decoded at once. A 1 MB slice decodes to ~2.5 MB of objects, which are still in the
# CPU cache when Columns.add walks them field by field; 16 MB slices measured ~20% slower.
SLICE = 1024 * 1024
RUN = 16 * 1024 * 1024       # bytes handed to a worker process at once (amortises the messages)
WINDOW = 64 * 1024           # where the last boundary of a slice is looked for first
MAX_EVENT = 512 * 1024 * 1024  # a slice that still has no decodable boundary at this size is not JSON
GZ_BLOCK = 1024 * 1024       # compressed bytes read per step by the gzip thread
GZ_OUT = 8 * 1024 * 1024     # at most this much inflated output per step (bounds memory)
_BOUNDARY = re.compile(rb"\}\s*,\s*(\{)")  # group 1: where the next event starts
# A boundary followed by a quoted key and a colon cannot lie inside a JSON string (the quotes
# would have to be escaped), short of contrived keys: runs handed to other processes are cut
# there, so a run that fails to decode (and sends the load back to one process) is rare.
_STRONG_BOUNDARY = re.compile(rb'\}\s*,\s*(\{)\s*"[^"\\]*"\s*:')
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_NONSPACE = re.compile(rb"\S")
_TRAILING_COMMA = re.compile(rb"\}\s*,\s*\Z")
_EVENT_THEN_END = re.compile(rb"\}\s*\]")   # the last event's '}', then the array's ']'
_LBRACKET, _RBRACKET = ord("["), ord("]")

# --- decoded event shapes -------------------------------------------------------------------

class FastArgs(msgspec.Struct, gc=False):
    correlation: int | None = None
    external_id: int | None = msgspec.field(default=None, name="External id")
    # ROCm runtime events write their stream as a pointer ("stream": "0x0"): keep such strings
    # (they read as -1) rather than send every slice down the lenient path
    device: int | str | None = None
    stream: int | str | None = None
    python_id: int | None = msgspec.field(default=None, name="Python id")
    python_parent: int | None = msgspec.field(default=None, name="Python parent id")


class XEvent(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    """A complete event ("ph": "X") with the fields kerneldiff uses. Decoded with strict=False:
    numbers written as strings ("correlation": "505113") and integer timestamps are converted
    by the C decoder."""

    cat: str | None = None
    name: str | None = None
    ts: float | None = None
    dur: float | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    args: FastArgs | None = None


class Skipped(msgspec.Struct, tag_field="ph", gc=False):
    """Any other phase (flows, instants, counters, metadata): decoded to an empty object — the
    phase is the union's tag, so none of its fields are even read."""

    cat: ClassVar[None] = None


# Every other phase the Chrome trace format defines. An unknown or missing "ph" makes the slice
# take the lenient path.
_OTHER_PHASES = ("B", "E", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "O", "N", "D", "M", "V",
                 "v", "R", "c", "(", ")", "T", "S", "F", "p")
_SKIP_TYPES = tuple(msgspec.defstruct(f"Skipped_{i}", [], bases=(Skipped,), tag=ph, tag_field="ph", gc=False)
                    for i, ph in enumerate(_OTHER_PHASES))
_SKIP = _SKIP_TYPES[0]()
Event = Union[(XEvent, *_SKIP_TYPES)]  # noqa: UP007 - a runtime union of many types


class _LooseArgs(msgspec.Struct):
    correlation: Any = None
    external_id: Any = msgspec.field(default=None, name="External id")
    device: Any = None
    stream: Any = None
    python_id: Any = msgspec.field(default=None, name="Python id")
    python_parent: Any = msgspec.field(default=None, name="Python parent id")


class _LooseEvent(msgspec.Struct):
    cat: Any = None
    name: Any = None
    ts: Any = None
    dur: Any = None
    pid: Any = None
    tid: Any = None
    args: _LooseArgs | None = None


class _LooseX(_LooseEvent, tag_field="ph", tag="X"):
    """A complete event read without type expectations (the second try for a slice)."""


_typed = msgspec.json.Decoder(list[Event], strict=False)
_loose = msgspec.json.Decoder(list[Union[(_LooseX, *_SKIP_TYPES)]])  # noqa: UP007
_untyped = msgspec.json.Decoder()
_EMPTY_ARGS = FastArgs()


def _num(v: Any, default: float | None = -1) -> float | None:
    """Numbers arrive as ints, floats or strings depending on the writer; anything else -> default."""
    if v is None:
        return default
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        try:
            return float(v) if ("." in v or "e" in v or "E" in v) else int(v)
        except ValueError:
            return default
    return default


def _int(v: Any) -> int:
    x = _num(v, -1)
    if x != x or x in (float("inf"), float("-inf")):
        return -1
    try:
        x = int(x)
    except (OverflowError, ValueError):
        return -1
    return x if -(2**63) <= x < 2**63 else -1


def _opt_int(v: Any) -> int | None:
    return None if v is None else _int(v)


def _normalize(e: _LooseEvent) -> XEvent:
    """A complete event whose fields had unexpected types, read with the loose rules of `_num`."""
    a = e.args
    args = None
    if a is not None:
        args = FastArgs(_int(a.correlation), _int(a.external_id), _opt_int(a.device), _opt_int(a.stream),
                        _int(a.python_id), _int(a.python_parent))
    return XEvent(e.cat if isinstance(e.cat, str) else None, e.name if isinstance(e.name, str) else None,
                  _num(e.ts, None), _num(e.dur, None), _int(e.pid), _int(e.tid), args)


_UNREADABLE = object()   # the category of items that are not events at all (counted as dropped)
_BAD_EVENT = XEvent(cat=_UNREADABLE)  # type: ignore[arg-type]


def _lenient(raw: list[Any]) -> list[XEvent | Skipped]:
    """Convert events one by one, with the loose rules of `_num` / `_int` where types differ."""
    out: list[XEvent | Skipped] = []
    bad = _BAD_EVENT
    for item in raw:
        if not isinstance(item, dict):
            out.append(bad)
        elif item.get("ph") != "X":
            # an event of a kind kerneldiff reads but without its phase is broken, not foreign
            out.append(bad if "ph" not in item and item.get("cat") in GROUP_OF else _SKIP)
        else:
            try:
                out.append(msgspec.convert(item, XEvent, strict=False))
                continue
            except (msgspec.ValidationError, TypeError):
                pass
            try:
                loose = msgspec.convert(item, _LooseEvent, strict=False)
            except (msgspec.ValidationError, TypeError):  # "args" is not an object
                loose = _LooseEvent(*(item.get(k) for k in ("cat", "name", "ts", "dur", "pid", "tid")))
            out.append(_normalize(loose))
    return out


class Failure:
    """Why a slice did not decode: `truncated` (it ends inside a string or an event — the cut
    was not a real boundary) or invalid content at byte `pos` of the slice (None: unknown)."""

    __slots__ = ("truncated", "pos")

    def __init__(self, truncated: bool, pos: int | None = None) -> None:
        self.truncated = truncated
        self.pos = pos


_BYTE_POS = re.compile(r"\(byte (\d+)\)")


def _failure(e: msgspec.DecodeError) -> Failure:
    msg = str(e)
    if "truncated" in msg:
        return Failure(True)
    m = _BYTE_POS.search(msg)
    return Failure(False, int(m.group(1)) if m else None)


# msgspec lets these escape for invalid UTF-8, nesting deeper than the recursion limit and
# numbers beyond float range: they mean "invalid content, position unknown"
_ODD_ERRORS = (UnicodeDecodeError, RecursionError, msgspec.ValidationError)


def try_decode(buf) -> list | Failure:
    """Decode a JSON array of events (any buffer)."""
    try:
        return _typed.decode(buf)
    except msgspec.ValidationError:
        pass  # valid JSON with values of unexpected types somewhere
    except msgspec.DecodeError as e:
        return _failure(e)
    except (UnicodeDecodeError, RecursionError):
        return Failure(False)
    try:  # the same shapes, any value types: only the odd events cost a Python call
        return [_normalize(e) if type(e) is _LooseX else e for e in _loose.decode(buf)]
    except msgspec.ValidationError:
        pass  # an unknown or missing phase, args that are not an object: event by event
    except msgspec.DecodeError as e:
        return _failure(e)
    except (UnicodeDecodeError, RecursionError):
        return Failure(False)
    try:
        raw = _untyped.decode(buf)
    except msgspec.DecodeError as e:
        return _failure(e)
    except _ODD_ERRORS:
        return Failure(False)
    if not isinstance(raw, list):
        return Failure(False)
    return _lenient(raw)


BACKOFF = 16       # boundaries tried, from the last one back, before deciding a slice needs more data


class _Slicer:
    """Decodes runs of whole events in place in a writable buffer, cut at boundary candidates.

    A cut can fail two ways. At a false boundary (inside a string) the slice ends in an
    unterminated string: an earlier boundary is tried, and if the last BACKOFF all fail the
    caller reads more data (one event can be huge). On invalid content (NaN, a raw control
    byte, invalid UTF-8, a number beyond float range) the events before it are kept, and the bad
    event is skipped — counted as one unreadable event — up to where the next event decodes."""

    def __init__(self, buf) -> None:
        self.buf = buf

    def prefix(self, first: int, stop: int) -> list | Failure:
        """Decode buf[first:stop] as '[' + events + ']' (the bytes around it are patched)."""
        buf = self.buf
        left, right = buf[first - 1], buf[stop]
        buf[first - 1], buf[stop] = _LBRACKET, _RBRACKET
        try:
            with memoryview(buf)[first - 1:stop + 1] as view:
                return try_decode(view)
        finally:
            buf[first - 1], buf[stop] = left, right

    def _last_candidates(self, first: int, hi: int) -> list[re.Match]:
        out: list[re.Match] = []
        seen: set[int] = set()
        end, window = hi, 2048  # a few events: the last boundary is nearly always there
        while len(out) < BACKOFF and end > first:
            lo = max(first, end - window)
            for m in reversed([m for m in _BOUNDARY.finditer(self.buf, lo, end) if m.start() not in seen]):
                seen.add(m.start())
                out.append(m)
                if len(out) == BACKOFF:
                    break
            if lo == first:
                break
            end, window = lo + 16, window * 2  # a boundary is short: overlap the windows
        return out

    def take(self, first: int, hi: int) -> tuple[list, int] | None:
        """Events from `first` (an event start) to a boundary before `hi`: (events, where the
        next event starts). None when no boundary among the last BACKOFF decodes."""
        for m in self._last_candidates(first, hi):
            r = self.prefix(first, m.start() + 1)
            if not isinstance(r, Failure):
                return r, m.start(1)
            if not r.truncated:
                return self._salvage(first, hi, r)
        return None

    def _salvage(self, first: int, hi: int, failure: Failure) -> tuple[list, int] | None:
        pos = None if failure.pos is None else first - 1 + failure.pos
        before = list(_BOUNDARY.finditer(self.buf, first, hi if pos is None else pos))
        for m in before[::-1][:BACKOFF]:  # the events before the bad one
            r = self.prefix(first, m.start() + 1)
            if not isinstance(r, Failure):
                return r, m.start(1)
        lo, top, best = 0, len(before) - BACKOFF - 1, None
        while lo <= top:  # many false boundaries before it: search further back
            mid = (lo + top) // 2
            r = self.prefix(first, before[mid].start() + 1)
            if isinstance(r, Failure):
                top = mid - 1
            else:
                best, lo = (r, before[mid].start(1)), mid + 1
        if best is not None:
            return best
        # The first event is the bad one: skip it, up to where the next event decodes alone (a
        # next event that is bad too is counted and skipped as well). Boundaries are looked up
        # lazily: a file of many bad events must not rescan the whole slice for each.
        it = _BOUNDARY.finditer(self.buf, first if pos is None else pos, hi)
        ahead = list(islice(it, 5))
        bad = 1
        while ahead:
            m = ahead.pop(0)
            ahead.extend(islice(it, 5 - len(ahead) - 1))
            for nxt in ahead:
                r = self.prefix(m.start(1), nxt.start() + 1)
                if not isinstance(r, Failure):
                    return [_BAD_EVENT] * bad, m.start(1)
                if not r.truncated:
                    bad += 1
                    break
        return None


def decode_run(buf, start: int, end: int, fast: bool = True) -> Iterator[list | scan.Scanned]:
    """Decode buf[start:end] — '[' + a run of whole events — in place: the bytes between events
    are overwritten (a run is read once), and the two bytes after it become ',{' so the run's
    end is a boundary like the others. The compiled scanner reads what it can; the events it
    leaves (odd content) go through msgspec a short slice at a time. Raises ValueError when the
    run's end is not a real boundary (then the whole load is done again in one process)."""
    buf[end], buf[end + 1] = ord(","), ord("{")
    slicer = _Slicer(buf)
    scanner = Scanner() if fast and scan.available() else None
    first = start + 1
    small: list = []   # short batches (around bad events) are handed on together
    while first < end:
        size = SLICE
        if scanner is not None:
            items, first, status = scanner.take(buf, first, end + 1)
            if items:
                if small:
                    yield small
                    small = []
                yield from items
            if first >= end:
                break
            if status == scan.ARRAY_END:
                scanner = None   # not a run of events: msgspec has the last word
            size = scanner.slow_size() if scanner is not None else SLICE
        hi = end + 2
        if end - first > 2 * size:
            m = _STRONG_BOUNDARY.search(buf, first + size, end)
            if m is not None:
                hi = m.start(1) + 1
        r = slicer.take(first, hi)
        if r is None and hi != end + 2:  # that boundary sat inside a string: up to the run's end
            r = slicer.take(first, end + 2)
        if r is None:
            last = slicer.prefix(first, end)
            if not isinstance(last, Failure) or last.truncated:  # the run's end is not an event's
                raise ValueError("run of events does not decode")
            r = [_BAD_EVENT], end + 1   # the run's last event is the unreadable one
        events, first = r
        if len(events) < CHUNK_EVENTS:
            small.extend(events)
            if len(small) < CHUNK_EVENTS and scanner is None:
                continue
            events, small = small, []
        yield events
    if small:
        yield small


class Scanner:
    """The compiled fast path (kerneldiff.core.ingest.scan) for one reader: its output arrays and name cache."""

    ROWS = 32768   # rows per scan call: ~8 MB of events, ~3 MB of output arrays

    def __init__(self) -> None:
        self.out = scan.Out(self.ROWS)
        self.names: dict[int, tuple[int, str]] = {}
        self.last_events = 1

    def take(self, buf, first: int, n: int) -> tuple[list[scan.Scanned], int, int]:
        """Scan the events of buf[first:n]: (batches, where the scan stopped, why)."""
        arr = np.frombuffer(buf, np.uint8, count=n)
        got: list[scan.Scanned] = []
        out = self.out
        while True:
            scan.scan(arr, first, n, out, _SCAN_TABLES)
            stop, status = int(out.state[3]), int(out.state[4])
            if out.state[1]:
                try:
                    got.append(scan.collect(arr, out, self.names))
                except scan.NameCollision:
                    self.names.clear()
                    return got, first, scan.BAIL
            self.last_events = int(out.state[1])
            first = stop
            if status != scan.FULL:
                return got, first, status

    def slow_size(self) -> int:
        """Bytes handed to msgspec after the scanner stopped at an odd event: a few events'
        worth, or a whole slice when the scanner reads nothing at all in this stretch."""
        return WINDOW if self.last_events else SLICE


def decode_array(raw: bytes) -> list:
    """All readable events of a complete JSON array of events; unreadable ones are skipped."""
    r = try_decode(raw)
    if not isinstance(r, Failure):
        return r
    body = raw.strip()[1:-1].strip()
    if not body:
        return []
    data = bytearray(b"[" + body + b",{")
    slicer, first, out = _Slicer(data), 1, []
    while first < len(data) - 2:
        r = slicer.take(first, len(data))
        if r is None:
            out.append(_BAD_EVENT)  # an unreadable remainder counts as one event
            break
        events, first = r
        out.extend(events)
    return out


# --- columns ----------------------------------------------------------------------------------

# event category -> group code; kernels, memcpy and memset share one table (code - 1 = kind)
G_KERNEL, G_MEMCPY, G_MEMSET, G_PYTHON, G_CPU, G_LAUNCH, G_ANNOT, G_GPU_ANNOT, G_UNREADABLE = range(1, 10)
CHUNK_EVENTS = 4096   # events columnised at once (see Columns.add)
GROUP_OF: dict[Any, int] = {
    "kernel": G_KERNEL, "gpu_memcpy": G_MEMCPY, "gpu_memset": G_MEMSET,
    # older Kineto / HTA spellings
    "Kernel": G_KERNEL, "Memcpy": G_MEMCPY, "Memset": G_MEMSET, "gpu_memcpy_async": G_MEMCPY,
    "python_function": G_PYTHON,
    "cpu_op": G_CPU, "operator": G_CPU, "Operator": G_CPU,
    "cuda_runtime": G_LAUNCH, "cuda_driver": G_LAUNCH, "hip_runtime": G_LAUNCH, "hip_api": G_LAUNCH,
    "Runtime": G_LAUNCH, "cuda_api": G_LAUNCH,
    "user_annotation": G_ANNOT, "gpu_user_annotation": G_GPU_ANNOT,
    _UNREADABLE: G_UNREADABLE,
}
# columns of each table, in the dtypes of kerneldiff.core.model
SPECS: dict[str, tuple[tuple[str, str], ...]] = {
    "k": (("ts", "f8"), ("dur", "f8"), ("name", "i4"), ("kind", "i1"), ("stream", "i8"), ("device", "i8"),
          ("corr", "i8"), ("ext", "i8")),
    "p": (("ts", "f8"), ("dur", "f8"), ("name", "i4"), ("pyid", "i8"), ("parent", "i8"), ("tid", "i8"),
          ("pid", "i8")),
    "c": (("ts", "f8"), ("dur", "f8"), ("name", "i4"), ("ext", "i8"), ("tid", "i8"), ("pid", "i8")),
    "l": (("ts", "f8"), ("dur", "f8"), ("name", "i4"), ("corr", "i8"), ("ext", "i8"), ("tid", "i8"),
          ("pid", "i8")),
    "a": (("ts", "f8"), ("dur", "f8"), ("name", "i4"), ("tid", "i8"), ("pid", "i8"), ("gpu", "i1")),
}
_SCAN_TABLES = scan.tables(GROUP_OF)
_GROUP_CODES = {"k": (G_KERNEL, G_MEMSET), "p": (G_PYTHON, G_PYTHON), "c": (G_CPU, G_CPU),
                "l": (G_LAUNCH, G_LAUNCH), "a": (G_ANNOT, G_GPU_ANNOT)}
MAX_TS, MAX_DUR = 1e18, 1e15   # beyond these a timestamp / duration is garbage, not data

_cat, _name, _ts, _dur, _pid, _tid, _args = (attrgetter(f) for f in ("cat", "name", "ts", "dur", "pid", "tid", "args"))
# args fields each table reads; the first one also detects events without args
_ARG_FIELDS = {"k": ("correlation", "external_id", "stream", "device"), "p": ("python_id", "python_parent"),
               "c": ("external_id",), "l": ("correlation", "external_id")}
_ON_EVENT = {g: tuple(attrgetter("args." + f) for f in fs) for g, fs in _ARG_FIELDS.items()}
_ON_ARGS = {g: tuple(attrgetter(f) for f in fs) for g, fs in _ARG_FIELDS.items()}


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
    if g != "a":
        src, get = sub, _ON_EVENT[g]
        try:
            first = _ints(src, get[0])
        except AttributeError:  # some events have no args: read those as empty args
            src, get = [x if x is not None else _EMPTY_ARGS for x in map(_args, sub)], _ON_ARGS[g]
            first = _ints(src, get[0])
        if g == "k":
            return {"corr": first, "ext": _ints(src, get[1]), "stream": _ints_or(src, get[2], sub, _tid),
                    "device": _ints_or(src, get[3], sub, _pid)}
        if g == "p":
            cols = {"pyid": first, "parent": _ints(src, get[1])}
        elif g == "c":
            cols = {"ext": first}
        else:
            cols = {"corr": first, "ext": _ints(src, get[1])}
    cols["tid"] = _ints(sub, _tid)
    cols["pid"] = _ints(sub, _pid)
    return cols


# integer columns of each group, as fields of the scanner's rows (kerneldiff.core.ingest.scan)
_SCANNED_FIELDS = {"k": {"corr": scan.CORR, "ext": scan.EXT}, "p": {"pyid": scan.PYID, "parent": scan.PARENT},
                   "c": {"ext": scan.EXT}, "l": {"corr": scan.CORR, "ext": scan.EXT}, "a": {}}


def _scanned_ints(g: str, ints: np.ndarray) -> dict[str, np.ndarray]:
    """The integer columns of group `g` from the scanner's rows: absent or null reads as -1,
    as on the struct path; a kernel without a stream / device arg takes its tid / pid."""
    present = ints != scan.MISSING
    col = np.where(present, ints, -1)
    cols = {c: col[:, f].copy() for c, f in _SCANNED_FIELDS[g].items()}
    if g == "k":
        cols["stream"] = np.where(present[:, scan.STREAM], col[:, scan.STREAM], col[:, scan.TID])
        cols["device"] = np.where(present[:, scan.DEVICE], col[:, scan.DEVICE], col[:, scan.PID])
    else:
        cols["tid"] = col[:, scan.TID].copy()
        cols["pid"] = col[:, scan.PID].copy()
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

    def _intern(self, sub) -> np.ndarray:
        d = self._ids
        try:
            return np.fromiter(map(d.__getitem__, map(_name, sub)), np.int32, len(sub))
        except KeyError:
            pass
        names = list(map(_name, sub))
        for s in dict.fromkeys(names):
            if s not in d:
                d[s] = len(self.strings)
                self.strings.append(s)
        return np.fromiter(map(d.__getitem__, names), np.int32, len(names))

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
        self._append(g, ts, dur, name, codes, _struct_ints(g, sub))

    def _add_scanned(self, sc: scan.Scanned) -> None:
        """Rows of the compiled scanner: the same filtering and columns as _add_group."""
        self.events += sc.events
        if not len(sc):
            return
        d = self._ids
        for s in sc.names:
            if s not in d:
                d[s] = len(self.strings)
                self.strings.append(s)
        ids = np.fromiter(map(d.__getitem__, sc.names), np.int32, len(sc.names))
        name_all = ids[sc.name]
        for g, (lo, hi) in _GROUP_CODES.items():
            sel = (sc.code == lo) if lo == hi else ((sc.code >= lo) & (sc.code <= hi))
            idx = np.flatnonzero(sel)
            if not len(idx):
                continue
            ts, dur, name = sc.floats[idx, 0], sc.floats[idx, 1], name_all[idx]
            keep = self._valid_rows(ts, dur, name)
            if keep is not None:
                if not len(keep):
                    continue
                idx, ts, dur, name = idx[keep], ts[keep], dur[keep], name[keep]
            self._append(g, ts, dur, name, sc.code[idx], _scanned_ints(g, sc.ints[idx]))

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


# --- bytes ----------------------------------------------------------------------------------


def read_columns(path: str, progress: Callable[[int, int], None] | None = None,
                 fast: bool = True) -> tuple[Columns, EventReader]:
    """Every event of a trace, read in this process, as columns; the reader holds the metadata."""
    reader = EventReader(path, progress=progress, fast=fast)
    col = Columns()
    try:
        for batch in reader.batches():
            col.add(batch)
    finally:
        reader.close()
    return col, reader


class _Inflater:
    """Inflates a gzip file in a background thread (ISA-L releases the GIL), so decompression
    overlaps with decoding. Concatenated members are legal (`cat a.gz b.gz`); bytes after the
    last member that are not another member are ignored, as gzip(1) does."""

    def __init__(self, path: str, f) -> None:
        self.path = path
        self._f = f
        self._q: queue.Queue = queue.Queue(maxsize=4)   # <= 4 x GZ_OUT bytes in flight
        self._stop = False
        self._pending = memoryview(b"")
        self.consumed = 0
        self.produced = 0
        self.truncated = False      # the stream ended before its end marker
        self._t = threading.Thread(target=self._run, name="kerneldiff-inflate", daemon=True)
        self._t.start()

    def _run(self) -> None:
        d = _zlib.decompressobj(wbits=31)
        trailing = False
        try:
            while not self._stop and not trailing:
                raw = self._f.read(GZ_BLOCK)
                if not raw:
                    if d is not None:  # a killed writer: what was inflated is all there is
                        if not self.produced:
                            raise TraceError(self.path, "gzip stream is truncated (unexpected end of file)")
                        self.truncated = True
                    break
                self.consumed += len(raw)
                while raw and not self._stop:
                    if d is None:  # between members
                        if not raw.startswith(b"\x1f\x8b"):
                            trailing = True  # bytes after the last member: ignored
                            break
                        d = _zlib.decompressobj(wbits=31)
                    try:
                        out = d.decompress(raw, GZ_OUT)
                    except (zlib.error, _zlib.error) as e:
                        raise TraceError(self.path, f"corrupt gzip data at byte {self.consumed} ({e})") from None
                    if out:
                        self.produced += len(out)
                        self._put(out)
                    if d.eof:
                        raw, d = d.unused_data, None
                    else:
                        raw = d.unconsumed_tail
            self._put(None)
        except BaseException as e:  # handed to the reading thread
            self._put(e)

    def _put(self, item) -> None:
        while not self._stop:
            try:
                self._q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def readinto(self, mv: memoryview) -> int:
        while not len(self._pending):
            item = self._q.get()
            if item is None or isinstance(item, BaseException):
                self._q.put(item)  # stay at the end / keep failing
                if item is None:
                    return 0
                raise item
            self._pending = memoryview(item)
        k = min(len(mv), len(self._pending))
        mv[:k] = self._pending[:k]
        self._pending = self._pending[k:]
        return k

    def close(self) -> None:
        self._stop = True
        try:
            while True:
                self._q.get_nowait()
        except queue.Empty:
            pass
        self._t.join(timeout=5)


class Source:
    """Bytes of a trace file, plain (read straight into the caller's buffer) or gzip."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.size = os.path.getsize(path)
            self._f = open(path, "rb", buffering=0)
        except OSError as e:
            raise file_error(path, e) from None
        self.compressed = self._f.read(2) == b"\x1f\x8b"
        self._f.seek(0)
        self._inflater = _Inflater(path, self._f) if self.compressed else None
        self._read = 0

    @property
    def consumed(self) -> int:
        """File bytes read so far (compressed bytes for gzip): drives progress."""
        return self._inflater.consumed if self._inflater else self._read

    def readinto(self, mv: memoryview) -> int:
        """Fill as much of `mv` as possible; 0 only at the end."""
        got = 0
        read = self._inflater.readinto if self._inflater is not None else self._f.readinto
        try:
            while got < len(mv):
                with mv[got:] as part:  # released even on errors: mv may be shared memory
                    k = read(part)
                if not k:
                    break
                got += k
        except OSError as e:
            raise TraceError(self.path, f"cannot read: {e.strerror or e}") from None
        self._read += got
        return got

    def close(self) -> None:
        if self._inflater is not None:
            self._inflater.close()
        self._f.close()


class _Buffer:
    """A growable byte buffer whose byte 0 is reserved for the '[' that turns a run of events
    into a JSON array; data lives in buf[1:n]."""

    def __init__(self, cap: int) -> None:
        self.buf = bytearray(cap + 2)
        self.mv = memoryview(self.buf)
        self.buf[0] = _LBRACKET
        self.n = 1

    @property
    def free(self) -> int:
        return len(self.buf) - 2 - self.n

    def grow(self) -> None:
        new = bytearray(2 * len(self.buf))
        new[:self.n] = self.mv[:self.n]
        self.mv.release()
        self.buf, self.mv = new, memoryview(new)

    def fill(self, src: Source) -> int:
        k = src.readinto(self.mv[self.n:len(self.buf) - 2])
        self.n += k
        return k

    def drop_front(self, start: int) -> None:
        """Keep buf[start:n] as the new data (start > 0)."""
        rest = self.n - start
        self.buf[1:1 + rest] = self.mv[start:self.n]
        self.n = 1 + rest

    def close(self) -> None:
        self.mv.release()


class EventReader:
    """Decoded event batches of one trace (`batches`), or undecoded runs of events for worker
    processes (`fill_run` until None, then `finish_batches`); collects the top-level metadata."""

    def __init__(self, path: str, progress: Callable[[int, int], None] | None = None,
                 fast: bool = True) -> None:
        self.path = path
        self.fast = fast   # the compiled scanner first (kerneldiff.core.ingest.scan), msgspec for what it leaves
        self.src = Source(path)
        self.meta: dict[str, Any] = {}
        self.top: str | None = None
        self.truncated_at: int | None = None
        self._progress = progress
        self._buf = _Buffer(SLICE)
        self.events_offset = -1   # (decompressed) byte offset of the first event

    def close(self) -> None:
        self.src.close()
        if self._buf is not None:
            self._buf.close()

    def _fail(self, problem: str) -> TraceError:
        return TraceError(self.path, problem)

    def open_events(self) -> None:
        """Read up to the start of the events array; collect the metadata before it."""
        b = self._buf
        while True:
            k = b.fill(self.src)
            if b.buf[1:4] == b"\xef\xbb\xbf":  # a UTF-8 byte-order mark is not content
                b.drop_front(4)
            lead = _NONSPACE.search(b.buf, 1, b.n)
            if lead:
                c = b.buf[lead.start()]
                if c == _LBRACKET:
                    self.top = "array"
                    pos = lead.start() + 1
                    break
                if c != ord("{"):
                    raise self._fail("not JSON: a Chrome/Kineto trace must start with '{' or '['")
                self.top = "object"
                m = _EVENTS_KEY.search(b.buf, 1, b.n)
                if m:
                    self._parse_head(bytes(b.mv[1:m.start()]))
                    pos = m.end()
                    break
            if k == 0:
                whole = bytes(b.mv[1:b.n])
                if not whole.strip():
                    raise self._fail("file is empty" if self.src.size == 0 else "no JSON content (blank)")
                if self.top == "object":
                    self._parse_whole_object(whole)
                    raise self._fail("JSON object has no 'traceEvents' array: not a Chrome/Kineto trace")
                raise self._fail("not a trace")
            if b.free == 0:
                if b.n > 1024 * 1024 * 1024:
                    raise self._fail("no traceEvents array in the first 1 GB")
                b.grow()
        self.events_offset = pos - 1
        b.drop_front(pos)

    def batches(self) -> Iterator[list]:
        """Decoded event batches of the whole file (after `open_events`, done here if needed)."""
        if self.top is None:
            self.open_events()
        b = self._buf
        base = self.events_offset  # stream offset of buf[1]
        scanner = Scanner() if self.fast and scan.available() else None
        while True:
            while b.free and b.fill(self.src):
                pass
            if b.free:  # end of the stream
                break
            slicer, first, got = _Slicer(b.buf), 1, []
            while b.n - first > WINDOW:  # usually once; more when bad events cut slices short
                hi = b.n
                if scanner is not None:
                    items, first, status = scanner.take(b.buf, first, b.n)
                    got.extend(items)
                    if status == scan.LIMIT:
                        break
                    if status == scan.ARRAY_END:
                        scanner = None   # the array's end and the metadata after it: msgspec's
                        continue
                    hi = min(b.n, first + scanner.slow_size())
                cut = slicer.take(first, hi)
                if cut is None and hi != b.n:
                    cut = slicer.take(first, b.n)
                if cut is None:
                    break
                events, first = cut
                if got and type(got[-1]) is list:
                    got[-1].extend(events)   # msgspec's pieces of one buffer go on as one batch
                else:
                    got.append(events)
            yield from got
            if first == 1:
                cut = self._before_blanks(b)
                if cut is None:  # no real boundary yet (a giant event): keep reading
                    if b.n > MAX_EVENT:
                        raise self._fail("invalid JSON inside traceEvents (no decodable run of events)")
                    b.grow()
                    continue
                events, first = cut
                yield events
            b.drop_front(first)
            base += first - 1
            if self._progress:
                self._progress(self.src.consumed, self.src.size)
        yield from self._finish(bytes(b.mv[1:b.n]), base)

    def _before_blanks(self, b: _Buffer) -> tuple[list, int] | None:
        """A buffer of events followed by nothing but blanks (legal between events, and the
        shape of a gzip bomb): decode the events and drop the blanks instead of buffering them."""
        m = _TRAILING_COMMA.search(b.buf, 1, b.n)
        if m is not None:
            events = _Slicer(b.buf).prefix(1, m.start() + 1)
            if not isinstance(events, Failure):
                return events, b.n
        elif not _NONSPACE.search(b.buf, 1, b.n):  # only blanks since the last event
            return [], b.n
        return None

    def fill_run(self, dst: memoryview) -> int | None:
        """Fill `dst` with '[' + a run of whole events, straight from the file (one copy), for
        another process to decode; returns the index where its ']' goes. The run is cut at the
        last boundary candidate; the decoding side proves it (a false boundary cannot decode).
        None at the end of the stream (the rest is decoded here: `finish_batches`); -1 when
        `dst` holds no boundary at all (an event bigger than `dst`)."""
        if self.top is None:
            self.open_events()
            self._carry = bytes(self._buf.mv[1:self._buf.n])
            self._tail_base = self.events_offset
            self._buf.close()
            self._buf = None  # the runs live in the caller's buffers from now on
        carry = self._carry
        dst[0] = _LBRACKET
        n = 1 + len(carry)
        dst[1:n] = carry
        cap = len(dst) - 1
        while n < cap:
            with dst[n:cap] as part:
                k = self.src.readinto(part)
            if not k:
                self._tail = bytes(dst[1:n])
                return None
            n += k
        m = None
        for pattern, lo in ((_STRONG_BOUNDARY, n - WINDOW), (_STRONG_BOUNDARY, 1), (_BOUNDARY, 1)):
            for m_ in pattern.finditer(dst, max(1, lo), n):
                m = m_
            if m is not None:
                break
        if m is None:
            return -1
        self._carry = bytes(dst[m.start(1):n])
        self._tail_base += m.start(1) - 1
        return m.start() + 1

    def finish_batches(self) -> Iterator[list]:
        yield from self._finish(self._tail, self._tail_base)

    def _finish(self, buf: bytes, base: int) -> Iterator[list]:
        """The last events, the end of the array and the metadata after it. Events are taken
        off the front (skipping unreadable ones); once no more can be taken, the rest must parse
        as the document's end — if it never does, the file was cut short: keep every complete
        event."""
        body = buf.lstrip()
        if body.startswith(b","):
            body = body[1:]
        data = bytearray(b"[" + body + b",{")  # ',{' makes the last complete event end at a boundary
        slicer, first, got = _Slicer(data), 1, []
        scanned = False
        if self.fast and scan.available():  # the bulk; what it leaves is sorted out below
            items, first, _ = Scanner().take(data, 1, len(data) - 2)
            scanned = bool(items)
            yield from items
        while True:
            cut = slicer.take(first, len(data))
            if cut is None or cut[0][:1] == [_BAD_EVENT]:
                # nothing more to take, or "unreadable" — which may be the array's end instead
                end = self._document_end(data, first)
                if end is not None:
                    yield got + end
                    return
            if cut is None:
                bad = self._bad_last_event(data, first)
                if bad is None:
                    break
                yield got + bad
                return
            events, first = cut
            got.extend(events)
        yield got
        self.truncated_at = base + len(buf)
        if not got and not scanned and base <= self.events_offset:
            raise self._fail("truncated or invalid JSON: no complete event could be read")

    def _bad_last_event(self, data: bytearray, first: int) -> list | None:
        """The last event is unreadable and the document ends after it: skip it (counted)."""
        for m in _EVENT_THEN_END.finditer(data, first, len(data) - 2):
            end = self._document_end(data, m.start() + 1)
            if end is not None:
                return [_BAD_EVENT, *end]
        return None

    def _document_end(self, data: bytearray, first: int) -> list | None:
        """Events of data[first:-2] when it is the complete end of the document, else None.
        Parsed in place: the (already decoded) bytes before `first` hold the opening text."""
        stop = len(data) - 2
        head = b"[" if self.top == "array" else b'{"traceEvents":['
        if first < len(head):
            return self._parse_end(head + bytes(data[first:stop]))
        saved = bytes(data[first - len(head):first])
        data[first - len(head):first] = head
        try:
            with memoryview(data)[first - len(head):stop] as view:
                return self._parse_end(view)
        finally:
            data[first - len(head):first] = saved

    def _parse_end(self, buf) -> list | None:
        if self.top == "array":
            r = try_decode(buf)
            return None if isinstance(r, Failure) else r
        try:
            doc = msgspec.json.decode(buf, type=dict[str, msgspec.Raw])
        except (msgspec.DecodeError, *_ODD_ERRORS):
            return None
        raw_events = bytes(doc.pop("traceEvents", b"[]"))
        for k, v in doc.items():
            try:
                self.meta[k] = msgspec.json.decode(v)
            except (msgspec.DecodeError, *_ODD_ERRORS):
                pass
        del doc  # its Raw values point into `buf`
        if not raw_events.lstrip().startswith(b"["):
            raise self._fail("'traceEvents' is not a list")
        return decode_array(raw_events)

    def _parse_head(self, head: bytes) -> None:
        try:
            self.meta.update(msgspec.json.decode(head.rstrip().rstrip(b",") + b"}", type=dict[str, Any]))
        except (msgspec.DecodeError, *_ODD_ERRORS):
            pass  # metadata is optional; the probe already reported what it could

    def _parse_whole_object(self, buf: bytes) -> None:
        try:
            doc = msgspec.json.decode(buf)
        except (msgspec.DecodeError, *_ODD_ERRORS):
            raise self._fail("invalid JSON (not a complete JSON document)") from None
        if isinstance(doc, dict) and "traceEvents" in doc:
            raise self._fail("'traceEvents' is not a list")
