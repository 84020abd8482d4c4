"""Messages that go up to the app: from its thread workers (load progress, results) and from the
screens (what the user asked for). The app applies them to its state; the screens watch that state.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message


# --- from the load and result workers -----------------------------------------------------------

class LoadProgress(Message):
    def __init__(self, index: int, fraction: float, stage: str, done: int, total: int) -> None:
        super().__init__()
        self.index, self.fraction, self.stage, self.done, self.total = index, fraction, stage, done, total


class TraceLoaded(Message):
    def __init__(self, index: int, summary: str) -> None:
        super().__init__()
        self.index, self.summary = index, summary


class TraceFailed(Message):
    def __init__(self, index: int, message: str) -> None:
        super().__init__()
        self.index, self.message = index, message


class TraceCancelled(Message):
    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index


class ResultReady(Message):
    """A comparison (two traces), a one-trace overview (browse) or an AIE view, for `phase`."""

    def __init__(self, result: Any, phase: str, phases: tuple[str, ...], generation: int) -> None:
        super().__init__()
        self.result, self.phase, self.phases, self.generation = result, phase, phases, generation


class ResultFailed(Message):
    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


# --- from the screens -------------------------------------------------------------------------

class StartShown(Message):
    """The start screen's first frame is on the terminal."""


class OpenRequested(Message):
    """Enter on the start screen: open what is loaded, show the errors, or (re)load."""


class CancelRequested(Message):
    """Esc on the start screen while loading."""


class BrowseRequested(Message):
    """Browse one loaded trace on its own (the other failed to load)."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index


class ComparisonShown(Message):
    """The comparison screen has drawn `comparison` (the app stores it then: its encoding would
    otherwise take the time of that first frame)."""

    def __init__(self, comparison: Any) -> None:
        super().__init__()
        self.comparison = comparison


class Exported(Message):
    """A table was written to `path` (the app remembers the last one)."""

    def __init__(self, path) -> None:
        super().__init__()
        self.path = path
