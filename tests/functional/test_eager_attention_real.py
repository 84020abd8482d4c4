"""Eager attention on real traces: OWLv2 (HF eager, bmm → softmax → bmm inside Owlv2Attention) on
H100 and MI300X. The expected figures are recounted here from the raw events: each kernel joined to
its runtime launch (correlation) and its operator (External id), the launch placed inside the
module calls around it, the FLOPs from the bmm operators' recorded input dims."""

from __future__ import annotations

import bisect
import functools
import gzip
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import real_trace

pytestmark = [pytest.mark.slow, pytest.mark.real]

SHARED = Path(__file__).resolve().parents[3] / "shared"
OWL = ("h100_owlv2_detection.json.gz", "mi300x_owlv2_detection.json.gz")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _kd(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "kerneldiff.cli", *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


@functools.lru_cache(maxsize=None)
def raw(path: str) -> dict:
    """Per GPU activity: duration, kernel name, launching operator (name, input dims), and whether
    its launch falls inside an Owlv2Attention call and inside a Linear call."""
    ev = json.load(gzip.open(path))["traceEvents"]

    def windows(prefix):
        w = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "python_function"
                   and e.get("name", "").startswith("nn.Module: " + prefix))
        return [a for a, _ in w], w

    attn, lin = windows("Owlv2Attention_"), windows("Linear_")

    def inside(w, t):
        i = bisect.bisect_right(w[0], t) - 1
        return i >= 0 and t <= w[1][i][1]

    launch = {int(e["args"]["correlation"]): e["ts"] for e in ev
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    ops = {}
    for e in ev:
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {}):
            ops.setdefault(int(e["args"]["External id"]), []).append(e)
    out = []
    for e in ev:
        if e.get("cat") not in GPU_CATS or e.get("ph") != "X":
            continue
        t = launch.get(int(e["args"].get("correlation", -1)))
        cands = ops.get(int(e["args"].get("External id", -1)), [])
        op = min(cands, key=lambda o: o["dur"]) if cands else None      # the innermost op of that id
        out.append({"dur": e["dur"], "name": e["name"], "cat": e["cat"], "op": op["name"] if op else "",
                    "dims": op["args"].get("Input Dims") if op else None, "ts": e["ts"],
                    "attn": t is not None and inside(attn, t), "linear": t is not None and inside(lin, t)})
    return {"gpu": out}


def _core(r: dict) -> list[dict]:
    """The kernels of eager attention's core: bmm and softmax launched inside Owlv2Attention calls
    and outside their Linear projections."""
    return [g for g in r["gpu"] if g["attn"] and not g["linear"] and g["op"] in ("aten::bmm", "aten::_softmax")]


@pytest.mark.parametrize("name", OWL)
def test_eager_attention_time_is_the_raw_bmm_and_softmax_time(name):
    r = raw(str(real_trace(name)))
    core = _core(r)
    truth_us = sum(g["dur"] for g in core)
    softmax_us = sum(g["dur"] for g in r["gpu"] if "softmax" in g["name"].lower())
    s = json.loads(_kd("info", "--json", str(real_trace(name))))["summary"]
    ops = {o["category"]: o for o in s["operations"]}
    assert ops["Attention"]["total_us"] == pytest.approx(truth_us, rel=1e-9)
    assert ops["Attention"]["count"] == len(core) == 3 * 36 * 5     # QKᵀ, softmax, ·V per layer and pass
    assert ops["Attention"]["total_us"] >= softmax_us > 0
    assert "Softmax" not in ops            # every softmax of the model is attention's
    # the projections stay GEMMs: every GEMM kernel launched from a Linear is still booked Dense GEMM
    linear_us = sum(g["dur"] for g in r["gpu"]
                    if g["linear"] and g["cat"] == "kernel" and g["op"] in ("aten::addmm", "aten::mm"))
    assert ops["Dense GEMM"]["total_us"] >= linear_us > 0


def _flops(dims_qk, dims_pv) -> float:
    (bh, sq, d), (_, _, sk) = dims_qk
    dv = dims_pv[1][2]
    return 2.0 * bh * sq * sk * (d + dv)


def test_eager_attention_shapes_and_flops_from_the_raw_bmm_dims():
    """compare MI300X H100 --table attention-shapes: one row per shape (vision, text), calls =
    attention calls (one per layer and pass), FLOPs per call = 2·BH·Sq·Sk·(D+Dv) of the raw bmm
    dims, TFLOP/s = calls × FLOPs / the raw core time."""
    rows = json.loads(_kd("compare", str(real_trace(OWL[1])), str(real_trace(OWL[0])), "--table", "attention-shapes",
                          "--format", "json"))
    for side, name in (("a", OWL[1]), ("b", OWL[0])):
        core = sorted(_core(raw(str(real_trace(name)))), key=lambda g: g["ts"])
        kernels = core
        bmm = [g for g in kernels if g["op"] == "aten::bmm"]
        pairs = list(zip(bmm[0::2], bmm[1::2]))
        by_shape: dict = {}
        for (qk, pv) in pairs:
            key = (qk["dims"][0][0], qk["dims"][0][1], qk["dims"][1][2], qk["dims"][0][2])   # BH, Sq, Sk, D
            f = by_shape.setdefault(key, [0, _flops(qk["dims"], pv["dims"])])
            f[0] += 1
        # time per shape: the core kernels between a QKᵀ bmm and its ·V bmm (inclusive)
        time = {key: 0.0 for key in by_shape}
        order = kernels
        i = 0
        while i < len(order):
            qk = order[i]
            key = (qk["dims"][0][0], qk["dims"][0][1], qk["dims"][1][2], qk["dims"][0][2])
            j = i + 1
            while order[j]["op"] != "aten::bmm":
                j += 1
            time[key] += sum(g["dur"] for g in order[i:j + 1])
            i = j + 1
        assert len(rows) == len(by_shape) == 2
        for x in rows:
            key = (x["batch_heads"], x["seq_q"], x["seq_k"], x["head_dim"])
            calls, flops = by_shape[key]
            assert x[f"{side}_calls"] == calls
            assert x["flops_per_call"] == pytest.approx(flops, rel=1e-12)
            assert not x["causal_assumed"]
            assert x[f"{side}_total_us"] == pytest.approx(time[key], rel=1e-9)
            assert x[f"{side}_tflops"] == pytest.approx(calls * flops / (time[key] * 1e-6) / 1e12, rel=1e-3, abs=1e-4)
            assert math.isfinite(x[f"{side}_pct_peak"]) and 0 < x[f"{side}_pct_peak"] < 100


def test_without_stacks_the_operator_pattern_gives_the_same_attention(tmp_path):
    """The same trace recorded without with_stack: aten::bmm → softmax → aten::bmm tells the same
    kernels (the module calls are gone)."""
    strip = SHARED / "tools" / "strip_recording.py"
    if not strip.exists():
        pytest.skip("../shared/tools/strip_recording.py is absent")
    src = real_trace(OWL[0])
    out = tmp_path / "nostack.json.gz"
    subprocess.run([sys.executable, str(strip), str(src), str(out), "--drop", "stacks"], check=True,
                   capture_output=True, timeout=600)
    s = json.loads(_kd("info", "--json", str(out)))["summary"]
    ops = {o["category"]: o for o in s["operations"]}
    core = _core(raw(str(src)))
    assert ops["Attention"]["count"] == len(core)
    assert ops["Attention"]["total_us"] == pytest.approx(sum(g["dur"] for g in core), rel=1e-9)
