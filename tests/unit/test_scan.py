"""The compiled scanner (kerneldiff.core.ingest.scan) against the msgspec reader: identical columns on every input.

The reader's buffers are shrunk here so that even small files go through the scanner (on its
own it starts past 1 MB). Inputs: the real traces, the demo pair, generated traces of every
annotation style, the whole hostile corpus, and random events with odd values and formatting.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import real_trace
from kerneldiff.core.ingest import decode, scan, slices
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.errors import TraceError
from kerneldiff.core.ingest.columns import Columns
from kerneldiff.core.ingest.slices import decode_run
from kerneldiff.core.ingest.source import EventReader
from hostile_corpus import build
from scan_diff import differences, read_columns

pytestmark = pytest.mark.skipif(not scan.available(), reason="the compiled scanner was not built")


@pytest.fixture
def small_buffers(monkeypatch):
    monkeypatch.setattr(slices, "SLICE", 4096)
    monkeypatch.setattr(slices, "WINDOW", 512)


def _outcome(path):
    try:
        return differences(path)
    except TraceError as e:  # then the msgspec reader must refuse it the same way
        with pytest.raises(TraceError) as slow:
            read_columns(path, False)
        return [] if str(slow.value) == str(e) else [f"errors differ: {e} / {slow.value}"]


def _share_scanned(path) -> float:
    r = EventReader(str(path))
    fast = slow = 0
    for b in r.batches():
        if type(b) is scan.Scanned:
            fast += b.events
        else:
            slow += len(b)
    r.close()
    return fast / max(fast + slow, 1)


REAL = ["mi300x_vllm_gptoss_decode.json.gz", "h100_qwen1.5-0.5b_hf.json.gz", "mi300x_qwen1.5-0.5b_hf.json.gz",
        "mi300x_sglang_qwen3-8b_decode.json.gz", "b200_vllm_eager.json.gz", "a100_control.json.gz",
        "v100_test.json.gz", "mi250_minitoy_train_rocm.json.gz", "a100_triton_example.json.gz"]


@pytest.mark.slow
@pytest.mark.parametrize("name", REAL)
def test_real_traces_read_identically(name, small_buffers):
    path = real_trace(name)
    assert differences(path) == []
    assert _share_scanned(path) >= 0.8   # and the scanner really read them (the tail is msgspec's)


@pytest.mark.slow
def test_demo_and_generated_traces_read_identically(small_buffers, tmp_path):
    from kerneldiff.core.synth.pair import write_pair

    for p in (DEMO_A, DEMO_B):
        assert differences(p) == []
    for i, style in enumerate(("vllm", "vllm-old", "sglang", "hf")):
        a, b, _ = write_pair(tmp_path / style, seed=i, layers=3, steps=3, annotation=style, gzip=i % 2 == 0,
                             moe=i == 1, graph=i == 2)
        for p in (a, b):
            assert differences(p) == [], (style, p)
            assert _share_scanned(p) > 0.9


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build(tmp_path_factory.mktemp("hostile"))[1]


@pytest.mark.slow
def test_hostile_corpus_reads_identically(corpus, monkeypatch):
    monkeypatch.setattr(slices, "SLICE", 4096)
    monkeypatch.setattr(slices, "WINDOW", 512)
    bad = {}
    for case in corpus:
        if not case.path.is_file() or case.path.stat().st_size > 40_000_000:   # FIFOs, devices, links: not JSON
            continue
        d = _outcome(case.path)
        if d:
            bad[case.name] = d[:3]
    assert bad == {}


# --- random events ---------------------------------------------------------------------------

INT_VALUES = st.one_of(
    st.integers(-2**63, 2**63 - 1), st.integers(-1000, 10**6).map(str), st.none(),
    st.sampled_from(["", "0x0", "abc", "stream 7", " 12", "007", "1e3", "1.5", "-", "٣", "+5", "1_0"]),
    st.floats(allow_nan=False, allow_infinity=False), st.booleans())
FLOAT_VALUES = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False), st.integers(-2**70, 2**70), st.none(),
    st.sampled_from(["1.5", "12", "nan", "abc", "-0.0", "1e400", "6069541203949.4169999"]),
    st.decimals(allow_nan=False, allow_infinity=False, places=7).map(str))
NAMES = st.one_of(st.text(max_size=30), st.sampled_from(["gemm_kernel", "a\"b", "\\", "é", "\u2028", "\U0001f600"]),
                  st.none(), st.integers())
CATS = st.sampled_from(["kernel", "gpu_memcpy", "cpu_op", "python_function", "cuda_runtime", "user_annotation",
                        "gpu_user_annotation", "Kernel", "ac2g", "Trace", None, 5])
PHASES = st.sampled_from(["X", "X", "X", "s", "f", "i", "M", "Q", None, 1])
ARG_KEYS = ["correlation", "External id", "device", "stream", "Python id", "Python parent id", "kind", "grid",
            # a collective's parameters (record_param_comms): counts and names of any type
            "Seq", "Group size", "In msg nelems", "Out msg nelems", "Collective name", "Process Group Name", "dtype",
            "Process Group Ranks"]
TEXT_ARGS = {"Collective name", "Process Group Name", "dtype", "Process Group Ranks"}
TEXT_VALUES = st.one_of(NAMES, INT_VALUES, st.sampled_from(["x" * 300, "allreduce", "BFloat16", "", "3", "[0, 1]", "[]"]),
                        st.lists(st.integers(-1, 3), max_size=3))


@st.composite
def event(draw):
    ev = {}
    for key, values in (("ph", PHASES), ("cat", CATS), ("name", NAMES), ("ts", FLOAT_VALUES), ("dur", FLOAT_VALUES),
                        ("pid", INT_VALUES), ("tid", INT_VALUES)):
        if draw(st.integers(0, 9)):   # each field is sometimes missing
            v = draw(values)
            if v is not None or draw(st.booleans()):
                ev[key] = v
    if draw(st.booleans()):
        args = {k: draw(TEXT_VALUES if k in TEXT_ARGS else INT_VALUES)
                for k in draw(st.lists(st.sampled_from(ARG_KEYS), max_size=6, unique=True))}
        ev["args"] = draw(st.sampled_from([args, args, None, "x", [1]]))
    keys = list(ev)
    random.Random(draw(st.integers(0, 99))).shuffle(keys)
    return {k: ev[k] for k in keys}


def _dump(events, rng: random.Random) -> bytes:
    """JSON with random blanks between tokens and escaped or raw non-ASCII."""
    parts = []
    for e in events:
        text = json.dumps(e, ensure_ascii=rng.random() < 0.5, separators=rng.choice([(",", ":"), (", ", ": ")]))
        parts.append(text.replace("Infinity", "1e999").replace("NaN", "null"))
    sep = rng.choice([",", ",\n", " , "])
    return ('{"traceEvents": [\n' + sep.join(parts) + "\n]}").encode()


@pytest.mark.slow
@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(st.lists(event(), min_size=1, max_size=60), st.integers(0, 2**32))
def test_random_events_read_identically(tmp_path, small_buffers, events, seed):
    path = tmp_path / "t.json"
    good = {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}
    path.write_bytes(_dump([good] * 20 + events + [good] * 20, random.Random(seed)))
    assert _outcome(path) == []


def test_a_run_reads_identically_through_the_workers_path():
    """decode_run, what worker processes call on shared memory: same columns either way."""
    rng = random.Random(3)
    evs = [{"ph": "X", "cat": rng.choice(["kernel", "cpu_op", "cuda_runtime", "python_function"]),
            "name": rng.choice(["gemm", "norm\\u00e9", "a\"b"]), "ts": rng.random() * 1e6, "dur": rng.random(),
            "pid": 1, "tid": rng.choice([1, "7", "abc"]),
            "args": {"correlation": rng.choice([5, "6", None]), "External id": 3, "stream": rng.choice([7, "0x0"])}}
           for _ in range(3000)]
    body = json.dumps(evs).encode()
    cols = []
    for fast in (True, False):
        buf = bytearray(body[:-1] + b"..")
        col = Columns()
        for batch in decode_run(memoryview(buf), 0, len(buf) - 2, fast=fast):
            col.add(batch)
        names = np.array(col.strings + [None], dtype=object)
        cols.append({(g, c): (names[a] if c == "name" else a) for g, cs in col.arrays().items() for c, a in cs.items()})
    fast, slow = cols
    for key in slow:
        assert np.array_equal(fast[key], slow[key]), key
    assert len(slow["k", "ts"]) > 500


def test_the_scanner_stops_at_what_it_does_not_read():
    """Odd content is left to msgspec: the scan stops before the event, not after it."""
    tables = scan.tables(decode.GROUP_OF)
    ok = b'{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"args":{"correlation":3}},'
    for odd in (b'{"ph":"X","cat":"kernel","name":"k","ts":true,"dur":2},',      # a bool for a number
                b'{"ph":"X","cat":"kernel","name":"k","ts":1,"ts":2,"dur":2},',  # a duplicate key
                b'{"cat":"kernel","name":"k","ts":1,"dur":2},',                  # no phase
                b'{"ph":"X","cat":"kernel","name":"\\ud800","ts":1,"dur":2},',   # a lone surrogate
                b'{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"x":[' + b"[" * 70 + b"]" * 70 + b"]},",
                b'{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"x":01},'):  # not JSON
        data = ok * 3 + odd + ok
        out = scan.Out(64)
        scan.scan(np.frombuffer(bytearray(data), np.uint8), 0, len(data), out, tables)
        assert (int(out.state[0]), int(out.state[3]), int(out.state[4])) == (3, 3 * len(ok), scan.BAIL), odd


def test_long_numbers_are_parsed_by_python_exactly():
    """Digits beyond what a double holds exactly are not rounded by hand."""
    tables = scan.tables(decode.GROUP_OF)
    values = ["6069541203949.4169999", "1234567890123456789", "0.1", "123456.789e-3", "9007199254740993"]
    data = b"".join(b'{"ph":"X","cat":"kernel","name":"k","ts":%s,"dur":"%s"},' % (v.encode(), v.encode())
                    for v in values) + b" "
    out = scan.Out(64)
    arr = np.frombuffer(bytearray(data), np.uint8)
    scan.scan(arr, 0, len(data), out, tables)
    sc = scan.collect(arr, out, scan.NameCache())
    assert sc.floats[0].tolist() == [float(v) for v in values]
    assert sc.floats[1].tolist() == [float(v) for v in values]


def test_big_synthetic_trace_reads_identically(tmp_path):
    """Default buffers, a trace past the 1 MB buffer with the bench generator's shape."""
    from kerneldiff.core.synth.pair import write_pair

    a, _, _ = write_pair(tmp_path, seed=11, gzip=False, target_bytes=3_000_000)
    assert Path(a).stat().st_size > 2_000_000
    assert differences(a) == []
    assert _share_scanned(a) > 0.95
