"""record_param_comms' parameters through both readers (the compiled scanner and msgspec): the same
text on every input, hostile values (junk types, huge strings, escaped keys, duplicates) read as
not recorded, never a crash."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from conftest import kineto_doc, write_trace
from kerneldiff.core.analysis.comm_params import comm_params
from kerneldiff.core.ingest import scan, slices
from kerneldiff.core.ingest.decode import comm_text
from kerneldiff.core.session import Session
from scan_diff import differences

GOOD = {"Collective name": "allreduce", "Seq": 7, "Process Group Name": "0", "Group size": 8,
        "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "BFloat16"}
CASES = [
    (GOOD, dict(name="allreduce", seq=7, pg="0", group=8, in_nelems=1024, out_nelems=1024, dtype="BFloat16")),
    # numbers as strings (the vLLM MI300X and B200 traces write ids so), a numeric group name
    ({**GOOD, "Seq": "7", "Group size": "8", "In msg nelems": "1024", "Process Group Name": 3},
     dict(seq=7, group=8, in_nelems=1024, pg="3")),
    # junk: bools, floats, lists, objects, negative, huge, non-JSON numbers
    ({**GOOD, "Seq": True, "Group size": 8.0, "In msg nelems": [1], "Out msg nelems": {"a": 1}, "dtype": 5},
     dict(seq=None, group=None, in_nelems=None, out_nelems=None, dtype="")),
    ({**GOOD, "Seq": -1, "Group size": 2**70, "In msg nelems": "1e3", "Out msg nelems": " 12"},
     dict(seq=None, group=None, in_nelems=None, out_nelems=None)),
    ({**GOOD, "Collective name": "x" * 1_000_000, "Process Group Name": "", "dtype": None},
     dict(name="", pg="", dtype="")),
    ({"Collective name": "\u00e9\u2028\"\\", "Seq": 1}, dict(name="\u00e9\u2028\"\\", seq=1, pg="", group=None)),
    ({"Rank": 3, "In split size": "[]"}, None),     # other parameters only: nothing recorded
    # the group's ranks: a list written as a string (PyTorch), a list, junk, empty
    ({"Process Group Ranks": "[0, 1, 2, 3]"}, dict(ranks=(0, 1, 2, 3))),
    ({"Process Group Ranks": [4, 5]}, dict(ranks=(4, 5))),
    ({"Process Group Ranks": "[0, true]", "Seq": 2}, dict(ranks=(), seq=2)),
    ({"Process Group Ranks": "[]", "Seq": 3}, dict(ranks=(), seq=3)),
]


def _events(cases, copies):
    ev = []
    for i in range(copies):
        for j, (args, _) in enumerate(cases):
            ext = 1000 * i + j
            ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1,
                       "ts": 10.0 * ext, "dur": 5, "args": {"External id": ext, **args}})
    return ev


@pytest.fixture
def small_buffers(monkeypatch):
    monkeypatch.setattr(slices, "SLICE", 4096)
    monkeypatch.setattr(slices, "WINDOW", 512)


@pytest.mark.skipif(not scan.available(), reason="the compiled scanner was not built")
def test_both_readers_store_the_same_parameters(tmp_path, small_buffers):
    path = write_trace(tmp_path / "t.json", kineto_doc(_events(CASES, 3)))
    assert differences(path) == []
    # an escaped key, a duplicate key: the scanner leaves them to msgspec, the texts still agree
    raw = json.dumps(kineto_doc(_events(CASES[:1], 40))).replace('"Seq"', '"S\\u0065q"', 3)
    raw = raw.replace('"Group size": 8', '"Group size": 8, "Group size": 4', 3)
    (tmp_path / "odd.json").write_text(raw)
    assert differences(tmp_path / "odd.json") == []


@pytest.mark.parametrize("fast", [True, False])
def test_parameters_read_as_written_and_junk_as_absent(tmp_path, fast, monkeypatch):
    if not fast:
        monkeypatch.setenv("KERNELDIFF_NO_SCANNER", "1")
    path = write_trace(tmp_path / "t.json", kineto_doc(_events(CASES, 1)))
    m = Session([str(path)], use_cache=False).load(0)
    got = comm_params(m, list(range(len(m.cpu_ops))))
    by_ts = sorted(zip(m.cpu_ops.ts.tolist(), got))
    for (_, p), (_, want) in zip(by_ts, CASES):
        if want is None:
            assert p is None
            continue
        for k, v in want.items():
            assert getattr(p, k) == v, (k, p)
    assert comm_text([None] * 8) is None


def _texts(m):
    return sorted((round(t, 3), m.strings[int(c)]) for t, c in zip(m.cpu_ops.ts.tolist(), m.cpu_ops.comm.tolist()) if c >= 0)


@pytest.mark.slow
def test_worker_processes_and_the_cache_keep_the_parameters(tmp_path):
    """A file cut between worker processes, and the same model read back from the disk cache."""
    pad = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1e6 + i, "dur": 1,
            "args": {"External id": 10**6 + i, "Input Dims": [[4096, 4096]] * 4, "Input type": ["float"] * 4}}
           for i in range(40_000)]
    path = write_trace(tmp_path / "big.json", kineto_doc(_events(CASES, 200) + pad))
    assert path.stat().st_size > 6 * 2**20       # several runs for the workers (MIN_RUN: 2 MB)
    one = Session([str(path)], use_cache=False, workers=1).load(0)
    two = Session([str(path)], use_cache=False, workers=2).load(0)
    want = _texts(one)
    assert len(want) == 200 * (len(CASES) - 1) and _texts(two) == want
    Session([str(path)], use_cache=True).load(0)
    cached = Session([str(path)], use_cache=True).load(0)
    assert _texts(cached) == want


_ANY = st.one_of(st.none(), st.booleans(), st.integers(-5, 2**63), st.floats(allow_nan=False),
                 st.sampled_from(["allreduce", "0", "12", "-3", "1e3", "", "x" * 300, "BFloat16", "[0, 1]", "[]",
                                  "[1.5]", "[-1]", "[[1]]", "[0,"]), st.text(max_size=5),
                 st.lists(st.integers(), max_size=2))


def _reference(values):
    """comm_text written plainly: what each field reads as, without the caches."""
    import re

    out = {}
    for key, v in zip(("name", "seq", "pg", "group", "in", "out", "dtype", "ranks"), values):
        if key == "ranks":
            if type(v) is str:
                try:
                    v = json.loads(v)
                except ValueError:
                    continue
            if type(v) is list and v and all(type(x) is int and 0 <= x < 2**31 for x in v):
                out[key] = v
        elif key in ("name", "pg", "dtype"):
            if key == "pg" and type(v) is int and -(2**63) <= v < 2**63:
                v = str(v)
            if type(v) is str and 0 < len(v) <= 256:
                out[key] = v
        else:
            if type(v) is str and len(v) <= 20 and re.fullmatch(r"-?(?:0|[1-9][0-9]*)", v):
                v = int(v)
            if type(v) is int and 0 <= v < 2**62:
                out[key] = v
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False) if out else None


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(*[_ANY] * 8), min_size=1, max_size=6))
def test_comm_text_reads_each_value_by_its_own_type(rows):
    """The cache behind comm_text never lets 1 stand for True or 1.0, nor one row for another."""
    for values in rows + rows:
        assert comm_text(values) == _reference(values)
