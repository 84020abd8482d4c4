"""A trace's content fingerprint, so a gate's result names exactly the files it judged.

Files up to WHOLE_LIMIT are hashed whole (sha256 of every byte: ~0.2 s for 64 MB here; two 150 MB
files take ~1 s, a third of a gate's run); bigger ones by their size and first and last MiB, which
any rewrite of a trace (a new profile) changes, without reading gigabytes a second time. `method`
says which.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

WHOLE_LIMIT = 64 * 2**20
EDGE = 2**20


@dataclass(frozen=True)
class Fingerprint:
    """What names one file judged (its JSON: these fields, in order)."""

    path: str
    size: int
    sha256: str
    method: str                  # how sha256 was taken (the whole file, or its size and ends)


def fingerprint(path: str) -> Fingerprint:
    size = os.path.getsize(path)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        if size <= WHOLE_LIMIT:
            for chunk in iter(lambda: f.read(4 * 2**20), b""):
                h.update(chunk)
            method = "sha256 of the whole file"
        else:
            h.update(str(size).encode())
            h.update(f.read(EDGE))
            f.seek(size - EDGE)
            h.update(f.read(EDGE))
            method = "sha256 of the size, the first MiB and the last MiB"
    return Fingerprint(path, size, h.hexdigest(), method)
