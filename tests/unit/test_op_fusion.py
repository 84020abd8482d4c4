"""Op-level fusions (core/compare/op_fusion.py): the operations behind each kernel, N:1 groups inside
aligned layers, savings that never exceed what was measured.

Ground truth: the synthetic generator plants eager one-op kernels (`Plant.unfused_ops`: HF's
RMSNorm, silu then mul, rotate_half rotary) and decomposed attention on one side against vLLM's
fused kernels on the other; every planted fusion must be found on the right side and nothing else.
The shared real pair eager vs torch.compile must show the RMSNorm, SiLU·mul and rotary fusions."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kerneldiff.core.analysis.classify import Classifier
from kerneldiff.core.compare.engine import compare
from kerneldiff.core.compare.op_fusion import _kernel_ops, expand, op_atoms
from kerneldiff.core.orchestration import load
from kerneldiff.core.synth.pair import SynthConfig, write_trace
from kerneldiff.core.synth.trace import Plant
from conftest import real_trace

CLF = Classifier.load()
EXPECTED = {"norm": "RMSNorm", "act": "Activation", "rope": "RoPE", "attention": "Attention"}
MODULES = {"RMSNorm": "RMSNorm", "Activation": "LlamaMLP", "RoPE": "LlamaAttention", "Attention": "LlamaAttention"}
VENDOR = {"h100": "nvidia", "b200": "nvidia", "mi300x": "amd", "mi355x": "amd"}


# --- the operations behind a kernel ---------------------------------------------------------------

def test_operator_atoms():
    assert op_atoms("aten::add_") == {"add"}
    assert op_atoms("aten::_to_copy") == op_atoms("aten::copy_") == {"copy"}
    assert op_atoms("aten::view") == frozenset()
    assert op_atoms("aten::_scaled_dot_product_cudnn_attention") == {"attention"}
    assert op_atoms("aten::_flash_attention_forward") == {"attention"}
    assert op_atoms("aten::bmm") == {"bmm"} and op_atoms("aten::addmm") == {"mm"}
    assert op_atoms("_C::fused_add_rms_norm") == {"add", "rms_norm"}
    assert op_atoms("_C::silu_and_mul") == {"silu", "mul"}
    assert op_atoms("_C::fused_add_rms_norm_static_fp8_quant") == {"add", "rms_norm", "quant"}
    assert op_atoms("aiter::rmsnorm2d_fwd_with_add") == {"rms_norm", "add"}
    assert op_atoms("_C::rotary_embedding") == {"rope"}
    assert op_atoms("vllm::unified_attention_with_output") == {"attention"}
    assert op_atoms("Torch-Compiled Region: 0/2") == frozenset()
    assert {"pow", "mean", "add", "rsqrt", "mul", "copy"} <= expand({"rms_norm"})
    assert {"bmm", "softmax", "mul", "add"} <= expand({"attention"})


def test_kernel_ops_eager_inductor_and_vendor():
    eager = _kernel_ops("void at::native::vectorized_elementwise_kernel<4, pow_tensor_scalar>", "aten::pow",
                        "Elementwise", CLF)
    assert eager.ops == ("aten::pow",) and eager.atoms == {"pow"} and not eager.inductor
    ind = _kernel_ops("triton_red_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_14",
                      "triton_red_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_14", "RMSNorm", CLF)
    assert ind.inductor == "red" and ind.ops == ("_to_copy", "_unsafe_view", "add", "mean", "mul", "pow", "rsqrt")
    assert ind.atoms == {"copy", "add", "mean", "mul", "pow", "rsqrt"}   # views dropped, _to_copy is a copy
    # a pointwise kernel lists the attention that consumes its output; it does not compute it
    poi = _kernel_ops("triton_poi_fused__scaled_dot_product_cudnn_attention__to_copy_add_cat_cos_mul_neg_sin_5", "",
                      "RoPE", CLF)
    assert "attention" not in poi.atoms and {"cat", "cos", "neg", "sin"} <= poi.atoms
    vendor = _kernel_ops("_ZN5aiter32fused_rmsnorm_gemm_a16w16_kernelI", "vllm::fused_rms_norm_gemm", "RMSNorm+GEMM",
                         CLF)
    assert vendor.components == ("RMSNorm", "Dense GEMM") and {"rms_norm", "mm"} <= vendor.atoms
    moe = _kernel_ops("bmm_E4m3_swiglu", "vllm::moe_forward", "MoE GEMM+SwiGLU", CLF)
    assert {"moe", "moe_gemm", "silu"} <= moe.atoms


# --- planted ground truth ---------------------------------------------------------------------------

def _pair(tmp_path, gpu_a: str, gpu_b: str, ops: tuple[str, ...], attention: bool, swap: bool = False,
          layers: int = 4, steps: int = 4, seed: int = 0):
    """Side "eager" runs `ops` unfused (and decomposed attention); the other vLLM's fused kernels."""
    eager = SynthConfig(vendor=VENDOR[gpu_a], gpu=gpu_a, layers=layers, steps=steps, seed=seed, salt=1,
                        plant=Plant(unfused_ops=ops), attention="decomposed" if attention else "fused")
    fused = SynthConfig(vendor=VENDOR[gpu_b], gpu=gpu_b, layers=layers, steps=steps, seed=seed, salt=2)
    pa, pb = tmp_path / "eager.json.gz", tmp_path / "fused.json.gz"
    write_trace(pa, eager)
    write_trace(pb, fused)
    a, b = load(pa, classifier=CLF, use_cache=False), load(pb, classifier=CLF, use_cache=False)
    return (b, a) if swap else (a, b)


