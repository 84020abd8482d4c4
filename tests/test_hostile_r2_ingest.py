"""Round two of the hostile corpus, the reader's part (tests/hostile_r2_ingest.py): what the CLI
harness cannot see — which reader path read what, exact column values, and bounded CPU and memory
for the big names (measured in a child process under RLIMIT_CPU / RLIMIT_AS, never wall time)."""

from __future__ import annotations

import json
import multiprocessing
import resource
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import hostile_corpus as hc
import hostile_r2_ingest as r2
from kerneldiff.core.ingest import scan
from kerneldiff.core.ingest.source import read_columns

needs_scanner = pytest.mark.skipif(not scan.available(), reason="the compiled scanner needs numba")


def _names(path: Path, fast: bool) -> Counter:
    col, _ = read_columns(str(path), fast=fast)
    k = col.arrays()["k"]
    return Counter(col.strings[i] for i in k["name"].tolist())


def _colliding_trace(path: Path, each: int, interleave: bool) -> tuple[str, str]:
    a, b = r2.colliding_names()
    names = [a if i % 2 else b for i in range(2 * each)] if interleave else [a] * each + [b] * each
    events = [json.dumps(hc.kernel(n, ts=float(i))).encode() for i, n in enumerate(names)]
    path.write_bytes(hc.trace_bytes(events))
    return a, b


def test_colliding_names_really_collide():
    from kerneldiff.core.ingest.scan_kernel import _hash

    a, b = r2.colliding_names()
    assert a != b and len(a) == len(b) and a.startswith("flash_fwd") and b.startswith("nvjet_")
    hashes = {int(_hash(np.frombuffer(n.encode(), np.uint8), 0, len(n))) for n in (a, b)}
    assert len(hashes) == 1 and hashes == {r2.scan_hash(a.encode())}


@needs_scanner
@pytest.mark.parametrize("interleave", [True, False], ids=["same_batch", "across_batches"])
def test_scanner_keeps_names_with_the_same_hash_apart(tmp_path, interleave):
    """Both names in one scan batch (grouped by hash), or each in its own batches (the name
    cache across batches, keyed by hash): the exact bytes decide, and both readers agree."""
    each = scan_rows = 40_000   # more rows than one scan call holds (Scanner.ROWS)
    a, b = _colliding_trace(tmp_path / "t.json", each, interleave)
    fast, slow = _names(tmp_path / "t.json", True), _names(tmp_path / "t.json", False)
    assert fast == slow == Counter({a: scan_rows, b: scan_rows})


@needs_scanner
def test_shape_texts_with_the_same_hash_stay_apart(tmp_path):
    """Recorded shapes are grouped by hash too: two raw texts of one length and hash differ."""
    a, b = r2.colliding_names()
    events = [json.dumps({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": i, "dur": 1,
                          "args": {"External id": i, "Input Dims": [a if i % 2 else b]}}).encode()
              for i in range(2000)]
    (tmp_path / "t.json").write_bytes(hc.trace_bytes(events))
    for fast in (True, False):
        col, _ = read_columns(str(tmp_path / "t.json"), fast=fast)
        dims = Counter(col.strings[i] for i in col.arrays()["c"]["dims"].tolist())
        assert dims == Counter({json.dumps([a], separators=(",", ":")): 1000,
                                json.dumps([b], separators=(",", ":")): 1000}), fast
