"""Where kerneldiff keeps what it caches, and what a key says: which file, as it is now, and which
code.

Without numpy or the analyses, so that a key can be made before they are imported: the explorer
looks up a stored comparison before its first frame (kerneldiff.core.comparison_cache); the model
cache (kerneldiff.core.ingest.cache) keys its entries the same way.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from kerneldiff.core.errors import TraceError
from kerneldiff.core.fileio import open_regular

FINGERPRINT_EDGE = 64 * 1024      # head and tail bytes hashed into the key
FINGERPRINT_BLOCK = 4 * 1024      # ... and this many bytes at each of the samples between
FINGERPRINT_SAMPLES = 16


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/kerneldiff/models (~/.cache/... by default): loaded models and comparisons."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kerneldiff" / "models"


def open_entry(p: Path) -> int | None:
    """A cache entry (a model or a comparison) opened for reading, as a descriptor left non-blocking:
    None when there is none, or when it cannot be opened (then it is deleted). O_NOFOLLOW: an entry is
    a file we wrote, never a link; O_NONBLOCK: a FIFO put there cannot block."""
    try:
        return os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError:       # a symlink (ELOOP with O_NOFOLLOW) or unreadable
        drop(p)
        return None


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