def _check_bounds(c) -> None:
    """Savings never exceed what was measured; one side's findings never add up to more than its time."""
    side_time = {"a": c.a.gpu_time_us, "b": c.b.gpu_time_us}
    est_sum = {"a": 0.0, "b": 0.0}
    op_cost = {"a": 0.0, "b": 0.0}
    for f in c.fusions:
        s = f.estimated_saving
        assert s is not None and 0 <= s.total_all_us <= f.component_cost_us + 1e-6, f.evidence
        assert 0 <= s.total_us <= f.component_cost_us / max(f.occurrences, 1) + 1e-6
        assert f.measured_saving_us <= f.component_cost_us + 1e-6
        assert f.component_cost_us <= side_time[f.component_side] + 1e-6
        est_sum[f.component_side] += s.total_all_us
        if f.fused_group:
            op_cost[f.component_side] += f.component_cost_us
    for s in "ab":
        assert est_sum[s] <= side_time[s] + 1e-6
        assert op_cost[s] <= side_time[s] + 1e-6
    # every group's pairs carry its id, each aligned position is in at most one group
    for al in c.alignments:
        seen: set[int] = set()
        for g in al.groups:
            assert not seen & set(g.positions)
            seen |= set(g.positions)
            assert 0 <= g.finding < len(c.fusions)
            assert all(p.group == g.id for p in al.pairs if p.position in g.positions)


@pytest.mark.parametrize("gpu_a,gpu_b,swap", [("h100", "mi300x", False), ("mi300x", "b200", True),
                                              ("b200", "h100", False)])
