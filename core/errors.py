"""The one error type kerneldiff raises for bad input."""

from __future__ import annotations

import errno
import os

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def visible(s: str) -> str:
    """`s` with every non-printable character (controls, ESC, bidi overrides, line separators)
    written as a visible escape, so a string from a trace or a file name cannot drive a terminal.
    The one such rule (analysis.names re-exports it): here because errors sit below every layer."""
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else _NAMED.get(ch) or _escape(ord(ch)) for ch in s)


def _escape(o: int) -> str:
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


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
