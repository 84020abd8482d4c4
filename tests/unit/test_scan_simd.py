"""Both copies of the compiled walk (scan.py: AVX2 and portable) against the reference decoder
(the msgspec reader) and against each other, in one run.

The copies differ only in how many bytes a step looks at (32-byte vectors, 8-byte words), so the
inputs put what stops a step (a quote, a backslash, a control byte, non-ASCII, a blank, a digit
that ends) at every offset from a window's start and a buffer's end: strings with escapes and
UTF-8 of every length, numbers in every form (and forms that are not JSON), blanks as profilers
write them (Kineto's indented lines, tabs, CRLF), and buffers cut at every byte.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import real_trace
from kerneldiff.core.ingest import decode, scan, slices
from scan_diff import differences

pytestmark = pytest.mark.skipif(not scan.available(), reason="the compiled scanner was not built")

LEVELS = ["avx2", "portable"]


@pytest.fixture(params=LEVELS)
def level(request):
    if request.param not in scan.simd_levels():
        pytest.skip(f"this CPU cannot run the {request.param} walk")
    was = scan.simd_level()
    scan.set_simd(request.param)
    yield request.param
    scan.set_simd(was)


@pytest.fixture
def small_buffers(monkeypatch):
    monkeypatch.setattr(slices, "SLICE", 4096)
    monkeypatch.setattr(slices, "WINDOW", 512)


def test_the_levels_are_named_and_chosen():
    assert scan.simd_levels()[0] == "portable"
    assert scan.simd_level() in scan.simd_levels()
    was = scan.simd_level()
    try:
        for name in scan.simd_levels():
            assert scan.set_simd(name) == name == scan.simd_level()
        with pytest.raises(ValueError):
            scan.set_simd("sse9")
        assert scan.simd_level() == scan.simd_levels()[-1]   # a refused level changes nothing
    finally:
        scan.set_simd(was)


def test_the_environment_can_force_the_portable_copy():
    import os
    import subprocess
    import sys

    code = "from kerneldiff.core.ingest import scan; print(scan.simd_level())"
    env = {**os.environ, "KERNELDIFF_SCAN_SIMD": "portable"}
    forced = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert forced.stdout.strip() == "portable"
    env.pop("KERNELDIFF_SCAN_SIMD")
    default = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert default.stdout.strip() == scan.simd_levels()[-1]   # the best this CPU has


# --- generated documents ----------------------------------------------------------------------

PLAIN = "abcdefghijklmnopqrstuvwxyz_:<>0123456789 ,.()[]{}"
# what ends a plain stretch of a string: escapes, raw UTF-8 of 2-4 bytes
SPECIALS = [b'\\"', b"\\\\", b'\\\\\\"', b"\\/", b"\\b\\f\\n\\r\\t", b"\\u00e9", b"\\u2028", b"\\ud83d\\ude00",
            "é".encode(), "€".encode(), "😀".encode(), b"\x7f"]
# ... and what is not JSON (the scanner leaves the event to the reference decoder): raw control
# bytes, invalid UTF-8, bad escapes, lone surrogates
BAD_SPECIALS = [b"\\ud800", b"\\x", b"\\u12", b"\x01", b"\x1f", b"\t", b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80",
                b"\xc0\xaf", b"\xf4\x90\x80\x80"]
NUMBERS = [b"0", b"-0", b"7", b"-12", b"4539769794658.174", b"6069541203949.4169999", b"1234567890123456789",
           b"12345678901234567890123", b"9007199254740993", b"0.1", b"0.000000012345678", b"1e5", b"1E+5",
           b"1.5e-3", b"-2.25E10", b"123456.789e-3", b"1e400", b"1e-400", b"12345678.12345678",
           b"99999999999999999999.5", b"0.00000000000000000001"]
BAD_NUMBERS = [b"01", b"1.", b".5", b"+1", b"1e", b"-", b"1.e3", b"0x10", b"NaN", b"Infinity", b"1_000"]
BLANKS = [b"", b" ", b"\n    ", b"\n      ", b"\t", b"\r\n  ", b" " * 40, b"\n" + b" " * 33]


def _rare(draw) -> bool:
    """Now and then: something that is not JSON (most events stay readable by the scanner)."""
    return draw(st.integers(0, 24)) == 0


@st.composite
def text(draw) -> bytes:
    """A JSON string's bytes with its quotes: plain runs of chosen length around specials."""
    parts = []
    for _ in range(draw(st.integers(0, 3))):
        parts.append(draw(st.text(PLAIN, min_size=0, max_size=70)).encode())
        if draw(st.integers(0, 2)) == 0:
            parts.append(draw(st.sampled_from(BAD_SPECIALS if _rare(draw) else SPECIALS)))
    return b'"' + b"".join(parts) + b'"'


def number(draw) -> bytes:
    if _rare(draw):
        return draw(st.sampled_from(BAD_NUMBERS))
    return draw(st.sampled_from(NUMBERS)) if draw(st.booleans()) else str(draw(st.integers(-2**63, 2**63))).encode()


