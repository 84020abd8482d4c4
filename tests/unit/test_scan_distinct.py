"""The scan's own table of each call's distinct names and raw texts (scan.Out.nloc, sloc, dist):
rows get the same id exactly when their bytes are equal (a hash collision gets two ids), each id's
first row holds its bytes, and every call starts with an empty table. Python looks up and decodes
each distinct text once, at that first row (scan.collect)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hostile_cases_ingest as r2
from kerneldiff.core.ingest import decode, scan

pytestmark = pytest.mark.skipif(not scan.available(), reason="the compiled scanner was not built")

_TABLES = scan.tables(decode.GROUP_OF)
NAMES = ["k", "kk", "gemm", "gemm\\u00e9", "flash_fwd_kernel_" + "x" * 40, "a\\\"b", ""]
DIMS = ["[]", "[[1, 2]]", "[[1,2]]", "[[4, 256, 2048], []]", "[\"\"]", "[[1, 2]] "]


def _event(k: int, name: str | None, dims: str | None) -> bytes:
    name_part = "null" if name is None else f'"{name}"'
    args = f', "args": {{"External id": {k}, "Input Dims": {dims}}}' if dims is not None else ""
    return (f'{{"ph": "X", "cat": "cpu_op", "name": {name_part}, "pid": 1, "tid": 1, "ts": {k}.5, '
            f'"dur": 1{args}}}').encode()


def _scan(data: bytes, out: scan.Out) -> tuple[int, np.ndarray]:
    arr = np.frombuffer(bytearray(data), np.uint8)
    scan.scan(arr, 0, len(arr), out, _TABLES)
    return int(out.state[0]), arr


def _check(arr, out: scan.Out, rows: int) -> None:
    buf = arr.tobytes()
    name_of = lambda r: buf[out.nstart[r]:out.nstart[r] + out.nlen[r]]   # noqa: E731
    nloc, n = out.nloc[:rows].tolist(), int(out.dist[1])
    first = out.names_seen[5][:n].tolist()
    assert sorted({i for i in nloc if i >= 0}) == list(range(n))
    assert [i >= 0 for i in nloc] == (out.nlen[:rows] >= 0).tolist()
    by_id = {i: name_of(first[i]) for i in range(n)}
    assert len(set(by_id.values())) == n   # one id a text
    for r, i in enumerate(nloc):
        if i >= 0:
            assert name_of(r) == by_id[i] and first[i] <= r
    text_of = lambda r, j: buf[out.shape[r, 2 * j]:out.shape[r, 2 * j + 1]]   # noqa: E731
    m = int(out.dist[2])
    where = out.texts_seen[5][:m].tolist()
    texts = {i: text_of(w // scan.NRAW, w % scan.NRAW) for i, w in enumerate(where)}
    assert len(set(texts.values())) == m
    for r in range(rows):
        for j in range(scan.NRAW):
            i = int(out.sloc[r, j])
            if j == scan.COMM or out.shape[r, 2 * j] < 0:
                assert i == -1
            else:
                assert texts[i] == text_of(r, j)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.none() | st.sampled_from(NAMES), st.none() | st.sampled_from(DIMS)), min_size=1,
                max_size=60))
def test_rows_share_an_id_exactly_when_their_bytes_are_equal(rows):
    data = b",\n".join(_event(k, n, d) for k, (n, d) in enumerate(rows)) + b",\n" + _event(999, "end", None) + b"]"
    out = scan.Out(256)
    got, arr = _scan(data, out)
    assert got == len(rows)
    _check(arr, out, got)


def test_names_and_texts_with_one_hash_get_two_ids():
    a, b = r2.colliding_names()
    assert scan._load().name_hash(a.encode()) == scan._load().name_hash(b.encode())
    evs = [_event(k, a if k % 3 else b, json.dumps([a if k % 2 else b])) for k in range(30)]
    out = scan.Out(64)
    got, arr = _scan(b",".join(evs + [_event(99, "end", None)]) + b"]", out)
    assert got == 30 and int(out.dist[1]) == 2 and int(out.dist[2]) == 2
    _check(arr, out, got)


def test_each_call_starts_with_an_empty_table():
    """Two calls on one Out (its table kept, a new generation each call): the second call's ids
    are its own, from 0, and the first call's texts are not among them."""
    out = scan.Out(8)
    data = b",".join(_event(k, f"n{k % 5}", f"[[{k % 4}]]") for k in range(20)) + b"]"
    arr = np.frombuffer(bytearray(data), np.uint8)
    scan.scan(arr, 0, len(arr), out, _TABLES)
    assert int(out.state[4]) == scan.FULL and int(out.dist[1]) == 5 and int(out.dist[2]) == 4
    scan.scan(arr, int(out.state[3]), len(arr), out, _TABLES)
    rows = int(out.state[0])
    assert rows == 8 and int(out.dist[1]) == 5 and int(out.dist[2]) == 4
    _check(arr, out, rows)
    assert out.names_seen[5][:5].min() == 0   # first rows of this call


def test_generations_wrap_and_the_table_is_cleared_once():
    """The 16-bit generation wraps after 65,535 calls: the table is cleared then. Uncleared, the
    first call's slots (generation 1) would read as taken in the call after the wrap (generation 1
    again), and a text of the first call would come back with its old id."""
    out = scan.Out(64)
    evs = [_event(k, f"n{k}", f"[[{k}]]") for k in range(10)] + [_event(10 + k, f"m{k}", "[]") for k in range(2)]
    data = b",".join(evs + [_event(99, "end", None)]) + b"]"
    arr = np.frombuffer(bytearray(data), np.uint8)
    scan.scan(arr, 0, len(arr), out, _TABLES)   # generation 1: n0 .. n9, m0, m1 get ids 0 .. 11
    assert int(out.dist[0]) == 1 and int(out.dist[1]) == 12
    m0, n5 = data.index(evs[10]), data.index(evs[5])
    for start in (65533, 65534):   # generations 65534, 65535: m0 and m1 only, n5's slot untouched
        out.dist[0] = start
        scan.scan(arr, m0, len(arr), out, _TABLES)
        assert int(out.dist[0]) == start + 1 and int(out.state[0]) == 2
    scan.scan(arr, n5, len(arr), out, _TABLES)   # generation 0: cleared, then 1
    assert int(out.dist[0]) == 1 and int(out.state[0]) == 7
    assert out.nloc[:7].tolist() == list(range(7))   # n5 is this call's first text, not the old id 5
    _check(arr, out, 7)
