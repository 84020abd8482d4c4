"""Attention read from what its ops recorded: is_causal, dropout_p, scale and the KV heads (GQA),
for SDPA and its back ends, flash_attn and aiter's FMHA. FLOPs: 2·B·Hq·Sq·Sk·(D + Dv), halved
when causal (full = 2× causal); dropout leaves them as they are and is said; a sliding window
claims no work. Generated records check each op's argument positions; the real traces are read
from their raw events, each kernel's attention arguments taken from the public SDPA call that
encloses its launching op (another op and signature than the loader reads)."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import SHARED_TRACES
from kerneldiff.core.analysis.flops import attention_flops, op_work

BF = "c10::BFloat16"
ROOT = Path(__file__).resolve().parents[1]


def work(op, dims, types, concrete):
    j = lambda x: json.dumps(x, separators=(",", ":"))
    return op_work(op, j(dims), j(types), j(concrete))


def bshd_args(op, b, sq, sk, h, hk, d, dropout="0.", scale="", causal="False", window="-1"):
    """flash_attn / aiter: q, k, v [B, S, H, D], dropout_p, softmax_scale, causal, window_left, right."""
    dims = [[b, sq, h, d], [b, sk, hk, d], [b, sk, hk, d], [], [], [], [], []]
    types = [BF, BF, BF, "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"]
    return work(op, dims, types, ["", "", "", dropout, scale, causal, window, "-1"])


@pytest.mark.parametrize("op", ["aiter::mha_fwd", "aiter::fmha_v3_fwd", "flash_attn::_flash_attn_forward"])
def test_bshd_ops_read_causal_dropout_scale_and_kv_heads(op):
    causal = bshd_args(op, 2, 512, 512, 32, 8, 128, causal="True", scale="0.088")
    full = bshd_args(op, 2, 512, 512, 32, 8, 128, causal="False")
    assert causal is not None and full is not None
    assert causal.get("causal") is True and causal.get("causal_read") is True and full.get("causal") is False
    assert full.flops == 2 * causal.flops == attention_flops(2, 32, 512, 512, 128)
    assert causal.get("kv_heads") == 8 and causal.get("heads") == 32 and causal.get("scale") == pytest.approx(0.088)
    assert full.get("scale") is None                     # not given: the default 1/sqrt(D)
    drop = bshd_args(op, 2, 512, 512, 32, 8, 128, dropout="0.1", causal="True")
    assert drop.get("dropout") == pytest.approx(0.1) and drop.flops == causal.flops
    # a sliding window computes a band: no work claimed
    assert bshd_args(op, 2, 512, 512, 32, 8, 128, window="128") is None
    assert bshd_args(op, 2, 512, 512, 32, 8, 128, window="1000") is not None     # wider than the keys


def test_sdpa_reads_enable_gqa_and_rejects_a_record_that_contradicts_it():
    dims = [[4, 32, 256, 64], [4, 8, 256, 64], [4, 8, 256, 64], [], [], [], [], []]
    types = [BF, BF, BF, "", "Scalar", "Scalar", "Scalar", "Scalar"]
    w = work("aten::scaled_dot_product_attention", dims, types, ["", "", "", "", "0.", "True", "0.125", "True"])
    assert w.get("kv_heads") == 8 and w.get("causal") is True and w.get("scale") == 0.125 and w.get("dropout") == 0.0
    assert work("aten::scaled_dot_product_attention", dims, types, ["", "", "", "", "0.", "True", "0.125", "False"]) is None
    # the back ends' argument positions (PyTorch's signatures)
    cud = work("aten::_cudnn_attention_forward", dims[:3] + [[]] * 10, [BF] * 3 + [""] * 3 + ["Scalar"] * 7,
               ["", "", "", "", "", "", "256", "256", "False", "0.2", "False", "False", "0.125"])
    assert cud.get("dropout") == pytest.approx(0.2) and cud.get("scale") == 0.125 and cud.get("causal") is False
    fl = work("aten::_flash_attention_forward", [[16, 559, 16, 64]] * 3 + [[]] * 12,
              [BF] * 3 + ["", ""] + ["Scalar"] * 6 + [""] * 4,
              ["", "", "", "", "", "559", "559", "0.", "True", "False", "0.125", "", "", "", ""])
    assert fl.get("causal") is True and fl.get("scale") == 0.125 and fl.get("dropout") == 0.0


@settings(max_examples=60, deadline=None)
@given(b=st.integers(1, 8), s=st.integers(2, 4096), hk=st.sampled_from([1, 2, 4, 8]), g=st.integers(1, 8),
       d=st.sampled_from([64, 80, 128]), p=st.floats(0, 0.9), scale=st.floats(0.01, 1.0),
       op=st.sampled_from(["aiter::mha_fwd", "flash_attn::_flash_attn_forward"]))
def test_full_is_twice_causal_and_dropout_or_scale_change_no_flops(b, s, hk, g, d, p, scale, op):
    h = hk * g
    base = bshd_args(op, b, s, s, h, hk, d, causal="True")
    other = bshd_args(op, b, s, s, h, hk, d, dropout=repr(p), scale=repr(scale), causal="True")
    full = bshd_args(op, b, s, s, h, hk, d, dropout=repr(p), causal="False")
    assert base.flops == other.flops and full.flops == 2 * base.flops
    assert other.get("dropout") == pytest.approx(p) and other.get("scale") == pytest.approx(scale)
    assert other.get("kv_heads") == hk and other.get("heads") == h


# --- real traces ----------------------------------------------------------------------------------

# the public SDPA calls and where their arguments sit: (dropout_p, is_causal, scale, q layout)
PUBLIC = {"aten::scaled_dot_product_attention": (4, 5, 6),
          "aten::_scaled_dot_product_cudnn_attention": (5, 6, 8),
          "aten::_scaled_dot_product_flash_attention": (3, 4, 6)}
GPU = ("kernel", "gpu_memcpy", "gpu_memset")


def raw_attention(path) -> dict:
    """(B, Hq, Hkv, Sq, Sk, D) -> {(dropout, scale, is_causal text)}: for each attention kernel, the
    outermost public SDPA call enclosing the op that launched it (same thread), from the raw events."""
    with gzip.open(path, "rt") as f:
        ev = json.load(f)["traceEvents"]
    ops = [e for e in ev if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    by_ext = {int(e["args"]["External id"]): e for e in ops if "External id" in e.get("args", {})}
    calls = {int(e["args"]["correlation"]): e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and "correlation" in e.get("args", {})}
    public = defaultdict(list)
    for e in ops:
        if e["name"] in PUBLIC and "Concrete Inputs" in e.get("args", {}):
            public[e["tid"]].append(e)
    out = defaultdict(set)
    for k in ev:
        if k.get("cat") not in GPU:
            continue
        c = calls.get(int(k.get("args", {}).get("correlation", -1)))
        if c is None:
            continue
        op = by_ext.get(int(c["args"].get("External id", -1)))
        if op is None:
            continue
        t0, t1 = float(op["ts"]), float(op["ts"]) + float(op["dur"])
        outer = [p for p in public[op["tid"]] if float(p["ts"]) <= t0 and float(p["ts"]) + float(p["dur"]) >= t1]
        if not outer:
            continue
        p = min(outer, key=lambda x: float(x["ts"]))
        di, ci, si = PUBLIC[p["name"]]
        q, kk = p["args"]["Input Dims"][0], p["args"]["Input Dims"][1]       # [B, H, S, D]
        conc = p["args"]["Concrete Inputs"]
        out[(q[0], q[1], kk[1], q[2], kk[2], q[3])].add((float(conc[di]), float(conc[si]) if conc[si] else None,
                                                        conc[ci]))
    return out


def _trace(rel: str) -> Path:
    p = (SHARED_TRACES / rel) if not rel.startswith("tests/") else ROOT.parent / rel
    if not p.exists():
        pytest.skip(f"{rel} is absent")
    return p


REAL = [("../shared/traces", "h100_qwen1.5-0.5b_hf.json.gz", "mi300x_qwen1.5-0.5b_hf.json.gz"),
        ("../shared/traces", "h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz"),
        ("tests/data/recorded", "h100small_static_graphs.json.gz", "h100small_static_graphs.json.gz")]


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("where,a,b", REAL)
def test_real_attention_shapes_carry_the_recorded_arguments(where, a, b):
    from kerneldiff.core.session import Session

    pa, pb = (_trace(f"tests/data/recorded/{x}") if where.startswith("tests") else _trace(x) for x in (a, b))
    s = Session([str(pa), str(pb)], use_cache=False)
    s.load_all()
    cmp = s.compare("all")
    for side, path in (("a", pa), ("b", pb)):
        raw = raw_attention(path)
        assert raw, path                                  # the case worth testing exists
        rows = {(r.batch, r.heads, r.kv_heads, r.seq_q, r.seq_k, r.head_dim): r for r in cmp.attention_shapes
                if getattr(r, side).calls}
        for key, args in raw.items():
            assert key in rows, (side, key, sorted(rows))      # GQA: the key's heads, as recorded
            r = rows[key]
            assert len(args) == 1, args                   # one recording of this shape's arguments
            dropout, scale, causal = next(iter(args))
            assert r.causal_read and r.causal == (causal == "True" and key[3] > 1)
            full = 2.0 * key[0] * key[1] * key[3] * key[4] * (2 * key[5])
            assert r.flops == pytest.approx(full / 2 if r.causal else full)
            # both sides of these pairs record the same arguments: the row keeps them
            assert r.dropout == pytest.approx(dropout) and (r.scale == pytest.approx(scale) if scale else r.scale is None)


def test_a_row_says_only_the_arguments_all_its_calls_were_given(tmp_path):
    """Two calls of one shape with different dropout (training and evaluation): one row, whose
    dropout is unknown (None) rather than either call's; the scale they share is kept."""
    from conftest import kineto_doc, write_trace
    from kerneldiff.core.session import Session

    ev, t = [], 1000.0
    for i, p in enumerate(("0.1", "0.")):
        dims = [[2, 16, 512, 64]] * 3 + [[]] * 12
        types = [BF] * 3 + ["", ""] + ["Scalar"] * 6 + [""] * 4
        conc = ["", "", "", "", "", "512", "512", p, "True", "False", "0.125", "", "", "", ""]
        ev += [{"ph": "X", "cat": "cpu_op", "name": "aten::_flash_attention_forward", "pid": 1, "tid": 1, "ts": t,
                "dur": 30.0, "args": {"External id": i + 1, "Input Dims": dims, "Input type": types,
                                      "Concrete Inputs": conc}},
               {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 2,
                "dur": 3.0, "args": {"correlation": i + 1, "External id": i + 1}},
               {"ph": "X", "cat": "kernel", "name": "void flash_fwd_kernel<Flash_fwd_kernel_traits<64>>(Flash_fwd_params)",
                "pid": 0, "tid": 7, "ts": t + 6, "dur": 20.0,
                "args": {"correlation": i + 1, "External id": i + 1, "device": 0, "stream": 7}}]
        t += 100.0
    p = write_trace(tmp_path / "d.json", kineto_doc(ev))
    s = Session([str(p), str(p)], use_cache=False)
    s.load_all()
    (row,) = s.compare("all").attention_shapes
    assert row.a.calls == 2 and row.dropout is None and row.scale == 0.125 and row.causal