@st.composite
def value(draw, depth=0) -> bytes:
    kind = draw(st.integers(0, 6 if depth < 2 else 3))
    if kind == 0:
        return draw(text())
    if kind == 1:
        return number(draw)
    if kind == 2:
        return draw(st.sampled_from([b"nul", b"tru"] if _rare(draw) else [b"null", b"true", b"false"]))
    if kind == 3:
        return b'"' + number(draw) + b'"'
    blank = draw(st.sampled_from(BLANKS))
    items = [draw(value(depth + 1)) for _ in range(draw(st.integers(0, 4)))]
    if kind in (4, 5):
        return b"[" + blank + (b"," + blank).join(items) + b"]"
    keys = [draw(text()) for _ in items]
    return b"{" + blank + (b"," + blank).join(k + b":" + blank + v for k, v in zip(keys, items)) + b"}"


ARG_KEYS = [b'"External id"', b'"correlation"', b'"Python id"', b'"Input Dims"', b'"Input type"',
            b'"Concrete Inputs"', b'"grid"', b'"Record function id"', b'"stream"', b'"Ev Idx"', b'"other"']
INT_ARGS = {b'"External id"', b'"correlation"', b'"Python id"', b'"stream"'}


@st.composite
def event(draw) -> bytes:
    """An event laid out as Kineto writes them (or not): the fields kerneldiff reads with values
    of their kinds (now and then another), other keys with values of any kind."""
    blank = lambda: draw(st.sampled_from(BLANKS))  # noqa: E731
    odd = lambda: _rare(draw)  # noqa: E731
    members = [b'"ph":' + blank() + (draw(st.sampled_from([b'"f"', b'"M"', b'"Q"', b"1"])) if odd() else b'"X"'),
               b'"cat":' + blank() + draw(st.sampled_from([b'"kernel"', b'"cpu_op"', b'"python_function"',
                                                          b'"cuda_runtime"', b'"gpu_memcpy"', b'"other"']
                                                         + ([b'"k\\u0065rnel"'] if odd() else [])))]
    if draw(st.integers(0, 9)):
        members.append(b'"name":' + blank() + (draw(value()) if odd() else draw(text())))
    for key in (b'"ts"', b'"dur"'):
        if draw(st.integers(0, 9)):
            members.append(key + b":" + blank() + (draw(value()) if odd() else number(draw)))
    for key in (b'"pid"', b'"tid"'):
        if draw(st.integers(0, 9)):
            members.append(key + b":" + blank() + (draw(value()) if odd() else str(draw(st.integers(-9, 10**6))).encode()))
    for key in draw(st.lists(st.sampled_from([b'"s"', b'"id"', b'"bp"']), max_size=2, unique=True)):
        members.append(key + b":" + blank() + draw(value()))
    if draw(st.booleans()):
        args = [k + b":" + blank() + (str(draw(st.integers(-1, 10**9))).encode() if k in INT_ARGS and not odd()
                                      else draw(value()))
                for k in draw(st.lists(st.sampled_from(ARG_KEYS), max_size=6, unique=True))]
        members.append(b'"args":' + blank() + b"{" + blank() + (b"," + blank()).join(args) + blank() + b"}")
    order = draw(st.permutations(range(len(members))))
    return b"{" + blank() + (b"," + blank()).join(members[k] for k in order) + blank() + b"}"


GOOD = b'{"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 2, "ts": 1.5, "dur": 2, "args": {"correlation": 3}}'


def _document(events: list[bytes], seed: int) -> bytes:
    sep = random.Random(seed).choice([b",", b",\n  ", b" ,\t", b",\r\n"])
    return b'{"traceEvents": [\n  ' + sep.join([GOOD] * 5 + events + [GOOD] * 5) + b"\n  ]\n}"


SETTINGS = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


@pytest.mark.slow
@SETTINGS
@given(st.lists(event(), min_size=1, max_size=25), st.integers(0, 2**32))
def test_generated_events_read_as_the_reference_decoder_reads_them(tmp_path, small_buffers, level, events, seed):
    path = tmp_path / "t.json"
    path.write_bytes(_document(events, seed))
    assert differences(path) == []


# --- the two copies against each other, at the scanner's level ---------------------------------

_TABLES = scan.tables(decode.GROUP_OF)


def _scan_all(data: bytes, level: str) -> list:
    """Everything one scan call of `level` returns for data (only what it wrote)."""
    scan.set_simd(level)
    out = scan.Out(256)
    arr = np.frombuffer(bytearray(data), np.uint8)
    scan.scan(arr, 0, len(data), out, _TABLES)
    rows, fixes = int(out.state[0]), int(out.state[2])
    return [out.state.tolist(), out.code[:rows].tolist(), out.floats[:, :rows].tobytes(),
            out.ints[:, :rows].tolist(), out.nhash[:rows].tolist(), out.nstart[:rows].tolist(),
            out.nlen[:rows].tolist(), out.nesc[:rows].tolist(), out.fix[:fixes].tolist(),
            out.shape[:rows].tolist(), out.shash[:rows].tolist()]


