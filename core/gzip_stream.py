"""gzip files inflated in bounded steps, members joined, headers of any length: the trace reader,
the probe and the AIE reader read gzip through here (below ingest and aie, which both use it)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

try:  # ISA-L inflates 2-3x faster than zlib; same API
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover
    _zlib = zlib

from kerneldiff.core.errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"
BLOCK = 256 * 1024

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


def inflate(f, path: str, out_limit: int, in_limit: int, strict: bool = False) -> Iterator[bytes]:
    """Inflated pieces of the gzip stream in `f` (members joined), up to `out_limit` bytes out and
    about `in_limit` bytes in: the cost is bounded whatever the compression ratio. Corrupt data
    before any output is a TraceError; after some, the pieces just end (a probe reads what it
    can), unless `strict` (a reader of the whole file): then damage or a cut stream is an error."""
    d = None
    members = produced = consumed = 0
    raw = b""

    def more() -> bytes:
        nonlocal consumed
        if consumed >= in_limit:
            return b""
        got = f.read(BLOCK)
        consumed += len(got)
        return got

    while produced < out_limit:
        if len(raw) < 2:
            raw += more()
        if not raw:
            if strict and (d is not None or not members) and consumed < in_limit:
                raise TraceError(path, "gzip stream is truncated (unexpected end of file)")
            return
        if d is None:   # a member starts: the first, or another (else trailing bytes, ignored as gzip does)
            if members and not raw.startswith(GZIP_MAGIC):
                return
            raw = bare_member(raw, more) if raw.startswith(GZIP_MAGIC) else raw
            d = _zlib.decompressobj(wbits=31)
            members += 1
        try:
            out = d.decompress(raw, min(BLOCK, out_limit - produced))
        except (zlib.error, _zlib.error) as e:
            if strict or not produced:
                raise TraceError(path, f"corrupt gzip data ({e})") from None
            return
        produced += len(out)
        if out:
            yield out
        if d.eof:
            raw, d = d.unused_data, None
        else:
            raw = d.unconsumed_tail
