"""Opening a trace file safely: only regular files are read.

A FIFO with no writer blocks `open()` forever, `/dev/zero` and `/dev/urandom` never end, a
`/proc` file claims size 0 yet has content, a symlink loop is not "no such file". So every
reader goes through `open_regular`: `os.stat` first (it never blocks and names what the path
is), then an `O_NONBLOCK` open (a path swapped for a FIFO after the stat still cannot block)
whose descriptor is checked again with `fstat` before a byte is read.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Iterator
from typing import BinaryIO

try:  # ISA-L inflates 2-3x faster than zlib; same API
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover
    _zlib = zlib

from kerneldiff.core.errors import TraceError, file_error as open_error

GZIP_MAGIC = b"\x1f\x8b"
BLOCK = 256 * 1024

_KINDS = (
    (stat.S_ISDIR, "is a directory, not a trace file"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a trace file: save the trace to a file first"),
    (stat.S_ISCHR, "is a character device, not a trace file"),
    (stat.S_ISBLK, "is a block device, not a trace file"),
    (stat.S_ISSOCK, "is a socket, not a trace file"),
)


def _not_regular(mode: int) -> str | None:
    """Why a file of this mode cannot be a trace, or None for a regular file."""
    for test, why in _KINDS:
        if test(mode):
            return why
    return None if stat.S_ISREG(mode) else "is not a regular file"


def stat_regular(path: str) -> os.stat_result:
    """The stat of `path` when it is a regular file; else a TraceError naming what it is."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise open_error(path, e) from None
    why = _not_regular(st.st_mode)
    if why:
        raise TraceError(path, why)
    return st


def open_regular(path: str, buffering: int = -1) -> tuple[BinaryIO, os.stat_result]:
    """`path` opened for reading, with its stat; refuses anything but a regular file before reading."""
    stat_regular(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise open_error(path, e) from None
    try:
        st = os.fstat(fd)
        why = _not_regular(st.st_mode)   # the path may have been replaced since the stat
        if why:
            raise TraceError(path, why)
        if st.st_size == 0 and os.read(fd, 1):
            # /proc and /sys files report size 0 and make up their content on each read
            raise TraceError(path, "is a pseudo-file (size 0 on disk, yet it has content), not a trace file")
        os.lseek(fd, 0, os.SEEK_SET)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=buffering), st
    except OSError as e:
        os.close(fd)
        raise open_error(path, e) from None
    except BaseException:
        os.close(fd)
        raise


def inflate(f, path: str, out_limit: int, in_limit: int, strict: bool = False) -> Iterator[bytes]:
    """Inflated pieces of the gzip stream in `f` (members joined), up to `out_limit` bytes out and
    about `in_limit` bytes in: the cost is bounded whatever the compression ratio. Corrupt data
    before any output is a TraceError; after some, the pieces just end (a probe reads what it
    can), unless `strict` (a reader of the whole file): then damage or a cut stream is an error."""
    d = _zlib.decompressobj(wbits=31)
    produced = consumed = 0
    raw = b""
    while produced < out_limit:
        if len(raw) < 2 and consumed < in_limit:
            more = f.read(BLOCK)
            consumed += len(more)
            raw += more
        if not raw:
            if strict and d is not None and consumed < in_limit:
                raise TraceError(path, "gzip stream is truncated (unexpected end of file)")
            return
        if d is None:   # between members: another member, or trailing bytes (ignored, as gzip does)
            if not raw.startswith(GZIP_MAGIC):
                return
            d = _zlib.decompressobj(wbits=31)
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
