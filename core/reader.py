"""Streaming reader: turns a trace file into batches of typed events without holding the file.

The `traceEvents` array is cut into slices at event boundaries (`}` `,` `{` outside strings) and
each slice is decoded by msgspec into small typed structs that keep only the fields kerneldiff
uses — every other key (shapes, strides, grid, ...) is skipped by the C decoder. A boundary found
by a byte search can, rarely, sit inside a string; then the slice fails to decode and an earlier
boundary is tried, so correctness never depends on how the writer formatted the JSON.
"""

from __future__ import annotations

import mmap
import os
import re
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from .errors import TraceError

try:  # ISA-L inflates 2-3x faster than zlib with the same API
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover
    _zlib = zlib

CHUNK = 8 * 1024 * 1024
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
Num = int | float | str | None


class Args(msgspec.Struct, frozen=False, omit_defaults=True):
    correlation: Num = None
    external_id: Num = msgspec.field(default=None, name="External id")
    device: Num = None
    stream: Num = None
    python_id: Num = msgspec.field(default=None, name="Python id")
    python_parent: Num = msgspec.field(default=None, name="Python parent id")
    name: Any = None           # process_name / thread_name metadata


class Event(msgspec.Struct, frozen=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    ts: Num = None
    dur: Num = None
    pid: Any = None
    tid: Any = None
    id: Any = None
    args: Args | None = None


_typed = msgspec.json.Decoder(list[Event])
_untyped = msgspec.json.Decoder()


class Source:
    """Bytes of a trace file, plain (memory-mapped) or gzip (inflated in chunks)."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            self.size = os.path.getsize(path)
            self._f = open(path, "rb")
        except IsADirectoryError:
            raise TraceError(path, "is a directory, not a trace file") from None
        except FileNotFoundError:
            raise TraceError(path, "no such file") from None
        except OSError as e:
            raise TraceError(path, f"cannot read: {e.strerror or e}") from None
        self.compressed = self._f.read(2) == b"\x1f\x8b"
        self._f.seek(0)
        self.consumed = 0  # bytes of the file read so far (drives progress)

    def close(self) -> None:
        self._f.close()

    def chunks(self) -> Iterator[bytes]:
        if not self.compressed:
            if self.size == 0:
                return
            with mmap.mmap(self._f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                for off in range(0, self.size, CHUNK):
                    block = mm[off:off + CHUNK]
                    self.consumed = off + len(block)
                    yield block
            return
        d = _zlib.decompressobj(wbits=31)
        while True:
            raw = self._f.read(CHUNK // 4)
            if not raw:
                if not d.eof:
                    raise TraceError(self.path, "gzip stream is truncated (unexpected end of file)")
                return
            self.consumed += len(raw)
            try:
                out = d.decompress(raw)
            except (zlib.error, _zlib.error) as e:
                raise TraceError(self.path, f"corrupt gzip data at byte {self.consumed} ({e})") from None
            if out:
                yield out
            if d.eof:
                # concatenated gzip members are legal (e.g. `cat a.gz b.gz`)
                rest = d.unused_data + self._f.read()
                self.consumed = self.size
                if rest.startswith(b"\x1f\x8b"):
                    yield from self._inflate_rest(rest)
                return

    def _inflate_rest(self, data: bytes) -> Iterator[bytes]:
        while data.startswith(b"\x1f\x8b"):
            d = _zlib.decompressobj(wbits=31)
            try:
                yield d.decompress(data)
            except (zlib.error, _zlib.error) as e:
                raise TraceError(self.path, f"corrupt gzip member ({e})") from None
            data = d.unused_data


def _decode_slice(body: bytes) -> list[Event] | None:
    """Decode `{..},{..}` (no brackets) as events; None if it is not valid JSON."""
    try:
        return _typed.decode(b"[" + body + b"]")
    except msgspec.ValidationError:
        pass  # valid JSON, unexpected types somewhere: go event by event
    except msgspec.DecodeError:
        return None
    try:
        raw = _untyped.decode(b"[" + body + b"]")
    except msgspec.DecodeError:
        return None
    return _lenient(raw)


def _lenient(raw: list[Any]) -> list[Event]:
    """Convert events one by one; events that do not fit are replaced by None (counted as dropped)."""
    out: list[Any] = []
    for item in raw:
        try:
            out.append(msgspec.convert(item, Event, strict=False))
        except (msgspec.ValidationError, TypeError):
            out.append(None)
    return out


class EventReader:
    """Iterates decoded event batches; collects top-level metadata found around `traceEvents`."""

    def __init__(self, path: str, progress: Callable[[int, int], None] | None = None) -> None:
        self.path = path
        self.src = Source(path)
        self.meta: dict[str, Any] = {}
        self.top: str | None = None
        self.truncated_at: int | None = None
        self._progress = progress

    def close(self) -> None:
        self.src.close()

    def _fail(self, problem: str) -> TraceError:
        return TraceError(self.path, problem)

    def batches(self) -> Iterator[list[Event | None]]:
        it = self.src.chunks()
        buf = b""
        start = None
        # --- find where the events begin ------------------------------------------------
        for chunk in it:
            buf += chunk
            s = buf.lstrip()
            if not s:
                continue
            lead = s[:1]
            if lead == b"[":
                self.top = "array"
                start = len(buf) - len(s) + 1
                break
            if lead != b"{":
                raise self._fail("not JSON: a Chrome/Kineto trace must start with '{' or '['")
            self.top = "object"
            m = _EVENTS_KEY.search(buf)
            if m:
                start = m.end()
                self._parse_head(buf[:m.start()])
                break
            if len(buf) > 64 * CHUNK:
                raise self._fail("no traceEvents array in the first 512 MB")
        if start is None:
            if not buf.strip():
                raise self._fail("file is empty" if self.src.size == 0 else "no JSON content (blank)")
            if self.top == "object":
                self._parse_whole_object(buf)
                raise self._fail("JSON object has no 'traceEvents' array: not a Chrome/Kineto trace")
            raise self._fail("not a trace")
        buf = buf[start:]
        base = start  # byte offset of buf[0] in the decompressed stream (for messages)
        # --- cut the array at event boundaries and decode slice by slice --------------------
        for chunk in it:
            buf += chunk
            if len(buf) < CHUNK:
                continue
            cut = self._decodable_prefix(buf)
            if cut is None:
                continue  # no boundary yet (a giant event): keep reading
            events, used = cut
            yield events
            buf = buf[used:]
            base += used
            if self._progress:
                self._progress(self.src.consumed, self.src.size)
        yield from self._finish(buf, base)

    def _decodable_prefix(self, buf: bytes) -> tuple[list[Event | None], int] | None:
        """Decode the longest prefix of `buf` that ends at an event boundary.

        Returns None when `buf` holds no boundary yet (one giant event: read more)."""
        end = len(buf)
        window = 64 * 1024
        failures = 0
        while end > 0 and failures < 16:
            lo = max(0, end - window)
            m = None
            for m_ in _BOUNDARY.finditer(buf, lo, end):
                m = m_
            if m is None:
                if lo == 0:
                    break
                end = lo + 16  # a boundary is at most a few bytes long: overlap the windows
                window *= 2
                continue
            body = buf[:m.start() + 1].lstrip()
            if body.startswith(b","):
                body = body[1:]
            events = _decode_slice(body)
            if events is not None:
                return events, m.end() - 1  # keep the '{' of the next event
            end = m.start()  # the boundary sat inside a string, or the JSON is bad: go back
            failures += 1
        if failures:
            raise self._fail("invalid JSON inside traceEvents (no decodable run of events)")
        return None

    def _finish(self, buf: bytes, base: int) -> Iterator[list[Event | None]]:
        body = buf.lstrip()
        if body.startswith(b","):
            body = body[1:]
        if self.top == "array":
            try:
                yield self._typed_or_lenient(b"[" + body, array=True)
                return
            except msgspec.DecodeError:
                pass
        else:
            try:
                doc = msgspec.json.decode(b'{"traceEvents":[' + body, type=dict[str, msgspec.Raw])
            except msgspec.DecodeError:
                doc = None
            if doc is not None:
                raw_events = doc.pop("traceEvents", b"[]")
                for k, v in doc.items():
                    try:
                        self.meta[k] = msgspec.json.decode(v)
                    except msgspec.DecodeError:
                        pass
                try:
                    yield self._typed_or_lenient(bytes(raw_events), array=True)
                except msgspec.DecodeError:
                    raise self._fail("'traceEvents' is not a list") from None
                return
        # A killed profiler leaves a file that just stops: keep every complete event.
        self.truncated_at = base + len(buf)
        cut = None
        try:
            cut = self._decodable_prefix(buf + b",{")
        except TraceError:
            cut = None
        if cut is None:
            if base == 0 or not body.strip():
                raise self._fail("truncated or invalid JSON: no complete event could be read")
            return
        events, _ = cut
        yield events

    def _typed_or_lenient(self, doc: bytes, array: bool) -> list[Event | None]:
        try:
            return _typed.decode(doc)
        except msgspec.ValidationError:
            raw = _untyped.decode(doc)
            if not isinstance(raw, list):
                raise msgspec.DecodeError("not a list") from None
            return _lenient(raw)

    def _parse_head(self, head: bytes) -> None:
        try:
            self.meta.update(msgspec.json.decode(head.rstrip().rstrip(b",") + b"}", type=dict[str, Any]))
        except msgspec.DecodeError:
            pass  # metadata is optional; the probe already reported what it could

    def _parse_whole_object(self, buf: bytes) -> None:
        try:
            doc = msgspec.json.decode(buf)
        except msgspec.DecodeError:
            raise self._fail("invalid JSON (not a complete JSON document)") from None
        if isinstance(doc, dict) and "traceEvents" in doc:
            raise self._fail("'traceEvents' is not a list")
