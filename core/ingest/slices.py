"""Cutting the `traceEvents` array into slices at event boundaries, and handing each slice to the
compiled scanner (see scan.py) or to msgspec (decode.py).

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
import re
import threading
from collections.abc import Iterator
from itertools import islice

import numpy as np

from kerneldiff.core.ingest import document, scan
from kerneldiff.core.ingest.columns import _SCAN_TABLES, CHUNK_EVENTS
from kerneldiff.core.ingest.decode import _BAD_EVENT, Failure, try_decode
from kerneldiff.core.lazy_pattern import LazyPattern


# Bytes decoded at once. A 1 MB slice decodes to ~2.5 MB of objects, which are still in the
# CPU cache when Columns.add walks them field by field; 16 MB slices measured ~20% slower.
SLICE = 1024 * 1024
RUN = 16 * 1024 * 1024       # bytes handed to a worker process at once (amortises the messages)
WINDOW = 64 * 1024           # where the last boundary of a slice is looked for first
MAX_EVENT = 512 * 1024 * 1024  # a slice that still has no decodable boundary at this size is not JSON
_BOUNDARY = re.compile(rb"\}\s*,\s*(\{)")  # group 1: where the next event starts
# A boundary followed by a quoted key and a colon cannot lie inside a JSON string (the quotes
# would have to be escaped), short of contrived keys: runs handed to other processes are cut
# there, so a run that fails to decode (and sends the load back to one process) is rare.
_STRONG_BOUNDARY = LazyPattern(rb'\}\s*,\s*(\{)\s*"[^"\\]*"\s*:')
_LBRACKET, _RBRACKET = ord("["), ord("]")
# where a run for another process is cut, tried in order: the last strong boundary in the run's
# last WINDOW bytes (a flag: True), else the last one anywhere in it, else the last plain one
CUT_TRIES = ((_STRONG_BOUNDARY, True), (_STRONG_BOUNDARY, False), (_BOUNDARY, False))


def last_match(pattern: re.Pattern, buf, lo: int = 0, hi: int | None = None) -> re.Match | None:
    m = None
    for m in pattern.finditer(buf, lo, len(buf) if hi is None else hi):
        pass
    return m

# a reader in one process has its next buffer scanned in a thread while this one's rows become
# columns (`Scanner.scan_ahead`); False (or KERNELDIFF_SCAN_AHEAD=0 at import): one scan at a time.
# Read at call time: tests compare both.
SCAN_AHEAD = os.environ.get("KERNELDIFF_SCAN_AHEAD", "1") != "0"

BACKOFF = 16       # boundaries tried, from the last one back, before deciding a slice needs more data


class ArrayEnd(ValueError):
    """The events array ended inside a slice: its last `events`, and `end`, the index just after
    its ']'. What follows is the document's end, never more events (a second document, say).
    A ValueError: a worker's run that holds the array's end sends the load back to one process."""

    def __init__(self, events: list, end: int) -> None:
        super().__init__("the events array ended")
        self.events, self.end = events, end


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
            if r.trailing:
                self._array_end(first, first - 1 + r.pos)
            if not r.truncated:
                return self._salvage(first, hi, r)
        return None

    def _array_end(self, first: int, stop: int) -> None:
        """buf[first - 1:stop] is '[' + events + ']' + blanks, a complete array: raise ArrayEnd."""
        close = stop - 1
        while self.buf[close] != _RBRACKET:
            close -= 1
        r = self.prefix(first, close)
        if isinstance(r, Failure):   # cannot be: msgspec read this array up to `stop`
            return
        raise ArrayEnd(r, close + 1)

    def _skip_bad(self, first: int, hi: int) -> tuple[list, int] | None:
        """The event at `first` is unreadable: skip it by its structure (strings and brackets),
        counted as one event. Raises ArrayEnd when the array's ']' follows it."""
        try:
            end = document.ws(self.buf, document.skip_value(self.buf, first, hi), hi)
        except (document.Incomplete, document.Malformed):
            return None
        if end < hi and self.buf[end] == _RBRACKET:
            raise ArrayEnd([_BAD_EVENT], end + 1)
        if end < hi and self.buf[end] == ord(","):
            nxt = document.ws(self.buf, end + 1, hi)
            if nxt < hi and self.buf[nxt] == ord("{"):
                return [_BAD_EVENT], nxt
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
        skipped = self._skip_bad(first, hi)
        if skipped is not None:
            return skipped
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
    """The compiled fast path (kerneldiff.core.ingest.scan) for one reader: its output arrays and name cache.

    A reader may have the next buffer scanned ahead, in a thread, while this one's rows are
    collected (`take`'s `ahead`, `scan_ahead`): the scan releases the GIL and keeps no state
    between calls, so it runs beside the Python that turns the last scan's rows into columns, on
    the second core. The same calls on the same bytes: the same rows."""

    ROWS = 32768   # rows per scan call: ~8 MB of events, ~3 MB of output arrays

    def __init__(self) -> None:
        self.out = scan.Out(self.ROWS)
        self.spare: scan.Out | None = None   # the output of a scan run ahead (made on first use)
        self._ahead: tuple | None = None     # (thread, buf, first, n, what it raised)
        self.names = scan.NameCache()
        self.shapes = scan.NameCache()   # raw texts (record_shapes, launch grids) by hash
        self.last_events = 1

    def take(self, buf, first: int, n: int, ahead=None) -> tuple[list[scan.Scanned], int, int]:
        """Scan the events of buf[first:n]: (batches, where the scan stopped, why).

        ahead(stop): called when the scan stopped at the buffer's end (an event cut by it), before
        its rows are collected: the reader then fills its next buffer and may `scan_ahead` it."""
        arr = np.frombuffer(buf, np.uint8, count=n)
        got: list[scan.Scanned] = []
        while True:
            out = self._scanned(buf, arr, first, n)
            stop, status = int(out.state[3]), int(out.state[4])
            if ahead is not None and status == scan.LIMIT and stop > first:
                ahead(stop)
            if out.state[1]:
                got.append(scan.collect(arr, out, self.names, self.shapes))
            self.last_events = int(out.state[1])
            first = stop
            if status != scan.FULL:
                return got, first, status

    def scan_ahead(self, buf, first: int, n: int) -> None:
        """Scan buf[first:n] in a thread, into the spare output; the `take` of the same buffer and
        range takes its rows."""
        self.settle()
        if self.spare is None:
            self.spare = scan.Out(self.ROWS)
        arr, out, raised = np.frombuffer(buf, np.uint8, count=n), self.spare, []

        def run() -> None:
            try:
                scan.scan(arr, first, n, out, _SCAN_TABLES)
            except BaseException as e:   # raised again by the thread that takes the rows
                raised.append(e)

        t = threading.Thread(target=run, name="kerneldiff-scan", daemon=True)
        t.start()
        self._ahead = (t, buf, first, n, raised)

    def settle(self) -> tuple | None:
        """Wait for a scan run ahead, if any; returns it (thread, buf, first, n, raised)."""
        a, self._ahead = self._ahead, None
        if a is not None:
            a[0].join()
        return a

    def _scanned(self, buf, arr, first: int, n: int) -> scan.Out:
        """The output of scanning buf[first:n]: the scan run ahead for it, or a scan now."""
        a = self.settle()
        if a is not None:
            if a[4]:
                raise a[4][0]
            if a[1] is buf and a[2] == first and a[3] == n:
                self.out, self.spare = self.spare, self.out
                return self.out
        scan.scan(arr, first, n, self.out, _SCAN_TABLES)
        return self.out

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
