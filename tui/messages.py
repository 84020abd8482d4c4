"""Messages the background workers post to the app (messages go up, method calls go down)."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class LoadProgress(Message):
    def __init__(self, index: int, fraction: float, stage: str, done: int, total: int) -> None:
        super().__init__()
        self.index, self.fraction, self.stage, self.done, self.total = index, fraction, stage, done, total


class TraceLoaded(Message):
    def __init__(self, index: int, model: Any) -> None:
        super().__init__()
        self.index, self.model = index, model


class TraceFailed(Message):
    def __init__(self, index: int, message: str) -> None:
        super().__init__()
        self.index, self.message = index, message


class TraceCancelled(Message):
    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index


class ComparisonReady(Message):
    def __init__(self, comparison: Any, phase: str) -> None:
        super().__init__()
        self.comparison, self.phase = comparison, phase


class ComparisonFailed(Message):
    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message
