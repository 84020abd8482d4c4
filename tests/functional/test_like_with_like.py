"""Like with like: traces with different numbers of passes compare an average pass, and say so;
the sources of every reading travel with the comparison."""

from __future__ import annotations

import pytest

from conftest import real_trace

from kerneldiff.core import Session


@pytest.fixture(scope="module")
def llama_vs_b200():
    s = Session([real_trace("h100_llama_eager_sdpa.json.gz"), real_trace("b200_vllm_eager.json.gz")],
                use_cache=False)
    s.load_all()
    return s


@pytest.mark.slow
def test_different_pass_counts_compare_per_pass(llama_vs_b200):
    c = llama_vs_b200.compare("all")
    assert (c.a.passes, c.b.passes) == (48, 1) and c.basis == "per_pass"
    assert c.ratio == pytest.approx((c.a.gpu_time_us / 48) / c.b.gpu_time_us)
    assert c.gap_us == pytest.approx(c.a.gpu_time_us / 48 - c.b.gpu_time_us)
    op = next(o for o in c.operations if o.only_in is None)
    assert op.gap_us == pytest.approx(op.a.total_us / 48 - op.b.total_us)
    assert any("per pass" in w and "48" in w for w in c.warnings)


@pytest.mark.slow
def test_prefill_against_prefill(llama_vs_b200):
    c = llama_vs_b200.compare("prefill")
    assert (c.a.passes, c.b.passes) == (1, 1) and c.basis == "total"
    assert c.ratio == pytest.approx(c.a.gpu_time_us / c.b.gpu_time_us)


@pytest.mark.slow
def test_sources_are_reported(llama_vs_b200):
    c = llama_vs_b200.compare("all")
    assert "module" in c.a.pass_source and "embedding" in c.a.phase_source
    assert "LlamaDecoderLayer" in c.a.layer_source
    assert "vllm" in c.b.pass_source and c.b.phase_source == "annotations"
    d = c.to_dict()
    assert d["basis"] == "per_pass" and d["a"]["passes"] == 48
