"""What reading a trace produced, in one process or with worker processes (`workers.py`): the
columns of its runs in file order, the counts of what was dropped, its metadata. Its own module so
that a load in one process imports none of the worker machinery."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from kerneldiff.core.ingest.columns import Columns


class ReadResult:
    """Everything reading produced: columns of runs in file order, each with its string list."""

    def __init__(self) -> None:
        self.chunks: list[tuple[list[str], dict[str, dict[str, np.ndarray]]]] = []
        self.events = self.dropped = self.negative_dur = self.non_integer_ids = self.cut_names = 0
        self.meta: dict[str, Any] = {}
        self.truncated_at: int | None = None
        self.notes: list[str] = []     # what the reader ignored (trailing garbage, ...)

    def count(self, col: Columns) -> None:
        self.events += col.events
        self.dropped += col.dropped
        self.negative_dur += col.negative_dur
        self.non_integer_ids += col.non_integer_ids
        self.cut_names += col.cut_names
