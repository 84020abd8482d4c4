"""Where kerneldiff keeps what it caches, and what a key says: which file, as it is now, and which
code.

Without numpy or the analyses, so that a key can be made before they are imported: the explorer
looks up a stored comparison before its first frame (kerneldiff.core.comparison_cache); the model
cache (kerneldiff.core.ingest.cache) keys its entries the same way.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, Callable, TypeVar

from kerneldiff.core.errors import TraceError
from kerneldiff.core.fileio import open_regular

FINGERPRINT_EDGE = 64 * 1024      # head and tail bytes hashed into the key
FINGERPRINT_BLOCK = 4 * 1024      # ... and this many bytes at each of the samples between
FINGERPRINT_SAMPLES = 16

T = TypeVar("T")


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/kerneldiff/models (~/.cache/... by default): loaded models and comparisons."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kerneldiff" / "models"


def read_entry(p: Path, read: Callable[[BinaryIO, int], T]) -> T | None:
    """`read(f, size)` of the cache entry at `p` (a model or a comparison), which is then marked most
    recently used (evicted last). None when there is none; when it is damaged in any way (a link, a
    FIFO, not a regular file, anything `read` raises, MemoryError included) it is deleted and None
    returned: a cache only ever costs a rebuild, never a hang or an error. O_NOFOLLOW: an entry is a
    file we wrote, never a link; O_NONBLOCK: a FIFO put there cannot block the open."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError:       # a symlink (ELOOP with O_NOFOLLOW) or unreadable
        drop(p)
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ValueError("not a regular file")
            os.set_blocking(f.fileno(), True)
            value = read(f, st.st_size)
    except Exception:  # noqa: BLE001 - any damage at all: drop it, it is made again
        drop(p)
        return None
    try:
        os.utime(p)
    except OSError:
        pass
    return value


def write_entry(p: Path, write: Callable[[BinaryIO], None], errors: tuple[type[BaseException], ...] = (OSError,)) -> bool:
    """`write(f)` into a temporary file beside the entry `p`, which then replaces the entry at once:
    a reader sees the old entry or the new one, never half of one. False, with nothing left behind,
    when it fails with one of `errors` (a cache is optional: its I/O problems are never raised)."""
    import tempfile   # here: ~2 ms to import, and a start that only reads entries never writes one

    tmp = None
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.stem}.", suffix=".tmp", dir=p.parent)
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, p)
        tmp = None
    except errors:
        return False
    finally:
        if tmp is not None:
            drop(Path(tmp))
    return True


def drop(p: Path) -> None:
    """Delete a cache entry, if it can be."""
    try:
        p.unlink()
    except OSError:
        pass


def file_identity(path: str | os.PathLike) -> list[Any] | None:
    """The file as it is now: its absolute path, device, inode, size, mtime_ns, ctime_ns and a
    fingerprint of its content; None when it cannot be opened as a regular file.

    Size and mtime alone miss an edit in place that restores them (`touch -r`, a tool that
    preserves times); the inode, the ctime (which no user call can set back) and a fingerprint of
    the content (`content_fingerprint`, for file systems whose ctime cannot be trusted) do not."""
    try:
        real = os.path.realpath(path)
        f, st = open_regular(real)
    except (OSError, TraceError):
        return None
    try:
        with f:
            sample = content_fingerprint(f.fileno(), st.st_size)
    except OSError:
        return None
    return [real, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, sample]


def content_fingerprint(fd: int, size: int) -> str:
    """A hash of the first and last FINGERPRINT_EDGE bytes and FINGERPRINT_SAMPLES blocks spread
    evenly between them: ~200 KB read whatever the size (a few ms cold, well under 1 ms cached),
    where hashing a 1 GB file would take a second. It sees any change to the head (metadata),
    the tail (a rewritten or appended end), or a sampled block."""
    h = hashlib.blake2b(digest_size=16)
    offsets = [0, max(0, size - FINGERPRINT_EDGE)]
    inner = size - 2 * FINGERPRINT_EDGE
    if inner > 0:
        offsets[1:1] = [FINGERPRINT_EDGE + inner * i // (FINGERPRINT_SAMPLES + 1)
                        for i in range(1, FINGERPRINT_SAMPLES + 1)]
    for i, off in enumerate(offsets):
        n = FINGERPRINT_EDGE if i in (0, len(offsets) - 1) else FINGERPRINT_BLOCK
        h.update(os.pread(fd, n, off))
    return h.hexdigest()


def code_fingerprint(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0")
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(b"missing")
    return h.hexdigest()