def test_planted_op_fusions_found_and_nothing_else(tmp_path, gpu_a, gpu_b, swap):
    a, b = _pair(tmp_path, gpu_a, gpu_b, ("norm", "act", "rope", "attn"), attention=True, swap=swap)
    fused_side = "a" if swap else "b"
    for phase in ("all", "prefill", "decode"):
        c = compare(a, b, phase=phase, classifier=CLF)
        got = {(f.kind, f.fused_side, f.fused_category) for f in c.fusions}
        assert got == {("op_fusion", fused_side, cat) for cat in EXPECTED.values()}, (phase, got)
        for f in c.fusions:
            assert f.module == MODULES[f.fused_category]
            assert f.component_side != fused_side and f.occurrences_per_pass == 4 * (2 if f.fused_category == "RMSNorm"
                                                                                        else 1)
            assert len(f.fused_group) < len(f.component_group) == len(f.component_ops)
            assert f.fused_ops and all(g.ops for g in f.fused_group)
        by = {f.fused_category: f for f in c.fusions}
        # HF's RMSNorm: eight eager kernels for one fused_add_rms_norm, nine with the residual add
        # before it in the layer (the post-attention norm); the add that ends the layer runs in the
        # decoder layer, not in the norm, and stays out of the group of the next layer's input norm
        norm = [o.split("::")[-1] for o in by["RMSNorm"].component_ops]
        assert norm[-8:] == ["copy_", "pow", "mean", "add", "rsqrt", "mul", "copy_", "mul"] and norm[:-8] in ([], ["add"])
        assert set(by["RMSNorm"].fused_ops) == {"_C::rms_norm", "_C::fused_add_rms_norm"}   # layer 0 has no add
        assert [o.split("::")[-1] for o in by["Activation"].component_ops] == ["silu", "mul"]
        assert [o.split("::")[-1] for o in by["RoPE"].component_ops] == ["mul", "neg", "cat", "mul", "add"] * 2
        # HF eager attention: Q.K^T, * scaling, + mask, softmax, cast back, P.V against one kernel (or two)
        assert [o.split("::")[-1] for o in by["Attention"].component_ops] == ["bmm", "mul", "add", "_softmax",
                                                                               "copy_", "bmm"]
        assert all(g.category.startswith("Attention") for g in by["Attention"].fused_group)
        _check_bounds(c)


def test_one_planted_op_is_one_finding(tmp_path):
    a, b = _pair(tmp_path, "h100", "b200", ("act",), attention=False)
    c = compare(a, b, classifier=CLF)
    # one finding per phase: the 3 decode passes (each layer's most common sequence) and the prefill
    # pass, which runs another sequence and is aligned on its own
    assert [(f.kind, f.fused_side, f.fused_category, f.phase) for f in c.fusions] == \
        [("op_fusion", "b", "Activation", "decode"), ("op_fusion", "b", "Activation", "prefill")]
    assert sum(f.passes for f in c.fusions) == len(a.steps) == 4
    assert c.fusions[1].occurrences == 4 and c.fusions[1].layers == [0, 1, 2, 3]
    f = c.fusions[0]
    assert f.passes == 3 and f.occurrences == 4 * 3 and f.layers == [0, 1, 2, 3]
    # measured: component time minus fused time, per pass x passes, from the aligned pairs
    comp = sum(p.a.total_us for al in c.alignments for p in al.pairs
               if p.group >= 0 and p.position in al.groups[p.group].component_positions)
    fused = sum(p.b.total_us for al in c.alignments for p in al.pairs
                if p.group >= 0 and p.position in al.groups[p.group].fused_positions)
    assert f.component_cost_us == pytest.approx(comp) and f.fused_cost_us == pytest.approx(fused)
    assert f.measured_saving_us == pytest.approx(comp - fused)
    # the pair table holds the group as one: both kernels of A and the one of B carry its id
    al = c.alignments[0]
    g = al.groups[0]
    assert len(g.component_positions) == 2 and len(g.fused_positions) == 1 and g.finding == 0
    assert sorted(p.position for p in al.pairs if p.group == g.id) == g.positions


@pytest.mark.parametrize("kw", [dict(seed=1), dict(seed=2, moe=True, graph=True, tp=2),
                                dict(seed=3, vendor_a="nvidia", vendor_b="amd", prefill_steps=2)])
