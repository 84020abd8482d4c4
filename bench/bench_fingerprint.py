"""What the cache key's content fingerprint costs on a big file, cold (pages evicted) and warm,
against hashing the whole file.

    .venv/bin/python bench/bench_fingerprint.py [--gb 1] [--dir /tmp]

The file is written once (random bytes, so nothing compresses or dedups it) and deleted after.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import tempfile
import time

from kerneldiff.core import cache_keys


def _evict(path: str) -> None:
    """Drop the file's pages from the page cache (no root needed for one's own file)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _fingerprint(path: str) -> float:
    t = time.perf_counter()
    with open(path, "rb") as f:
        cache_keys.content_fingerprint(f.fileno(), os.fstat(f.fileno()).st_size)
    return time.perf_counter() - t


def _whole(path: str) -> float:
    t = time.perf_counter()
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while block := f.read(8 << 20):
            h.update(block)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    fd, path = tempfile.mkstemp(dir=args.dir, suffix=".bin")
    try:
        with os.fdopen(fd, "wb") as f:
            block = os.urandom(64 << 20)
            for i in range(int(args.gb * 16)):
                f.write(block[i:] + block[:i])    # distinct blocks, cheap to make
        size = os.path.getsize(path)
        cold, warm = [], []
        for _ in range(args.repeat):
            _evict(path)
            cold.append(_fingerprint(path))
            warm.append(_fingerprint(path))
        _evict(path)
        whole_cold = _whole(path)
        whole_warm = _whole(path)
        read = 2 * cache_keys.FINGERPRINT_EDGE + cache_keys.FINGERPRINT_SAMPLES * cache_keys.FINGERPRINT_BLOCK
        print(f"file {size / 1e9:.2f} GB; fingerprint reads {read // 1024} KB")
        print(f"fingerprint cold  median {statistics.median(cold) * 1e3:7.2f} ms  (min {min(cold) * 1e3:.2f})")
        print(f"fingerprint warm  median {statistics.median(warm) * 1e3:7.2f} ms  (min {min(warm) * 1e3:.2f})")
        print(f"whole-file hash   cold {whole_cold * 1e3:9.1f} ms  warm {whole_warm * 1e3:.1f} ms")
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
