"""A kernel both sides run under one name is compared as the same work only where its launches ran
the same recorded input shapes. Eager Llama runs cuDNN SDPA on 8 KV heads; compiled Llama repeats
the KV heads first and runs the same kernel on 32: read from the raw events (the innermost cpu_op
`aten::_cudnn_attention_forward` each attention kernel's launch sits in, and its `Input Dims`),
the pair says the shapes differ; GEMMs whose out= variant adds an output input are still the same
work; a trace against itself flags nothing; the gate does not weigh such a pair as a kernel change."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import real_trace
from test_ledger_split_real import compared

EAGER, COMPILED = "h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz"


def raw_attention_kv_heads(path) -> set[int]:
    """KV heads (dim 1 of the key input) of every aten::_cudnn_attention_forward call in the raw trace."""
    with gzip.open(path, "rt") as f:
        ev = json.load(f)["traceEvents"]
    return {e["args"]["Input Dims"][1][1] for e in ev
            if e.get("cat") == "cpu_op" and e.get("name") == "aten::_cudnn_attention_forward"}


@pytest.mark.real
@pytest.mark.slow
def test_cudnn_attention_on_different_kv_heads_is_not_the_same_work():
    ka, kb = raw_attention_kv_heads(real_trace(EAGER)), raw_attention_kv_heads(real_trace(COMPILED))
    assert ka == {8} and kb == {32}
    cmp = compared(EAGER, COMPILED)
    att = [s for s in cmp.same_kernels if s.name.startswith("cudnn_generated_fort_native_sdpa")]
    assert att
    for s in att:
        assert s.shapes_differ and ",8," in s.shapes_differ.split("; B ")[0] and ",32," in s.shapes_differ.split("; B ")[1]
    gemm = [s for s in cmp.same_kernels if s.name.startswith("nvjet_")]
    assert gemm and not any(s.shapes_differ for s in gemm)   # mm vs mm.out: the same inputs
    from kerneldiff.core.gate.verdict import changes

    assert not any(c.kind == "kernel" and c.name.startswith("cudnn_generated") for c in changes(cmp))


@pytest.mark.real
@pytest.mark.slow
def test_a_trace_against_itself_flags_no_shape_difference():
    cmp = compared(EAGER, EAGER)
    assert cmp.same_kernels and not any(s.shapes_differ for s in cmp.same_kernels)