def test_planted_pairs_savings_bounded(tmp_path, kw):
    """The generator's category-level plants (fused RMSNorm+GEMM, norm+quant, KV writes, an extra add):
    whatever finds them, no saving exceeds what was measured."""
    from kerneldiff.core.synth.pair import write_pair

    pa, pb, _ = write_pair(tmp_path, layers=4, steps=4, **kw)
    a, b = load(pa, classifier=CLF, use_cache=False), load(pb, classifier=CLF, use_cache=False)
    for phase in ("all", "decode"):
        _check_bounds(compare(a, b, phase=phase, classifier=CLF))
        _check_bounds(compare(b, a, phase=phase, classifier=CLF))


def test_plain_pairs_have_no_op_fusions(tmp_path):
    a, b = _pair(tmp_path, "h100", "mi300x", (), attention=False)
    c = compare(a, b, classifier=CLF)
    assert c.fusions == []
    assert compare(a, a, classifier=CLF).fusions == []


def test_json_keys(tmp_path):
    a, b = _pair(tmp_path, "h100", "mi300x", ("norm",), attention=False)
    d = json.loads(json.dumps(compare(a, b, classifier=CLF).to_dict()))
    f = d["fusions"][0]
    for key in ("kind", "fused_side", "fused_kernels", "component_kernels", "component_categories",
                "component_cost_us", "fused_cost_us", "fused_ops", "component_ops", "module", "measured_saving_us"):
        assert key in f
    assert "total_all_us" in f["estimated_saving"] and "capped" in f["estimated_saving"]
    assert d["alignments"][0]["groups"][0]["positions"]
    assert any(p["group"] >= 0 for p in d["alignments"][0]["pairs"])


