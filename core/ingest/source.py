"""Trace bytes: a plain file streamed, or gzip inflated with ISA-L in a thread in bounded steps;
`EventReader` finds `traceEvents`, drives the cutter over it and keeps the metadata around it."""

from __future__ import annotations

import os
import queue
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kerneldiff.core.msgspec_import import msgspec

from kerneldiff.core.errors import TraceError
from kerneldiff.core.fileio import open_regular
from kerneldiff.core.gzip_stream import GZIP_MAGIC, TRUNCATED, GzipStream
from kerneldiff.core.ingest import scan
from kerneldiff.core.ingest.columns import Columns
from kerneldiff.core.ingest import slices   # SLICE, WINDOW, MAX_EVENT read at call time (tests shrink them)
from kerneldiff.core.ingest import document, longstrings
from kerneldiff.core.ingest.slices import CUT_TRIES, _LBRACKET, ArrayEnd, Scanner, _Slicer, decode_array, last_match
from kerneldiff.core.ingest.decode import _ODD_ERRORS, Failure
from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.processes.forkserver import cpus

GZ_BLOCK = 1024 * 1024       # compressed bytes read per step by the gzip thread
GZ_OUT = 8 * 1024 * 1024     # at most this much inflated output per step (bounds memory)
_NONSPACE = re.compile(rb"\S")
_TRAILING_COMMA = LazyPattern(rb"\}\s*,\s*\Z")
MAX_TAIL = 1024 * 1024 * 1024   # the document's end after the events array, at most
GIANT = 64 * 1024 * 1024        # a buffer this big that holds no whole event: cut its long strings

# --- bytes ----------------------------------------------------------------------------------


def read_columns(path: str, progress: Callable[[int, int], None] | None = None,
                 fast: bool = True, ahead: bool = True) -> tuple[Columns, EventReader]:
    """Every event of a trace, read in this process, as columns; the reader holds the metadata.
    ahead: the machine is this load's (see `EventReader`)."""
    reader = EventReader(path, progress=progress, fast=fast, ahead=ahead)
    col = Columns()
    try:
        for batch in reader.batches():
            col.add(batch)
    finally:
        reader.close()
    return col, reader


class _Inflater:
    """Inflates a gzip file in a background thread (ISA-L releases the GIL), so decompression
    overlaps with decoding; the members are read by the one gzip loop (core/gzip_stream.py). A
    stream cut short keeps what was inflated (a killed writer's trace), unless that is nothing."""

    def __init__(self, path: str, f) -> None:
        self.path = path
        self._f = f
        self._q: queue.Queue = queue.Queue(maxsize=4)   # <= 4 x GZ_OUT bytes in flight
        self._stop = False
        self._pending = memoryview(b"")
        self.consumed = 0
        self._t = threading.Thread(target=self._run, name="kerneldiff-inflate", daemon=True)
        self._t.start()

    def _read(self) -> bytes:
        raw = self._f.read(GZ_BLOCK)
        self.consumed += len(raw)
        return raw

    def _run(self) -> None:
        stream = GzipStream(self._read, piece=GZ_OUT)
        try:
            for out in stream:
                if self._stop:
                    break
                self._put(out)
            if stream.error is not None:
                raise TraceError(self.path, f"corrupt gzip data at byte {self.consumed} ({stream.error})")
            if stream.cut and not stream.produced:
                raise TraceError(self.path, TRUNCATED)
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
        self._f, st = open_regular(path, buffering=0)   # a FIFO or a device is refused, never read
        self.size = st.st_size
        self.compressed = self._f.read(2) == GZIP_MAGIC
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

    def fileno(self) -> int:
        return self._f.fileno()

    def mark(self, offset: int) -> None:
        """Progress when runs are read by other processes (`EventReader.next_span`)."""
        self._read = offset

    def close(self) -> None:
        if self._inflater is not None:
            self._inflater.close()
        self._f.close()


