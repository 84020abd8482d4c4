"""Categories from the launching operator as well as the kernel name, and Inductor kernels by
their kind and the ops their names list (registry [[op_rules]] / [[inductor_rules]])."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SHARED_TRACES, kineto_doc, real_trace, write_trace

from kerneldiff.core.analysis.classify import Classifier, inductor_ops, op_reason
from kerneldiff.core.analysis.inductor_names import KNOWN_OPS, parse_inductor
from kerneldiff.core.analysis.registry import OTHER
from kerneldiff.core.errors import TraceError
from kerneldiff.core.orchestration import load

LEAN = "void cudnn::fusion::lean_reduction_kernel<float, 128, 4>(cudnn::fusion::LeanReductionParams)"
CUDNN_SDPA = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"
FLASH = "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4> >(pytorch_flash::Flash_fwd_params)"
CIJK = "Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1"
XMMA = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
NVJET = "nvjet_tst_64x8_64x16_2x1_v_bz_TNT"
COPY = ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)"
        "::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}>(int)")
MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, "
       "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int)")
SDPA_POI = ("triton_poi_fused__scaled_dot_product_cudnn_attention__to_copy__unsafe_view_add_arange_bitwise_and_cat_"
            "clone_cos_expand_index_le_mul_neg_new_ones_scalar_tensor_sin_slice_transpose_unsqueeze_view_where_6")
RMS_RED = "triton_red_fused__to_copy__unsafe_view_add_mean_mul_pow_rsqrt_14"
SILU_POI = "triton_poi_fused__unsafe_view_mul_silu_9"
MM_TEM = "triton_tem_fused_mm_0"
KV_CAT = "triton_poi_fused__unsafe_view_cat_transpose_view_4"


# --- hand-built traces --------------------------------------------------------------------------

def _events(launches):
    """One cpu_op -> runtime launch -> GPU activity per (kernel name, op name or None, cat)."""
    ev, t = [], 0.0
    for corr, (name, op, cat) in enumerate(launches, 1):
        ext = 1000 + corr
        if op is not None:
            ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t, "dur": 20.0,
                       "args": {"External id": ext}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t + 2, "dur": 5.0, "args": {"correlation": corr, "External id": ext}})
        args = {"correlation": corr, "device": 0, "stream": 7}
        if op is not None:
            args["External id"] = ext
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": t + 50, "dur": 10.0, "args": args})
        t += 100
    return ev


CASES = [
    # (kernel, launching op, activity cat, expected category, decided by)
    (LEAN, "aten::_cudnn_attention_forward", "kernel", "Attention", "aten.attention"),   # op beats generic cudnn -> Conv
    (LEAN, None, "kernel", "Conv", "conv.cudnn"),                                           # no op: the name's guess
    (CUDNN_SDPA, "aten::_cudnn_attention_forward", "kernel", "Attention", "attn.generic"),  # agreeing: name stays the reason
    ("Memset (Device)", "aten::_cudnn_attention_forward", "gpu_memset", "Copy/Memory", "mem.copy"),
    (CIJK, "aten::miopen_convolution", "kernel", "Conv", "aten.conv"),                      # MIOpen conv run as a GEMM
    (CIJK, "aten::mm", "kernel", "Dense GEMM", "gemm.amd"),
    (XMMA, "aten::cudnn_convolution", "kernel", "Conv", "aten.conv"),                       # cuDNN conv run as a GEMM
    (XMMA, "aten::convolution_backward", "kernel", "Conv", "aten.conv"),
    (FLASH, "aten::mm", "kernel", "Attention", "attn.generic"),                             # a specific name always wins
    ("my_unnamed_kernel_v2", "aten::addmm", "kernel", "Dense GEMM", "aten.gemm"),
    ("my_unnamed_kernel_v2", "_C::fused_add_rms_norm", "kernel", "RMSNorm", "custom.rmsnorm"),
    ("my_unnamed_kernel_v2", None, "kernel", OTHER, ""),
    ("my_unnamed_kernel_v2", "aten::add", "kernel", OTHER, ""),                             # no op rule for aten::add
    (NVJET, "vllm::moe_forward", "kernel", "MoE GEMM", "custom.moe"),                       # a plain GEMM inside an MoE op
    (COPY, "vllm::unified_attention_with_output", "kernel", "Copy/Memory", "mem.copy"),     # copies stay copies
    (MUL, "aten::_scaled_dot_product_efficient_attention", "kernel", "Elementwise", "elementwise.generic"),
    (COPY, "_C_cache_ops::reshape_and_cache_flash", "kernel", "KV Cache", "custom.kv_cache"),  # ... but a cache op's are KV Cache
    ("triton_kernel_xyz", "vllm::unified_attention_with_output", "kernel", "Attention", "custom.attention"),
    # Inductor kernels: their op list decides, whatever cpu_op Inductor records for them
    (SDPA_POI, SDPA_POI, "kernel", "RoPE", "inductor.rope"),
    (RMS_RED, RMS_RED, "kernel", "RMSNorm", "inductor.rmsnorm"),
    (SILU_POI, SILU_POI, "kernel", "Activation", "inductor.activation"),
    (MM_TEM, "aten::_cudnn_attention_forward", "kernel", "Dense GEMM", "inductor.gemm_template"),
    (KV_CAT, KV_CAT, "kernel", "Copy/Memory", "inductor.copy"),
]


@pytest.fixture(scope="module")
def hand_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("cats") / "ops.json"
    write_trace(path, kineto_doc(_events([(k, op, cat) for k, op, cat, _, _ in CASES])))
    return load(path, use_cache=False, workers=0)


def test_hand_built_trace_categories_and_reasons(hand_model):
    m = hand_model
    assert len(m.kernels) == len(CASES)
    got = [(m.kernel_name(i), m.cpu_op_name(i), m.category(i), m.rule(i)) for i in range(len(m.kernels))]
    wrong = []
    for (name, op, _, cat, rule), (gname, gop, gcat, grule) in zip(CASES, got):
        assert gname == name and gop == op
        want_rule = op_reason(rule, op) if rule and "." in rule and rule.split(".")[0] in ("aten", "custom") else rule
        if (gcat, grule) != (cat, want_rule):
            wrong.append((name[:40], op, (gcat, grule), (cat, want_rule)))
    assert not wrong, wrong


def test_reason_names_the_operator(hand_model):
    m = hand_model
    row = next(i for i in range(len(m.kernels)) if m.kernel_name(i) == LEAN and m.cpu_op_name(i))
    assert m.rule(row) == "aten.attention (launched by aten::_cudnn_attention_forward)"


def test_same_name_two_categories_by_operator(hand_model):
    m = hand_model
    cats = defaultdict(set)
    for i in range(len(m.kernels)):
        cats[m.kernel_name(i)].add(m.category(i))
    assert cats[CIJK] == {"Conv", "Dense GEMM"}
    assert cats[LEAN] == {"Attention", "Conv"}


def test_without_operators_only_names_decide(tmp_path):
    path = write_trace(tmp_path / "bare.json", kineto_doc(_events([(LEAN, None, "kernel"), (CIJK, None, "kernel"),
                                                                   (SDPA_POI, None, "kernel")])))
    m = load(path, use_cache=False, workers=0)
    assert [m.category(i) for i in range(3)] == ["Conv", "Dense GEMM", "RoPE"]


# --- classifier API -----------------------------------------------------------------------------

def test_decide_precedence(classifier):
    clf = classifier
    assert clf.decide("Conv", "conv.cudnn", "aten::_cudnn_attention_backward") == \
        ("Attention", op_reason("aten.attention", "aten::_cudnn_attention_backward"))
    assert clf.decide("Attention", "attn.generic", "aten::mm") is None            # specific name wins
    assert clf.decide("Dense GEMM", "gemm.nvidia", "aten::mm") is None             # agreement changes nothing
    assert clf.decide("Copy/Memory", "mem.copy", "aten::_flash_attention_forward") is None
    assert clf.decide(OTHER, "", "no_such::op") is None
    assert clf.is_generic("") and clf.is_generic("gemm.amd") and not clf.is_generic("attn.generic")


def test_op_rule_examples(classifier):
    checked = 0
    for rule in classifier.op_rules:
        for op in rule.examples:
            assert classifier.op_rule(op) is rule, (op, classifier.op_rule(op))
            checked += 1
    assert checked >= 40


def test_inductor_rule_examples(classifier):
    checked = 0
    for rule in classifier.inductor_rules:
        for name in rule.examples:
            assert classifier.classify(name) == (rule.category, rule.id), name
            checked += 1
    assert checked >= 20


def test_op_rules_match_whole_names(classifier):
    assert classifier.op_rule("aten::mm").id == "aten.gemm"
    assert classifier.op_rule("aten::mm_backward_hook") is None
    assert classifier.op_rule("aten::convolution_backward").id == "aten.conv"
    assert classifier.op_rule("vllm::all_reduce").id == "custom.all_reduce"
    assert classifier.op_rule("vllm::unified_attention_with_output").id == "custom.attention"
    assert classifier.op_rule("aten::_to_copy") is None
    assert classifier.op_rule("record_param_comms") is None


# --- Inductor names -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, kind, ops", [
    (SDPA_POI, "poi", ("_scaled_dot_product_cudnn_attention", "_to_copy", "_unsafe_view", "add", "arange",
                       "bitwise_and", "cat", "clone", "cos", "expand", "index", "le", "mul", "neg", "new_ones",
                       "scalar_tensor", "sin", "slice", "transpose", "unsqueeze", "view", "where")),
    (RMS_RED, "red", ("_to_copy", "_unsafe_view", "add", "mean", "mul", "pow", "rsqrt")),
    ("triton_poi_fused_mul_silu_3", "poi", ("mul", "silu")),
    (MM_TEM, "tem", ("mm",)),
    ("triton_poi_fused_constant_pad_nd_moe_forward_0", "poi", ("constant_pad_nd", "moe_forward")),
    ("triton_poi_fused_add_bitwise_and_bitwise_not_bitwise_or_ge_lt_mul_sub_0", "poi",
     ("add", "bitwise_and", "bitwise_not", "bitwise_or", "ge", "lt", "mul", "sub")),
    ("triton_per_fused__log_softmax__to_copy_2", "per", ("_log_softmax", "_to_copy")),
    ("triton_red_fused_native_layer_norm_native_layer_norm_backward_7", "red",
     ("native_layer_norm", "native_layer_norm_backward")),
    ("triton_poi_fused_0", "poi", ()),
    ("triton_for_fused_1", "for", ()),
    ("triton_poi_fused_add_", "poi", ("add_",)),        # no kernel number; an in-place name
])
def test_parse_inductor(name, kind, ops):
    k = parse_inductor(name)
    assert k is not None and k.kind == kind and k.ops == ops
    assert inductor_ops(name) == ops


@pytest.mark.parametrize("name", ["triton_matmul_kernel", "attn_fwd", "_fwd_kernel", "triton_poi",
                                  "void triton_poi_fused_add_0", NVJET])
def test_not_inductor(name):
    assert parse_inductor(name) is None and inductor_ops(name) == ()


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.sets(st.sampled_from(sorted(KNOWN_OPS)), min_size=1, max_size=10),
       st.sampled_from(("poi", "red", "per", "tem")), st.integers(0, 99))
def test_parse_inverts_inductor_naming(ops, kind, n):
    """Inductor joins the sorted op set with "_"; the parse reads back a sorted op list that joins
    to the same text, made of known ops (exactly the set unless the text itself is ambiguous)."""
    ordered = sorted(ops)
    body = "_".join(ordered)
    k = parse_inductor(f"triton_{kind}_fused_{body}_{n}")
    assert k is not None and k.kind == kind and k.index == n
    assert "_".join(k.ops) == body
    assert list(k.ops) == sorted(set(k.ops))
    assert set(k.ops) <= KNOWN_OPS
    if not any("_".join(ordered[i:j]) in KNOWN_OPS for i in range(len(ordered))
               for j in range(i + 2, len(ordered) + 1)):
        assert list(k.ops) == ordered


def test_never_by_one_word(classifier):
    # every Inductor kind listing an attention op, but doing other work: not Attention
    assert classifier.classify(SDPA_POI)[0] == "RoPE"
    assert classifier.classify("triton_poi_fused__scaled_dot_product_efficient_attention__to_copy_cat_clone_3")[0] \
        == "Copy/Memory"
    assert classifier.classify("triton_red_fused__scaled_dot_product_flash_attention_amax_exp_sum_1")[0] \
        == "Triton Fused"
    # a word of a kernel-name rule inside an Inductor name decides nothing ("silu", "copy", "rsqrt")
    assert classifier.classify("triton_poi_fused_add_cat_silu_slice_2")[0] == "Triton Fused"
    assert classifier.classify("triton_red_fused_add_mean_rsqrt_sub_0")[0] == "LayerNorm"


# --- user registry ------------------------------------------------------------------------------

def test_user_op_and_inductor_rules(tmp_path, classifier):
    user = tmp_path / "mine.toml"
    user.write_text('''
[categories."My Attention"]
role = "attention"

[[op_rules]]
id = "user.attn"
category = "My Attention"
ops = ["mylib::attend"]
over = ["generic", "Elementwise"]

[[op_rules]]
id = "aten.gemm"                # same id as a shipped op rule: replaces it
category = "Dense GEMM"
ops = ["aten::mm"]

[[inductor_rules]]
id = "user.silu"
category = "Elementwise"
kinds = ["poi"]
any = ["silu", "@mine"]

[inductor_groups]
mine = ["my_fused_op"]
''', encoding="utf-8")
    mine = Classifier.load(user)
    assert mine.op_rule("mylib::attend").id == "user.attn"
    assert mine.decide("Elementwise", "elementwise.generic", "mylib::attend") == \
        ("My Attention", op_reason("user.attn", "mylib::attend"))
    assert mine.op_rule("aten::addmm") is None                         # the shipped aten.gemm is gone
    assert [r.id for r in mine.op_rules].count("aten.gemm") == 1
    assert mine.classify(SILU_POI) == ("Elementwise", "user.silu")
    assert mine.classify("triton_poi_fused_my_fused_op_0") == ("Elementwise", "user.silu")
    assert mine.inductor_ops("triton_poi_fused_my_fused_op_0") == ("my_fused_op",)
    assert classifier.classify(SILU_POI) == ("Activation", "inductor.activation")   # shipped unaffected


@pytest.mark.parametrize("body, problem", [
    ('[[op_rules]]\nid = "x"\ncategory = "Nope"\nops = "a::b"', "not declared"),
    ('[[op_rules]]\nid = "x"\ncategory = "Conv"', "needs `ops` or `regex`"),
    ('[[op_rules]]\nid = "x"\ncategory = "Conv"\nregex = "(bad"', "bad regex"),
    ('[[op_rules]]\nid = "x"\ncategory = "Conv"\nops = "a::b"\nover = ["Nope"]', "over"),
    ('[[op_rules]]\nid = "x"\ncategory = "Conv"\nops = "a::b"\nover = []', "empty `over`"),
    ('[[op_rules]]\nid = "x"\ncategory = "Conv"\nop = "a::b"', "unknown key"),
    ('[[op_rules]]\ncategory = "Conv"\nops = "a::b"', "has no id"),
    ('[[inductor_rules]]\nid = "x"\ncategory = "Conv"\nkinds = ["xyz"]', "kind"),
    ('[[inductor_rules]]\nid = "x"\ncategory = "Conv"\nany = ["@nogroup"]', "no group"),
    ('[[inductor_rules]]\nid = "x"\ncategory = "Conv"\nsome = ["mm"]', "unknown key"),
    ('[[rules]]\nid = "x"\ncategory = "Conv"\ncontains = "a"\ngeneric = "yes"', "generic"),
    ('op_rules = "nope"', "array of tables"),
    ('[unknown_table]\na = 1', "unknown top-level"),
])
def test_bad_user_registry(tmp_path, body, problem):
    user = tmp_path / "bad.toml"
    user.write_text(body, encoding="utf-8")
    with pytest.raises(TraceError) as info:
        Classifier.load(user)
    msg = str(info.value)
    assert msg.startswith(str(user)) and problem in msg and "\n" not in msg


# --- real traces --------------------------------------------------------------------------------

# attention kernels by their own names: cuDNN SDPA, flash (FA2/FA3/PyTorch), mem-efficient, CK/aiter
ATTENTION_KERNEL = re.compile(r"native_sdpa|flash_fwd|flash_bwd|fmha|pytorch_flash::|attention_kernel")
LLAMA = ("h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz", "h200_llama_eager_sdpa.json.gz")


def _raw_attention_us(path) -> float:
    with gzip.open(path, "rb") as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return sum(float(e.get("dur", 0) or 0) for e in events
               if e.get("cat") == "kernel" and ATTENTION_KERNEL.search(e.get("name", ""))
               and not e["name"].startswith("triton_"))


@pytest.fixture(scope="module")
def llama_models():
    return {name: load(real_trace(name), use_cache=False) for name in LLAMA}


def _by_category(m, classifier) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for c, d in zip(m.kernels.cat.tolist(), m.kernels.dur.tolist()):
        out[classifier.group(m.categories[c]) if c >= 0 else OTHER] += d
    return out


@pytest.mark.slow
@pytest.mark.real
@pytest.mark.parametrize("name", LLAMA)
def test_attention_total_matches_the_attention_kernels(llama_models, classifier, name):
    m = llama_models[name]
    got = _by_category(m, classifier)["Attention"]
    want = _raw_attention_us(real_trace(name))
    assert want > 0
    assert got == pytest.approx(want, rel=1e-6), (got, want)
    truth = SHARED_TRACES / "TRUTH.json"
    if truth.exists():
        t = json.loads(truth.read_text())["traces"].get(name, {}).get("attention_us")
        if t is not None:
            assert abs(got - t) <= 0.03 * t


@pytest.mark.slow
@pytest.mark.real
def test_compiled_llama_kernel_categories(llama_models):
    m = llama_models["h100_llama_compiled.json.gz"]
    cats: dict[str, set] = defaultdict(set)
    for i in range(len(m.kernels)):
        cats[m.kernel_name(i)].add(m.category(i))
    expect = {SDPA_POI: "RoPE", RMS_RED: "RMSNorm", SILU_POI: "Activation", KV_CAT: "Copy/Memory",
              "triton_poi_fused__to_copy__unsafe_view_add_cat_cos_mul_neg_sin_slice_transpose_unsqueeze_view_3": "RoPE",
              "triton_red_fused__to_copy_embedding_mean_mul_pow_rsqrt_0": "RMSNorm",
              "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT": "Dense GEMM",
              "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x64_1x4x1_cga1x1x1_kernel0_0":
                  "Attention"}
    for name, cat in expect.items():
        assert cats[name] == {cat}, (name, cats[name])
    # no Inductor kernel is Attention; the cuDNN attention op's workspace memset stays memory
    assert not any(n.startswith("triton_") and "Attention" in c for n, c in cats.items())
    assert cats["Memset (Device)"] == {"Copy/Memory"}


@pytest.mark.slow
@pytest.mark.real
def test_eager_and_compiled_attention_agree_in_kind(llama_models, classifier):
    """Same model, same GPU: eager SDPA and compiled run the same cuDNN attention kernels, so the
    Attention totals must be of the same size (the compiled one was twice as large when Inductor's
    RoPE kernels counted as attention)."""
    eager = _by_category(llama_models["h100_llama_eager_sdpa.json.gz"], classifier)["Attention"]
    compiled = _by_category(llama_models["h100_llama_compiled.json.gz"], classifier)["Attention"]
    assert 0.7 < compiled / eager < 1.6


@pytest.mark.real
def test_vllm_trace_custom_ops(classifier):
    m = load(real_trace("b200_vllm_eager.json.gz"), use_cache=False)
    seen = {}
    for i in range(len(m.kernels)):
        op = m.cpu_op_name(i)
        if op:
            seen.setdefault(op, set()).add(m.category(i))
    assert seen["vllm::unified_attention_with_output"] == {"Attention (prefill)"}
    assert seen["_C::fused_add_rms_norm"] == {"RMSNorm"}
    assert seen["_C::rotary_embedding"] == {"RoPE"}
    assert seen["_C_cache_ops::reshape_and_cache_flash"] == {"KV Cache"}
    # each custom op present resolves to the op rule of its own category family
    for op in ("_C::fused_add_rms_norm", "_C::rotary_embedding", "_C_cache_ops::reshape_and_cache_flash",
               "vllm::unified_attention_with_output", "_C::static_scaled_fp8_quant"):
        rule = classifier.op_rule(op)
        assert rule is not None and classifier.group(rule.category) in {classifier.group(c) for c in seen[op]}, op