SETTINGS = settings(max_examples=12, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.mark.slow
@SETTINGS
@given(ops=st.sets(st.sampled_from(["norm", "act", "rope", "attn"])), attention=st.booleans(),
       gpus=st.sampled_from([("h100", "mi300x"), ("mi355x", "h100"), ("b200", "mi300x"), ("h100", "b200")]),
       swap=st.booleans(), seed=st.integers(0, 5))
def test_property_planted_found_savings_bounded(tmp_path_factory, ops, attention, gpus, swap, seed):
    tmp = tmp_path_factory.mktemp("opf")
    a, b = _pair(tmp, gpus[0], gpus[1], tuple(sorted(ops)), attention, swap=swap, layers=3, steps=3, seed=seed)
    c = compare(a, b, classifier=CLF)
    fused_side = "a" if swap else "b"
    want = {EXPECTED[o] for o in ops if o != "attn"} | ({"Attention"} if attention else set())
    assert {(f.kind, f.fused_side, f.fused_category) for f in c.fusions} == {
        ("op_fusion", fused_side, cat) for cat in want}
    _check_bounds(c)


# --- the shared real traces ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def eager_vs_compiled():
    a = load(real_trace("h100_llama_eager_sdpa.json.gz"), classifier=CLF)
    b = load(real_trace("h100_llama_compiled.json.gz"), classifier=CLF)
    return a, b


@pytest.mark.slow
def test_real_eager_vs_compiled_names_the_fusions(eager_vs_compiled):
    a, b = eager_vs_compiled
    c = compare(a, b, classifier=CLF)
    by = {f.fused_category: f for f in c.fusions if f.kind == "op_fusion"}
    assert set(by) == {"RMSNorm", "Activation", "RoPE"}
    assert all(f.fused_side == "b" for f in by.values())
    norm, act, rope = by["RMSNorm"], by["Activation"], by["RoPE"]
    assert norm.module == "LlamaRMSNorm" and act.module == "LlamaMLP" and rope.module == "LlamaAttention"
    assert all(k.startswith("triton_red_fused_") and k.rstrip("0123456789").endswith("rsqrt_")
               for k in norm.fused_kernels)
    assert {"pow", "mean", "rsqrt"} <= {o.split("::")[-1] for o in norm.component_ops}
    assert act.fused_kernels[0].startswith("triton_poi_fused_") and "mul_silu" in act.fused_kernels[0]
    assert [o.split("::")[-1] for o in act.component_ops] == ["silu", "mul"]
    assert any("cat_cos_mul_neg_sin" in k for k in rope.fused_kernels)
    assert {"neg", "cat", "mul", "add"} <= {o.split("::")[-1] for o in rope.component_ops}
    assert norm.occurrences_per_pass == 32 and act.occurrences_per_pass == 16 and rope.occurrences_per_pass == 16
    # the category-level detectors no longer report what the operations explain
    assert not [f for f in c.fusions if f.kind in ("count_imbalance", "missing_kernel")]
    assert all(f.measured_saving_us > 0 for f in by.values())
    _check_bounds(c)


@pytest.mark.slow
def test_real_same_software_pairs_have_no_op_fusions():
    a = load(real_trace("h100_llama_eager_sdpa.json.gz"), classifier=CLF)
    b = load(real_trace("h200_llama_eager_sdpa.json.gz"), classifier=CLF)
    assert compare(a, b, classifier=CLF).fusions == []
    q1 = load(real_trace("mi300x_qwen1.5-0.5b_hf.json.gz"), classifier=CLF)
    q2 = load(real_trace("h100_qwen1.5-0.5b_hf.json.gz"), classifier=CLF)
    assert not [f for f in compare(q1, q2, classifier=CLF).fusions if f.kind == "op_fusion"]


@pytest.mark.slow
def test_real_pair_swapped_is_the_mirror(eager_vs_compiled):
    a, b = eager_vs_compiled
    ab, ba = compare(a, b, classifier=CLF), compare(b, a, classifier=CLF)
    def key(c, flip: bool) -> dict:
        return {(f.kind, ("a" if f.fused_side == "b" else "b") if flip else f.fused_side, f.fused_category):
                f.measured_saving_us for f in c.fusions}

    ka, kb = key(ab, False), key(ba, True)
    assert ka.keys() == kb.keys()
    # the alignment pairs one of two identical `cat`s 1:1 (which one, the order of the sides decides)
    assert all(kb[k] == pytest.approx(v, rel=0.05) for k, v in ka.items())
    n = lambda c: sorted(len(f.component_group) for f in c.fusions)   # noqa: E731
    assert n(ab) == n(ba)


# --- what the reports and the explorer show ------------------------------------------------------------

def test_report_tables_and_text(tmp_path):
    from rich.console import Console

    from kerneldiff.cli.text_report import render_text
    from kerneldiff.core.report.tables import table

    a, b = _pair(tmp_path, "h100", "mi300x", ("norm", "act"), attention=False)
    c = compare(a, b, classifier=CLF)
    head, rows = table(c, "fusions")
    for col in ("module", "fused_ops", "component_ops", "measured_saving_us", "evidence"):
        assert col in head
    assert head[-1] == "evidence"
    row = dict(zip(head, rows[0]))
    assert row["kind"] == "op_fusion" and row["module"] and "aten::" in row["component_ops"]
    head, rows = table(c, "pairs")
    grouped = [dict(zip(head, r)) for r in rows if r[head.index("fusion_group")] != ""]
    assert grouped and all(r["fusion_group_finding"] in (0, 1) for r in grouped)   # 0-based: indices into fusions
    con = Console(width=120, record=True)
    render_text(c, con)
    text = con.export_text()
    assert "measured" in text and "aten::pow" in text and "aten::silu" in text and "_C::silu_and_mul" in text


def test_kernel_detail_operations():
    from kerneldiff.core.session import KernelRef, Session

    s = Session([str(real_trace("h100_llama_compiled.json.gz"))])
    s.load_all()
    m = s.models[0]
    names = [m.kernel_name(r) for r in range(len(m.kernels))]
    row = next(r for r, n in enumerate(names) if n.startswith("triton_red_fused_") and "rsqrt" in n)
    assert {"mean", "pow", "rsqrt"} <= set(s.kernel_detail(KernelRef(0, row)).ops)
