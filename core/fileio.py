"""Opening a file safely: only regular files are read.

A FIFO with no writer blocks `open()` forever, `/dev/zero` and `/dev/urandom` never end, a
`/proc` file claims size 0 yet has content, a symlink loop is not "no such file". So every
reader (traces, registry and peaks files) goes through `open_regular`: `os.stat` first (it never
blocks and names what the path is), then an `O_NONBLOCK` open (a path swapped for a FIFO after
the stat still cannot block) whose descriptor is checked again with `fstat` before a byte is read.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from kerneldiff.core.errors import TraceError, file_error as open_error

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str | None:
    """What a file of this mode is when it is not a regular file ("a directory", ...); None for one."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


def _not_regular(mode: int, what: str = "trace file") -> str | None:
    """Why a file of this mode cannot be read as `what`, or None for a regular file."""
    kind = kind_of(mode)
    if kind is None:
        return None
    if kind == "not a regular file":
        return "is not a regular file"
    return f"is {kind}, not a {what}" + (": save it to a file first" if stat.S_ISFIFO(mode) else "")


def stat_regular(path: str, what: str = "trace file") -> os.stat_result:
    """The stat of `path` when it is a regular file; else a TraceError naming what it is."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise open_error(path, e) from None
    why = _not_regular(st.st_mode, what)
    if why:
        raise TraceError(path, why)
    return st


def open_regular(path: str, buffering: int = -1, what: str = "trace file") -> tuple[BinaryIO, os.stat_result]:
    """`path` opened for reading, with its stat; refuses anything but a regular file before reading."""
    stat_regular(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise open_error(path, e) from None
    try:
        st = os.fstat(fd)
        why = _not_regular(st.st_mode, what)   # the path may have been replaced since the stat
        if why:
            raise TraceError(path, why)
        if st.st_size == 0 and os.read(fd, 1):
            # /proc and /sys files report size 0 and make up their content on each read
            raise TraceError(path, f"is a pseudo-file (size 0 on disk, yet it has content), not a {what}")
        os.lseek(fd, 0, os.SEEK_SET)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=buffering), st
    except OSError as e:
        os.close(fd)
        raise open_error(path, e) from None
    except BaseException:
        os.close(fd)
        raise


CONFIG_MAX = 16 << 20   # a registry or peaks file; no real one is near this


def read_config(path: str, what: str) -> str:
    """A user's settings file (registry, peaks) as text: a regular file only (a FIFO would block,
    /dev/zero fill memory), at most CONFIG_MAX bytes, UTF-8. TraceError names the file otherwise."""
    f, _ = open_regular(path, what=what)
    with f:
        try:
            data = f.read(CONFIG_MAX + 1)
        except OSError as e:
            raise open_error(path, e) from None
    if len(data) > CONFIG_MAX:
        raise TraceError(path, f"{what} is larger than {CONFIG_MAX >> 20} MiB: not a {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TraceError(path, f"{what} is not UTF-8 text ({e.reason} at byte {e.start})") from None
