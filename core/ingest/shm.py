"""A named shared-memory segment for the worker processes' slots, without multiprocessing's
resource tracker.

`multiprocessing.shared_memory.SharedMemory` registers every segment it creates or attaches with a
resource tracker, which Python starts as a separate interpreter (`python -c "from
multiprocessing.resource_tracker import main ..."`) the first time: ~30 ms of CPU and an exec on
every load that uses workers, for a clean-up kerneldiff already does itself (segments are named
after the process that made them, and `workers._sweep_stale_segments` removes those of dead
processes). Where POSIX shared memory is at hand, this opens the segment the same way (shm_open,
ftruncate, mmap) and tracks nothing; elsewhere it is SharedMemory.
"""

from __future__ import annotations

import mmap
import os

try:
    import _posixshmem   # CPython's own shm_open / shm_unlink (what SharedMemory uses on POSIX)
except ImportError:      # Windows: SharedMemory, tracker and all
    _posixshmem = None


class Segment:
    """`name` without the leading slash, as SharedMemory names it; `buf` a memoryview of it."""

    def __init__(self, name: str, create: bool = False, size: int = 0) -> None:
        self.name = name
        self._mm = self._other = None
        if _posixshmem is None:
            from multiprocessing import shared_memory

            self._other = shared_memory.SharedMemory(name=name, create=create, size=size)
            self.buf = self._other.buf
            return
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        fd = _posixshmem.shm_open("/" + name, flags, mode=0o600)
        try:
            if create:
                os.ftruncate(fd, size)
            self._mm = mmap.mmap(fd, os.fstat(fd).st_size)
        except OSError:
            os.close(fd)
            if create:
                _posixshmem.shm_unlink("/" + name)
            raise
        os.close(fd)          # the map keeps the memory
        self.buf = memoryview(self._mm)

    def close(self) -> None:
        """Drop this process's view (BufferError while an array still points into it)."""
        if self._other is not None:
            self._other.close()
            return
        if self.buf is not None:
            self.buf.release()
            self.buf = None
        if self._mm is not None:
            self._mm.close()
            self._mm = None

    def unlink(self) -> None:
        """Remove the segment's name (FileNotFoundError when it is gone already)."""
        if self._other is not None:
            self._other.unlink()
        else:
            _posixshmem.shm_unlink("/" + self.name)
