"""The one gzip loop (core/gzip_stream.py): members joined whatever the read sizes, bytes after the
last member ignored, bounded output, and damage told apart as a cut stream or corrupt data; the
trace reader's inflating thread reads through it."""

from __future__ import annotations

import gzip
import io
import json

import pytest
from hypothesis import given, settings, strategies as st

import kerneldiff.core.ingest.source as source
from conftest import kineto_doc
from kerneldiff.core.errors import TraceError
from kerneldiff.core.gzip_stream import GZIP_MAGIC, GzipStream, inflate
from kerneldiff.core.orchestration import load


def _reads(data: bytes, sizes: list[int]):
    """read() giving `data` in pieces of the sizes given, cycled."""
    at, i = 0, 0

    def read() -> bytes:
        nonlocal at, i
        n = sizes[i % len(sizes)]
        i += 1
        piece = data[at:at + n]
        at += len(piece)
        return piece

    return read


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(payloads=st.lists(st.binary(max_size=3000), min_size=1, max_size=4),
       trailing=st.sampled_from([b"", b"\x00", b"x" * 40, b"\x1f"]),
       sizes=st.lists(st.integers(1, 700), min_size=1, max_size=5),
       piece=st.integers(1, 5000))
def test_members_are_one_stream_whatever_the_read_sizes(payloads, trailing, sizes, piece):
    data = b"".join(gzip.compress(p, mtime=0) for p in payloads) + trailing
    stream = GzipStream(_reads(data, sizes), piece=piece)
    pieces = list(stream)
    assert b"".join(pieces) == b"".join(payloads) == gzip.decompress(data.removesuffix(trailing))
    assert all(0 < len(x) <= piece for x in pieces)
    assert stream.produced == sum(map(len, payloads))
    assert not stream.cut and stream.error is None


def test_the_second_members_magic_split_across_two_reads_is_still_read():
    """The reader's thread once took a lone 0x1f at the end of a read for bytes after the last
    member and dropped the members after it."""
    first, second = gzip.compress(b"a" * 1000, mtime=0), gzip.compress(b"b" * 1000, mtime=0)
    data = first + second
    stream = GzipStream(_reads(data, [len(first) + 1, 1 << 20]))
    assert b"".join(stream) == b"a" * 1000 + b"b" * 1000 and not stream.cut


def test_a_trace_whose_member_boundary_straddles_the_readers_block_loads_whole(tmp_path, monkeypatch):
    events = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": 10 * i, "dur": 5, "pid": 0, "tid": 7,
               "args": {"stream": 7, "correlation": i}} for i in range(200)]
    body = json.dumps(kineto_doc(events)).encode()
    first = gzip.compress(body[: len(body) // 2], mtime=0)
    p = tmp_path / "members.json.gz"
    p.write_bytes(first + gzip.compress(body[len(body) // 2:], mtime=0))
    monkeypatch.setattr(source, "GZ_BLOCK", len(first) + 1)   # the first read ends 1 byte into member 2
    m = load(p, use_cache=False)
    assert len(m.kernels) == 200
    assert not any("truncated" in w for w in m.warnings)


def test_a_cut_stream_keeps_what_was_inflated_and_says_it_was_cut():
    payload = bytes(range(256)) * 400
    data = gzip.compress(payload, mtime=0)
    stream = GzipStream(_reads(data[: len(data) // 2], [4096]))
    got = b"".join(stream)
    assert stream.cut and stream.error is None
    assert 0 < len(got) < len(payload) and payload.startswith(got)


def test_corrupt_data_ends_the_pieces_with_zlibs_words():
    data = bytearray(gzip.compress(bytes(range(256)) * 400, mtime=0))
    data[40:60] = b"\xff" * 20
    stream = GzipStream(_reads(bytes(data), [1 << 16]))
    list(stream)
    assert stream.error and not stream.cut


def test_output_is_bounded_whatever_the_ratio():
    bomb = gzip.compress(b" " * (64 << 20), mtime=0)   # 64 MiB of blanks in ~64 KB
    stream = GzipStream(_reads(bomb, [1 << 16]), out_limit=1_000_000, piece=100_000)
    assert sum(map(len, stream)) == 1_000_000 == stream.produced


def test_inflate_is_lenient_for_a_probe_and_strict_for_a_whole_file_reader():
    payload = bytes(range(256)) * 400
    data = gzip.compress(payload, mtime=0)
    cut = data[: len(data) // 2]
    assert payload.startswith(b"".join(inflate(io.BytesIO(cut), "t.gz", 1 << 30, 1 << 30)))
    with pytest.raises(TraceError, match="truncated"):
        list(inflate(io.BytesIO(cut), "t.gz", 1 << 30, 1 << 30, strict=True))
    with pytest.raises(TraceError, match="corrupt gzip data"):
        list(inflate(io.BytesIO(GZIP_MAGIC + b"\x08\x00" + b"\xff" * 100), "t.gz", 1 << 30, 1 << 30))
    # bytes after the last member are ignored, as gzip(1) does
    tail = data + b"garbage after the member"
    assert b"".join(inflate(io.BytesIO(tail), "t.gz", 1 << 30, 1 << 30, strict=True)) == payload
