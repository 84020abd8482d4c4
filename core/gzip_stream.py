"""gzip files as one stream of inflated bytes: every member in turn (`cat a.gz b.gz` is legal),
bytes after the last member that are not another member ignored (as gzip(1) does), headers of any
length, output in bounded pieces whatever the compression ratio. The one loop over members
(`GzipStream`): the trace reader's inflating thread (ingest/source.py), the probe and the AIE
reader go through it; what damage means (an error, or the end of what can be read) is theirs."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterator

try:  # ISA-L inflates 2-3x faster than zlib with the same API, and releases the GIL
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover
    _zlib = zlib

from kerneldiff.core.errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"
BLOCK = 256 * 1024
TRUNCATED = "gzip stream is truncated (unexpected end of file)"

# gzip header flags (RFC 1952): FTEXT 1 is harmless; FHCRC, FEXTRA, FNAME and FCOMMENT add fields
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 2, 4, 8, 16


def bare_member(raw: bytes, read) -> bytes:
    """`raw` starts a gzip member; the member with its optional header fields (extra field, file
    name, comment, header CRC) skipped, however long, and a bare 10-byte header in their place.
    `read()` gives more input (b"" at the end). ISA-L misreads a header that spans its input pieces
    (a 256 KB file name plus a comment: "invalid lookback distance"), and such fields carry
    nothing kerneldiff uses. A member cut inside its header becomes a bare header alone, which
    the inflater reports as a cut stream."""
    while len(raw) < 10:
        more = read()
        if not more:
            return raw
        raw += more
    flags = raw[3]
    if raw[2] != 8 or flags & 0xE0 or not flags & (_FHCRC | _FEXTRA | _FNAME | _FCOMMENT):
        return raw                     # nothing to skip, or not a member zlib would take: it judges
    head = raw[:3] + b"\x00" + raw[4:10]
    rest = raw[10:]

    def fill(n: int) -> bool:
        nonlocal rest
        while len(rest) < n:
            more = read()
            if not more:
                return False
            rest += more
        return True

    if flags & _FEXTRA:
        if not fill(2):
            return head
        skip = 2 + (rest[0] | rest[1] << 8)
        while len(rest) < skip:        # dropped as it arrives: memory stays one read
            skip -= len(rest)
            rest = read()
            if not rest:
                return head
        rest = rest[skip:]
    for flag in (_FNAME, _FCOMMENT):
        if flags & flag:
            while (end := rest.find(b"\x00")) < 0:
                rest = read()
                if not rest:
                    return head
            rest = rest[end + 1:]
    if flags & _FHCRC:
        if not fill(2):
            return head
        rest = rest[2:]
    return head + rest


class GzipStream:
    """The inflated bytes of the gzip members that `read()` gives (b"" at the end), in pieces of at
    most `piece` bytes, `out_limit` bytes in all. Iterating ends at the end of the last member, at
    bytes after it that are not another member, at `out_limit`, or at damage: then `cut` (the input
    ended inside a member, or held none) or `error` (zlib's words for corrupt data) says so."""

    def __init__(self, read: Callable[[], bytes], out_limit: float = math.inf, piece: int = BLOCK) -> None:
        self._more = read
        self.out_limit = out_limit
        self.piece = piece
        self.produced = 0
        self.cut = False
        self.error: str | None = None

    def __iter__(self) -> Iterator[bytes]:
        d = None
        members = 0
        raw = b""
        while self.produced < self.out_limit:
            while len(raw) < 2:   # a member's magic may straddle reads
                more = self._more()
                if not more:
                    break
                raw += more
            if not raw:
                self.cut = d is not None or not members
                return
            if d is None:   # a member starts: the first, or another (else trailing bytes, ignored as gzip does)
                if members and not raw.startswith(GZIP_MAGIC):
                    return
                raw = bare_member(raw, self._more) if raw.startswith(GZIP_MAGIC) else raw
                d = _zlib.decompressobj(wbits=31)
                members += 1
            try:
                out = d.decompress(raw, min(self.piece, self.out_limit - self.produced))
            except (zlib.error, _zlib.error) as e:
                self.error = str(e)
                return
            self.produced += len(out)
            if out:
                yield out
            if d.eof:
                raw, d = d.unused_data, None
            else:
                raw = d.unconsumed_tail


def inflate(f, path: str, out_limit: int, in_limit: int, strict: bool = False) -> Iterator[bytes]:
    """Inflated pieces of the gzip file `f`, up to `out_limit` bytes out and about `in_limit` bytes
    in: the cost is bounded whatever the compression ratio. Corrupt data before any output is a
    TraceError; after some, the pieces just end (a probe reads what it can), unless `strict` (a
    reader of the whole file): then damage or a cut stream is an error."""
    consumed = 0

    def more() -> bytes:
        nonlocal consumed
        if consumed >= in_limit:
            return b""
        got = f.read(BLOCK)
        consumed += len(got)
        return got

    stream = GzipStream(more, out_limit)
    yield from stream
    if stream.error is not None and (strict or not stream.produced):
        raise TraceError(path, f"corrupt gzip data ({stream.error})")
    if stream.cut and strict and consumed < in_limit:
        raise TraceError(path, TRUNCATED)