def _pread_all(fd: int, n: int, offset: int, reader) -> bytes:
    """n bytes at offset (fewer only at the end of a file that shrank: then the worker's check
    of the file's identity or the tail's decoding reports it)."""
    parts, got = [], 0
    try:
        while got < n:
            b = os.pread(fd, n - got, offset + got)
            if not b:
                break
            parts.append(b)
            got += len(b)
    except OSError as e:
        raise reader._fail(f"cannot read: {e.strerror or e}") from None
    return b"".join(parts)


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
                 fast: bool = True, ahead: bool = True) -> None:
        self.path = path
        self.fast = fast   # the compiled scanner first (kerneldiff.core.ingest.scan), msgspec for what it leaves
        self.src = Source(path)
        # the next buffer scanned in a thread (`batches`): for a load that has the machine to
        # itself (`ahead`; beside another load, a pair read one process each, the thread only takes
        # its core), and a CPU for the thread besides this one and the gzip inflater's, if any
        # (gzip on two CPUs with the thread too: 5-11 ms slower, ~20 ms more CPU on the real traces)
        self.ahead = ahead and cpus() > 1 + self.src.compressed
        self.meta: dict[str, Any] = {}
        self.top: str | None = None
        self.truncated_at: int | None = None
        self._notes: list[str] = []  # what the reader ignored, for the model's warnings
        self.cut_strings = 0         # strings cut short while reading (longstrings.py)
        self._progress = progress
        # the scanner's work per call (grouping names, building columns) is partly per batch:
        # reads of 4 slices amortise it (60 MB, one process: ~0.13 -> ~0.12 s)
        self._buf = _Buffer(slices.SLICE * (4 if fast and scan.available() else 1))
        self._spare: _Buffer | None = None   # the buffer read ahead into (batches)
        self.events_offset = -1   # (decompressed) byte offset of the first event

    def close(self) -> None:
        self.src.close()
        if self._buf is not None:
            self._buf.close()
        if self._spare is not None:
            self._spare.close()

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
                found = self._find_events(b, lead.start())
                if found is not None:
                    key, pos = found
                    self._parse_head(bytes(b.mv[1:key]))
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

    @property
    def notes(self) -> list[str]:
        cut = [f"{self.cut_strings} string{'s' if self.cut_strings != 1 else ''} longer than {longstrings.LONG_STRING:,} bytes, in events too big to "
               f"hold, were cut to their first {longstrings.KEEP:,} bytes while reading"] if self.cut_strings else []
        return self._notes + cut

    def _find_events(self, b: _Buffer, start: int) -> tuple[int, int] | None:
        """The top-level traceEvents key and its array, by the document's structure (document.py);
        None while more bytes are needed."""
        try:
            found = document.find_events(b.buf, start, b.n)
        except document.Incomplete:
            return None
        except document.DuplicateEvents:
            raise self._duplicate() from None
        except document.Malformed:
            raise self._fail("invalid JSON before the 'traceEvents' array (not a Chrome/Kineto trace)") from None
        if found is None:
            raise self._fail("JSON object has no 'traceEvents' array: not a Chrome/Kineto trace")
        if found[0] < 0:
            raise self._fail("'traceEvents' is not a list")
        return found

    def _duplicate(self) -> TraceError:
        return self._fail("'traceEvents' appears twice at the top level; JSON readers disagree on which "
                          "one counts, so kerneldiff reads neither (keep one)")

    def _second_document(self) -> TraceError:
        return self._fail("more than one JSON document in the file (two traces concatenated?); "
                          "kerneldiff reads one trace per file")

    def batches(self) -> Iterator[list]:
        """Decoded event batches of the whole file (after `open_events`, done here if needed)."""
        if self.top is None:
            self.open_events()
        base = self.events_offset  # stream offset of buf[1]
        scanner = Scanner() if self.fast and scan.available() else None
        following: list[_Buffer] = []   # the next buffer, filled by `ahead`

        def ahead(stop: int) -> None:
            """The scan of b stopped at an event its end cuts: fill the next buffer now, as
            drop_front and fill would after these rows, and have it scanned while they are
            collected (a full buffer: the last one is read by `_finish`)."""
            b, nb = self._buf, self._spare
            if nb is None or len(nb.buf) != len(b.buf):
                if nb is not None:
                    nb.close()
                nb = self._spare = _Buffer(len(b.buf) - 2)
            rest = b.n - stop
            nb.buf[1:1 + rest] = b.mv[stop:b.n]
            nb.n = 1 + rest
            while nb.free and nb.fill(self.src):
                pass
            if not nb.free:
                scanner.scan_ahead(nb.buf, 1, nb.n)
            following.append(nb)

        try:
            yield from self._batches(self._buf, base, scanner, ahead if self.ahead and slices.SCAN_AHEAD else None,
                                     following)
        finally:
            if scanner is not None:
                scanner.settle()   # a scan run ahead never outlives the reader's buffers

    def _batches(self, b: _Buffer, base: int, scanner: Scanner | None, ahead, following: list) -> Iterator[list]:
        while True:
            while b.free and b.fill(self.src):
                pass
            if b.free:  # end of the stream
                break
            slicer, first, got = _Slicer(b.buf), 1, []
            try:
                while b.n - first > slices.WINDOW:  # usually once; more when bad events cut slices short
                    hi = b.n
                    if scanner is not None:
                        items, first, status = scanner.take(b.buf, first, b.n, ahead)
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
            except ArrayEnd as end:   # the events array ended before the file did
                yield from got
                yield end.events
                self._read_document_end(b, end.end)
                return
            yield from got
            if first == 1:
                cut = self._before_blanks(b)
                if cut is None:  # no real boundary yet (a giant event): keep reading
                    if len(b.buf) >= GIANT and self._shorten(b):
                        continue
                    if b.n > slices.MAX_EVENT:
                        raise self._fail("invalid JSON inside traceEvents (no decodable run of events)")
                    b.grow()
                    continue
                events, first = cut
                yield events
            if following:   # filled (and scanned) ahead: b[first:] is its head
                self._spare, self._buf = b, following.pop()
                b = self._buf
            else:
                b.drop_front(first)
            base += first - 1
            if self._progress:
                self._progress(self.src.consumed, self.src.size)
        yield from self._finish(bytes(b.mv[1:b.n]), base, scanner)

    def _shorten(self, b: _Buffer) -> bool:
        """Cut the pending event's giant strings (longstrings.py) instead of growing the buffer."""
        def read(k: int) -> bytes:
            chunk = bytearray(k)
            return bytes(chunk[:self.src.readinto(memoryview(chunk))])

        b.n, cut = longstrings.shorten(b.buf, 1, b.n, read)
        self.cut_strings += cut
        return cut > 0

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
        cap = len(dst) - 1
        n = 1 + min(len(carry), cap - 1)   # a long head can leave more than one run's worth
        dst[1:n] = carry[:n - 1]
        rest = carry[n - 1:]
        while n < cap:
            with dst[n:cap] as part:
                k = self.src.readinto(part)
            if not k:
                self._tail = bytes(dst[1:n])
                return None
            n += k
        m = None
        for pattern, window in CUT_TRIES:
            m = last_match(pattern, dst, max(1, n - slices.WINDOW) if window else 1, n)
            if m is not None:
                break
        if m is None:
            return -1
        self._carry = bytes(dst[m.start(1):n]) + rest
        self._tail_base += m.start(1) - 1
        return m.start() + 1

    def mappable(self) -> tuple[str, tuple] | None:
        """(path, identity) when runs can be handed out as file offsets (`next_span`): a plain
        file without a byte-order mark (the reader's offsets are then the file's). None for
        gzip, where runs must be inflated here (`fill_run`)."""
        if self.src.compressed or self.src.size < 3 or os.pread(self.src.fileno(), 3, 0) == b"\xef\xbb\xbf":
            return None
        st = os.fstat(self.src.fileno())
        return self.path, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def next_span(self, size: int) -> tuple[int, int] | int | None:
        """The next run of whole events of a plain file as offsets (its first event's '{', the
        index just after its last '}'), about `size` bytes, for a worker that maps the file:
        only a window at the run's end is read here, to cut it at a boundary candidate (the
        worker proves it, as with `fill_run`). None when what is left is the tail (decoded here
        by `finish_batches`); -1 when no boundary is found (an event bigger than a run)."""
        if self.top is None:
            self.open_events()
            self._buf.close()
            self._buf = None
            self._span_at = self.events_offset
        fd, at = self.src.fileno(), self._span_at
        if self.src.size - at <= size:
            self._tail = _pread_all(fd, self.src.size - at, at, self)
            self._tail_base = at
            self.src.mark(self.src.size)
            return None
        m = None
        for pattern, window in CUT_TRIES:
            base = at + size - slices.WINDOW if window else at
            m = last_match(pattern, _pread_all(fd, at + size - base, base, self))
            if m is not None:
                break
        if m is None:
            return -1
        self._span_at = base + m.start(1)
        self.src.mark(self._span_at)
        return at, base + m.start() + 1

    def finish_batches(self) -> Iterator[list]:
        yield from self._finish(self._tail, self._tail_base)

    def _finish(self, buf: bytes, base: int, scanner: Scanner | None = None) -> Iterator[list]:
        """The last events, the end of the array and the rest of the document. Events are taken
        off the front (skipping unreadable ones) until the array's ']'; then the rest must be
        the document's end. A file without that end was cut short: keep every complete event.
        `scanner`: the one that read the events before it, whose names and texts it has decoded."""
        body = buf.lstrip()
        if body.startswith(b","):
            body = body[1:]
        data = bytearray(b"[" + body + b",{")  # ',{' makes the last complete event end at a boundary
        stop = len(data) - 2
        slicer, first, got = _Slicer(data), 1, []
        scanned = False
        try:
            if self.fast and scan.available():  # the bulk; what it leaves is sorted out below
                items, first, _ = (scanner or Scanner()).take(data, 1, stop)
                scanned = bool(items)
                yield from items
            while True:
                cut = slicer.take(first, len(data))
                if cut is None:
                    break
                events, first = cut
                got.extend(events)
            close = self._events_close(data, first, stop)
        except ArrayEnd as end:
            got.extend(end.events)
            close = first = end.end - 1
        if close is not None:
            if close > first:   # events the cutter could not take (an unreadable last one)
                got.extend(decode_array(b"[" + bytes(data[first:close]) + b"]"))
            yield got
            try:
                self._end_of_document(data, close + 1, stop, eof=True)
            except document.Incomplete:   # cut short in the metadata after the events
                self.truncated_at = base + len(buf)
            return
        yield got
        self.truncated_at = base + len(buf)
        if not got and not scanned and base <= self.events_offset:
            raise self._fail("truncated or invalid JSON: no complete event could be read")

    @staticmethod
    def _events_close(data: bytearray, first: int, stop: int) -> int | None:
        """Index of the events array's ']' after the events from `first`, by structure; None when
        the bytes end first (a truncated file) or are no array of values."""
        try:
            return document.events_end(data, first, stop)
        except (document.Incomplete, document.Malformed):
            return None

    def _end_of_document(self, buf, i: int, n: int, eof: bool) -> None:
        """After the events array's ']': the rest of the top-level object (its metadata) and
        what follows the document. Raises document.Incomplete when more bytes are needed."""
        try:
            end = document.document_end(buf, i, n, self.top == "object", eof)
        except document.DuplicateEvents:
            raise self._duplicate() from None
        except document.Malformed:
            end = None
        if end is None:   # the document does not close properly after its events
            self._notes.append("the JSON after the events array is malformed; ignored")
            return
        for k, v in end.meta.items():
            self.meta[k] = v   # after the events: JSON keeps the last of a repeated key
        if end.second:
            raise self._second_document()
        if end.trailing:
            self._notes.append(f"{'at least ' if not eof else ''}{end.trailing} bytes of garbage after the JSON "
                              "document ignored")

    def _read_document_end(self, b: _Buffer, start: int) -> None:
        """The events array ended mid-file: read on (as little as possible) to the end of the
        document and one byte after it."""
        rest = bytearray(b.mv[start:b.n])
        step = 1 << 16
        while True:
            chunk = bytearray(step)
            k = self.src.readinto(memoryview(chunk))
            rest += chunk[:k]
            try:
                self._end_of_document(rest, 0, len(rest), eof=k == 0)
                return
            except document.Incomplete:
                if k == 0:
                    self._notes.append("the file ends inside the metadata after the events array")
                    return
                if len(rest) > MAX_TAIL:
                    raise self._fail("more than 1 GB of data after the events array") from None
                step = min(max(step * 2, len(rest)), MAX_TAIL)   # doubling: each walk starts over

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