@pytest.mark.slow
@pytest.mark.skipif("avx2" not in scan.simd_levels(), reason="this CPU has no AVX2")
@SETTINGS
@given(st.lists(event(), min_size=1, max_size=8), st.data())
def test_both_copies_return_the_same_at_every_cut(events, data):
    """Same rows, positions and status from both copies, whole and cut at any byte: a buffer's end
    falls inside every kind of token, at every offset from a vector's start."""
    was = scan.simd_level()
    try:
        body = b",\n  ".join([GOOD] + events + [GOOD]) + b"]"
        cuts = {len(body)} | set(data.draw(st.lists(st.integers(0, len(body)), max_size=12)))
        for cut in sorted(cuts):
            assert _scan_all(body[:cut], "avx2") == _scan_all(body[:cut], "portable"), cut
    finally:
        scan.set_simd(was)


def test_every_cut_of_a_kineto_event_stops_alike():
    """A real profiler's layout, cut at each of its bytes: both copies stop at the same place."""
    if "avx2" not in scan.simd_levels():
        pytest.skip("this CPU has no AVX2")
    ev = (b'{\n    "ph": "X", "cat": "cpu_op", "name": "aten::copy_\\u00e9 \xc3\xa9", "pid": 440, "tid": 440,\n'
          b'    "ts": 4539769794756.726, "dur": 2105.319,\n    "args": {\n      "External id": 5,'
          b'"Record function id": 0, "Concrete Inputs": ["", "", "False"], "Input type": ["long int", '
          b'"long int", "Scalar"], "Input Strides": [[], [], []], "Input Dims": [[4, 256], [4, 256], []], '
          b'"Ev Idx": 4\n    }\n  }')
    body = ev + b",\n  " + ev + b",\n  " + ev + b"]"
    was = scan.simd_level()
    try:
        whole = _scan_all(body, "portable")
        # two events read; the last is left with the array's end to the caller
        assert (whole[0][0], whole[0][1], whole[0][4]) == (2, 2, scan.ARRAY_END)
        for cut in range(len(body) + 1):
            assert _scan_all(body[:cut], "avx2") == _scan_all(body[:cut], "portable"), cut
    finally:
        scan.set_simd(was)


def test_numbers_parsed_eight_digits_at_a_time_are_exact(level):
    """ts and dur of every length (the digits are summed eight at a time): Python's float()."""
    rng = random.Random(5)
    values = [f"{rng.randrange(10 ** k)}.{rng.randrange(10 ** f):0{f}d}" for k in range(1, 21) for f in range(0, 20)]
    values += [str(rng.randrange(10 ** k)) for k in range(1, 25)] + ["0.000000001234567890", "100000000.00000001"]
    data = b"".join(b'{"ph":"X","cat":"kernel","name":"k","ts":%s,"dur":"%s"},' % (v.encode(), v.encode())
                    for v in values) + b" "
    out = scan.Out(8 * len(values) + 64)   # room for two numbers left to float() a row
    arr = np.frombuffer(bytearray(data), np.uint8)
    scan.scan(arr, 0, len(data), out, _TABLES)
    sc = scan.collect(arr, out, scan.NameCache())
    assert sc.floats[0].tolist() == [float(v) for v in values]
    assert sc.floats[1].tolist() == [float(v) for v in values]


def test_json_dumps_layouts_read_alike(tmp_path, small_buffers, level):
    """Events as json.dumps writes them (indent, ensure_ascii or not): the reference's columns."""
    rng = random.Random(9)
    evs = [{"ph": "X", "cat": rng.choice(["kernel", "cpu_op", "python_function"]),
            "name": "".join(rng.choice(["a", "é", "\"", "\\", "\u2028", "😀", " " * 20, "x" * 33]) for _ in range(6)),
            "ts": rng.random() * 1e13, "dur": rng.random() * 1e3, "pid": 1, "tid": rng.randrange(9),
            "args": {"External id": rng.randrange(10 ** 6), "Input Dims": [[rng.randrange(5000)] * rng.randrange(4)],
                     "Concrete Inputs": ["", "False", "[1, 2]"]}} for _ in range(400)]
    for k, (indent, ascii_) in enumerate(((None, True), (2, False), (4, True), ("\t", False))):
        path = tmp_path / f"t{k}.json"
        path.write_text(json.dumps({"traceEvents": evs}, indent=indent, ensure_ascii=ascii_), encoding="utf-8")
        assert differences(path) == [], (indent, ascii_)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["h100_llama_eager_sdpa.json.gz", "b200_vllm_eager.json.gz"])
def test_real_traces_read_alike_with_each_copy(name, level):
    assert differences(real_trace(name)) == []
