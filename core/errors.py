"""The one error type kerneldiff raises for bad input."""

from __future__ import annotations

import errno
import os

from kerneldiff.core.names.visible import visible


def shown_path(path: object) -> str:
    """A file name as it may be printed: a name holding an escape sequence, a bidi override or a
    newline must neither drive the terminal nor split a one-line message."""
    return visible(os.fsdecode(path) if isinstance(path, bytes) else str(path))


class TraceError(Exception):
    """A trace cannot be read. The message names the file and the problem, on one line."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = str(path)                          # as given (to open it again)
        self.problem = " ".join(str(problem).split())  # always one line
        super().__init__(f"{shown_path(self.path)}: {visible(self.problem)}")


def file_error(path: str, e: OSError) -> TraceError:
    """The one-line TraceError for a file that cannot be opened, stat'ed or read."""
    if e.errno == errno.ELOOP:
        return TraceError(path, "is a symlink loop (too many levels of symbolic links)")
    if e.errno == errno.ENOENT:
        if os.path.islink(path):
            return TraceError(path, "is a dangling symlink (its target does not exist)")
        return TraceError(path, "no such file")
    if e.errno == errno.ENOTDIR:
        return TraceError(path, "no such file (a part of the path is not a directory)")
    if e.errno == errno.EISDIR:
        return TraceError(path, "is a directory, not a trace file")
    if e.errno == errno.ENAMETOOLONG:
        return TraceError(path, "file name too long")
    return TraceError(path, f"cannot read: {e.strerror or e}")


class LoadCancelled(Exception):
    """The caller asked the loader to stop (the progress callback returned False or the event was set)."""
