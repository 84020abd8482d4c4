"""The one error type kerneldiff raises for bad input."""

from __future__ import annotations


class TraceError(Exception):
    """A trace cannot be read. The message names the file and the problem, on one line."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = str(path)
        self.problem = " ".join(str(problem).split())  # always one line
        super().__init__(f"{self.path}: {self.problem}")


def file_error(path: str, e: OSError) -> TraceError:
    """The one-line TraceError for a file that cannot be opened or read."""
    if isinstance(e, IsADirectoryError):
        return TraceError(path, "is a directory, not a trace file")
    if isinstance(e, FileNotFoundError):
        return TraceError(path, "no such file")
    return TraceError(path, f"cannot read: {e.strerror or e}")


class LoadCancelled(Exception):
    """The caller asked the loader to stop (the progress callback returned False or the event was set)."""
