"""record_shapes evidence: every cpu_op keeps its recorded input dims and dtypes (interned,
canonical JSON text), read the same by the compiled scanner and by msgspec."""

from __future__ import annotations

import json

import pytest

from conftest import kineto_doc, real_trace, write_trace
from scan_diff import differences

from kerneldiff.core import Session


def _op(name, ts, dims=None, types=None, ext=1):
    args = {"External id": ext}
    if dims is not None:
        args["Input Dims"] = dims
    if types is not None:
        args["Input type"] = types
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": 5, "pid": 1, "tid": 1, "args": args}


def _raw_trace(tmp_path, spaced: bool):
    events = [_op("aten::embedding", 10, [[32000, 2048], [4, 256]], ["c10::BFloat16", "long int"]),
              _op("aten::mm", 20, [[1024, 2048], [2048, 512]], ["c10::BFloat16", "c10::BFloat16"], ext=2),
              _op("aten::empty", 30, ext=3),
              _op("aten::add", 40, None, ["float"], ext=4),
              {"ph": "X", "cat": "kernel", "name": "k", "ts": 50, "dur": 2, "pid": 0, "tid": 7,
               "args": {"correlation": 1, "External id": 2, "stream": 7, "device": 0}}]
    doc = kineto_doc(events, record_shapes=1)
    path = tmp_path / ("spaced.json" if spaced else "compact.json")
    text = json.dumps(doc, indent=1 if spaced else None, separators=None if spaced else (",", ":"))
    path.write_text(text)
    return path


@pytest.mark.parametrize("spaced", [False, True])
def test_recorded_shapes_are_kept_as_canonical_text(tmp_path, spaced):
    path = _raw_trace(tmp_path, spaced)
    s = Session([path], use_cache=False)
    m = s.load(0)
    c = m.cpu_ops
    got = {m.strings[int(c.name[i])]: (m.strings[int(c.dims[i])] if c.dims[i] >= 0 else None,
                                       m.strings[int(c.types[i])] if c.types[i] >= 0 else None)
           for i in range(len(c))}
    assert got["aten::embedding"] == ("[[32000,2048],[4,256]]", '["c10::BFloat16","long int"]')
    assert got["aten::mm"][0] == "[[1024,2048],[2048,512]]"
    assert got["aten::empty"] == (None, None)
    assert got["aten::add"] == (None, '["float"]')


@pytest.mark.parametrize("spaced", [False, True])
def test_both_readers_keep_the_same_shapes(tmp_path, monkeypatch, spaced):
    import kerneldiff.core.ingest.slices as slices

    monkeypatch.setattr(slices, "SLICE", 4096)
    monkeypatch.setattr(slices, "WINDOW", 512)
    assert differences(_raw_trace(tmp_path, spaced)) == []


@pytest.mark.slow
def test_real_trace_embedding_shapes_tell_prefill_from_decode():
    """The Llama trace's own record: the embedding sees [4, 256] tokens once, then [4, 1]."""
    path = real_trace("h100_llama_eager_sdpa.json.gz")
    m = Session([path], use_cache=False).load(0)
    c = m.cpu_ops
    emb = [i for i in range(len(c)) if m.strings[int(c.name[i])] == "aten::embedding"]
    dims = [json.loads(m.strings[int(c.dims[i])])[1] for i in emb]
    assert dims.count([4, 256]) == 1 and dims.count([4, 1]) == len(emb) - 1 == 47


def test_kernel_launch_configuration_is_kept(tmp_path, monkeypatch):
    """grid, block, registers, shared memory and occupancy of every kernel (CUPTI args), the same
    through both readers; absent (ROCm) reads as -1."""
    import kerneldiff.core.ingest.slices as slices

    k = {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 10, "dur": 3, "pid": 0, "tid": 7,
         "args": {"correlation": 1, "stream": 7, "device": 0, "registers per thread": 90,
                  "shared memory": 49152, "est. achieved occupancy %": 4, "grid": [64, 1, 1],
                  "block": [128, 1, 1]}}
    bare = {"ph": "X", "cat": "kernel", "name": "rocm", "ts": 20, "dur": 3, "pid": 0, "tid": 7,
            "args": {"correlation": 2, "stream": 0, "device": 0, "kind": "Dispatch Kernel"}}   # one device: a file of two is read one device at a time
    path = write_trace(tmp_path / "cfg.json", kineto_doc([k, bare]))
    m = Session([path], use_cache=False).load(0)
    kk = m.kernels
    r = [m.kernel_name(i) for i in range(len(kk))].index("gemm")
    assert (int(kk.regs[r]), int(kk.smem[r]), int(kk.occupancy[r])) == (90, 49152, 4)
    assert (m.strings[int(kk.grid[r])], m.strings[int(kk.block[r])]) == ("[64,1,1]", "[128,1,1]")
    o = 1 - r
    assert (int(kk.regs[o]), int(kk.grid[o]), int(kk.block[o])) == (-1, -1, -1)
    monkeypatch.setattr(slices, "SLICE", 4096)
    monkeypatch.setattr(slices, "WINDOW", 512)
    assert differences(path) == []


def test_real_trace_launch_configuration():
    m = Session([real_trace("a100_control.json.gz")], use_cache=False).load(0)
    kk = m.kernels
    has = kk.grid >= 0
    assert has.mean() > 0.9 and (kk.regs[has] > 0).mean() > 0.9
    assert all(m.strings[int(g)].startswith("[") for g in kk.grid[has][:100])


def test_shapes_and_launch_config_stay_on_the_typed_fast_path():
    """The typed msgspec decoder reads shapes and launch configuration itself: a slice holding
    them must not fall back to the (5x slower) lenient path."""
    import msgspec

    from kerneldiff.core.ingest.decode import _typed

    events = [_op("aten::mm", 1, [[2, 3], [3, 4]], ["float", "float"]),
              {"ph": "X", "cat": "kernel", "name": "k", "ts": 2, "dur": 1,
               "args": {"correlation": 1, "grid": [1, 2, 3], "block": [4, 1, 1], "registers per thread": 8,
                        "shared memory": 0, "est. achieved occupancy %": 50}}]
    got = _typed.decode(msgspec.json.encode(events))
    assert bytes(got[0].args.input_dims) == b"[[2,3],[3,4]]" and bytes(got[1].args.grid) == b"[1,2,3]"
    assert len(got[1].args.input_dims) == 0 and got[1].args.registers == 8
