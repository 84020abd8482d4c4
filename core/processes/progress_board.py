"""Loads run in other processes, their progress on a page of shared memory: a forked child (and its
own child) write each trace's progress, this process reads it for its progress bars. Nothing to
drain and nothing to block on; a read that meets a write halfway shows one figure late."""

from __future__ import annotations

import mmap
import struct

_HEAD = struct.Struct("<q")           # the child's plan (UNDECIDED until it has looked at the cache)
_SLOT = struct.Struct("<qdqq32s")     # state, fraction, bytes done, bytes in all, stage (UTF-8, cut)
UNDECIDED, COMPARING, LOADING = 0, 1, 2
RUNNING, STORED = 0, 1


class ProgressBoard:
    def __init__(self, n: int) -> None:
        self.n = n
        # anonymous and shared (mmap's default flags): a forked child writes these very pages
        self._mm = mmap.mmap(-1, _HEAD.size + n * _SLOT.size)

    def _at(self, index: int) -> int:
        if not 0 <= index < self.n:
            raise IndexError(index)
        return _HEAD.size + index * _SLOT.size

    def decide(self, plan: int) -> None:
        _HEAD.pack_into(self._mm, 0, plan)

    def plan(self) -> int:
        return _HEAD.unpack_from(self._mm, 0)[0]

    def report(self, index: int, fraction: float, stage: str, done: int, total: int) -> None:
        """Trace `index`'s progress (from any process): `Session.load_all`'s progress callback."""
        _SLOT.pack_into(self._mm, self._at(index), RUNNING, fraction, done, total, stage.encode()[:32])

    def stored(self, index: int) -> None:
        """Trace `index` is loaded and in the model cache."""
        at = self._at(index)
        _, _, _, total, _ = _SLOT.unpack_from(self._mm, at)
        _SLOT.pack_into(self._mm, at, STORED, 1.0, total, total, b"done")

    def read(self, index: int) -> tuple[int, float, str, int, int]:
        """(state, fraction, stage, done, total) of trace `index`."""
        state, fraction, done, total, stage = _SLOT.unpack_from(self._mm, self._at(index))
        return state, fraction, stage.rstrip(b"\0").decode(errors="ignore"), done, total
