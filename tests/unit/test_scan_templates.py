"""Events read through templates of earlier events (scan.py) against the full walk, which reads
every event alone: the same rows, positions and status, byte for byte, in both copies of the walk.

A template keeps the bytes between an event's values; a later event matching them is read value
by value. So the inputs repeat a few layouts, then change them one byte at a time (a digit, a
quote, a blank, a brace inserted, replaced or deleted anywhere: inside a literal, a value, or where
one ends), and cut the buffer at any byte.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import real_trace
from kerneldiff.core.ingest import decode, scan
from test_scan_simd import GOOD, event

pytestmark = pytest.mark.skipif(not scan.available(), reason="the compiled scanner was not built")

_TABLES = scan.tables(decode.GROUP_OF)
SPICE = b'0123456789"\\ .,-eE}]{[n:xX\t\n' + "é".encode()


def _scan_all(data: bytes, templates: bool, level: str, cap: int = 256) -> list:
    """Every scan call's output over data, resuming where the last one stopped when it was full."""
    was_t, was_l = scan.set_templates(templates), scan.simd_level()
    scan.set_simd(level)
    try:
        arr = np.frombuffer(bytearray(data), np.uint8)
        out, pos, calls = scan.Out(cap), 0, []
        while True:
            scan.scan(arr, pos, len(arr), out, _TABLES)
            rows, fixes = int(out.state[0]), int(out.state[2])
            calls.append([out.state.tolist(), out.code[:rows].tolist(), out.floats[:, :rows].tobytes(),
                          out.ints[:, :rows].tolist(), out.nhash[:rows].tolist(), out.nstart[:rows].tolist(),
                          out.nlen[:rows].tolist(), out.nesc[:rows].tolist(), out.fix[:fixes].tolist(),
                          out.shape[:rows].tolist(), out.shash[:rows].tolist()])
            if int(out.state[4]) != scan.FULL:
                return calls
            pos = int(out.state[3])
    finally:
        scan.set_templates(was_t)
        scan.set_simd(was_l)


def _alike(data: bytes) -> None:
    for level in scan.simd_levels():
        assert _scan_all(data, True, level) == _scan_all(data, False, level), level


def _mutate(ev: bytes, rng: random.Random) -> bytes:
    b = bytearray(ev)
    for _ in range(rng.randrange(1, 3)):
        k, c = rng.randrange(len(b)), SPICE[rng.randrange(len(SPICE))]
        op = rng.randrange(3)
        if op == 0:
            b[k] = c
        elif op == 1:
            b.insert(k, c)
        elif len(b) > 1:
            del b[k]
    return bytes(b)


def _stream(bases: list[bytes], seed: int) -> bytes:
    rng = random.Random(seed)
    evs = [_mutate(e, rng) if rng.random() < 0.3 else e for e in (rng.choice(bases) for _ in range(rng.randrange(5, 60)))]
    return rng.choice([b",", b",\n  ", b", "]).join([GOOD] + evs + [GOOD]) + b"]"


def _stream_alike_at_cuts(bases: list[bytes], seed: int, cuts: int) -> None:
    """The stream of `bases` read alike whole and cut at `cuts` random bytes."""
    body = _stream(bases, seed)
    rng = random.Random(seed)
    for cut in sorted({len(body)} | {rng.randrange(len(body) + 1) for _ in range(cuts)}):
        _alike(body[:cut])


SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))


@settings(max_examples=40, **SETTINGS)
@given(st.lists(event(), min_size=1, max_size=4), st.integers(0, 2**32))
def test_repeated_layouts_changed_a_byte_at_a_time_read_alike(bases, seed):
    _stream_alike_at_cuts(bases, seed, 3)


@pytest.mark.slow
@settings(max_examples=600, **SETTINGS)
@given(st.lists(event(), min_size=1, max_size=4), st.integers(0, 2**32))
def test_repeated_layouts_read_alike_many(bases, seed):
    _stream_alike_at_cuts(bases, seed, 6)


def test_a_value_after_more_blanks_than_the_template_had():
    """The template's literal ends where its value began; a later event with one more blank there
    matches the literal, and its value starts at a blank, which the full walk never records."""
    one = b'{"ph":"X","cat":"cpu_op","name":"a","args":{"Input Dims": [[1, 2]],"Ev Idx": 3}}'
    more = one.replace(b'"Input Dims": [', b'"Input Dims":  [')
    data = b",\n".join([one, one, more, one, more, more, one]) + b"]"
    _alike(data)
    rows = _scan_all(data, True, scan.simd_level())[0]
    starts = [r[0] for r in rows[9]]   # each row's Input Dims starts at its '['
    assert all(data[s:s + 1] == b"[" for s in starts) and len(starts) == 6


def test_layouts_that_share_their_first_values():
    """Kernels with and without a launch grid share every step before it: one template hands the
    event over to the other where their literals part, with the values read so far."""
    k = (b'{"ph":"X","cat":"kernel","name":"k%d","pid":0,"tid":7,"ts":%d.5,"dur":1.25,"args":{"device":0,'
         b'"stream":7,"correlation":%d%s}}')
    evs = [k % (j, 1000 + j, j, b',"grid":[1,1,1],"block":[128,1,1]' if j % 3 else b"") for j in range(40)]
    data = b",\n".join(evs + [GOOD]) + b"]"
    _alike(data)
    rows = _scan_all(data, True, scan.simd_level())[0]
    assert rows[0][:2] == [40, 40]
    grid = [r[2 * scan.GRID] for r in rows[9]]
    assert [g >= 0 for g in grid] == [bool(j % 3) for j in range(40)]


def test_layouts_that_never_repeat():
    """Every event's keys in another order: no template matches, templates rest after 64 events in
    a row, then are tried again; every event reads as the full walk reads it."""
    rng = random.Random(3)
    evs = []
    for k in range(9000):
        members = [b'"ph":"X"', b'"cat":"kernel"', b'"name":"k%d"' % (k % 7), b'"ts":%d.5' % k, b'"dur":1',
                   b'"pid":0', b'"tid":%d' % (k % 3), b'"args":{"correlation":%d,"x%d":1}' % (k, rng.randrange(5))]
        rng.shuffle(members)
        evs.append(b"{" + b",".join(members) + b"}")
        if k % 500 == 0:   # now and then a run of one layout, which templates read again
            evs.extend([evs[-1]] * 100)
    data = b",\n".join(evs + [GOOD]) + b"]"
    for level in scan.simd_levels():
        assert _scan_all(data, True, level, cap=1 << 15) == _scan_all(data, False, level, cap=1 << 15)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz",
                                  "mi300x_vllm_gptoss_decode.json.gz", "a100_control.json.gz"])
def test_real_traces_read_alike(name):
    import gzip

    with gzip.open(real_trace(name)) as f:
        data = f.read()
    start = data.index(b"[", data.index(b'"traceEvents"')) + 1
    body = data[start:]
    level = scan.simd_level()
    assert _scan_all(body, True, level, cap=1 << 16) == _scan_all(body, False, level, cap=1 << 16)
