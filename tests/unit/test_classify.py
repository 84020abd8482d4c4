"""Kernel classifier: shipped registry integrity, real kernel names, user overrides, coverage."""

from __future__ import annotations

import gzip
import json
import tomllib
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.core.analysis.classify import Classifier
from kerneldiff.core.analysis.registry import OTHER, ROLES
from kerneldiff.core.analysis.rule_matcher import match_text
from kerneldiff.core.names.parts import qualified_prefix, strip_args
from kerneldiff.core.errors import TraceError

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
LLM_TRACES = ("mi300x_qwen1.5-0.5b_hf", "h100_qwen1.5-0.5b_hf", "mi300x_vllm_gptoss_decode",
              "b200_vllm_eager", "mi300x_sglang_qwen3-8b_decode")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


@pytest.fixture(scope="module")
def clf() -> Classifier:
    return Classifier.load()


@pytest.fixture(scope="module")
def trace_names() -> dict[str, Counter]:
    """Per trace: GPU time (µs) per kernel/memcpy/memset name, read with plain gzip+json."""
    if not TRACES.is_dir():
        pytest.skip("../shared/traces not available")
    out: dict[str, Counter] = {}
    for f in sorted(TRACES.glob("*.json.gz")):
        with gzip.open(f, "rb") as fh:
            doc = json.load(fh)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        dur: Counter = Counter()
        for e in events:
            if e.get("cat") in GPU_CATS and "name" in e:
                dur[e["name"]] += float(e.get("dur", 0) or 0)
        out[f.name.removesuffix(".json.gz")] = dur
    if not out:
        pytest.skip("no traces in ../shared/traces")
    return out


# --- shipped registry integrity -------------------------------------------------------------

def _shipped_doc() -> dict:
    return tomllib.loads(resources.files("kerneldiff.core.analysis").joinpath("registry.toml").read_text(encoding="utf-8"))


def test_rule_categories_are_declared():
    doc = _shipped_doc()
    declared = set(doc["categories"])
    for rule in doc["rules"]:
        assert rule["category"] in declared, rule["id"]


def test_components_and_groups_reference_categories():
    cats = _shipped_doc()["categories"]
    fused = [c for c, m in cats.items() if m.get("components")]
    assert {"RMSNorm+GEMM", "MoE GEMM+SwiGLU"} <= set(fused)
    for name, meta in cats.items():
        assert meta["role"] in ROLES, name
        for comp in meta.get("components", []):
            assert comp in cats and comp != name, (name, comp)
        assert meta.get("group", name) in cats


def test_required_categories_present(clf):
    required = {"Attention", "Attention (prefill)", "Attention (decode)", "KV Cache", "MoE Routing",
                "MoE GEMM", "MoE GEMM+SwiGLU", "MoE Finalize", "Dense GEMM", "RMSNorm",
                "RMSNorm+GEMM", "Triton Fused", "Elementwise", "Sorting", "Reduce", "Copy/Memory",
                "Communication", "All-Reduce", "All-Gather", "SSM", "Other"}
    assert required <= set(clf.categories)
    assert clf.categories[-1] == OTHER
    assert len(set(clf.rule_ids)) == len(clf.rule_ids)


def test_category_metadata(clf):
    assert clf.components("RMSNorm+GEMM") == ["RMSNorm", "Dense GEMM"]
    assert clf.is_fused("MoE GEMM+SwiGLU") and not clf.is_fused("Dense GEMM")
    assert clf.role("Attention (decode)") == "attention"
    assert clf.role("RMSNorm") == "norm" and clf.role("SSM") == "ssm"
    assert clf.role("All-Reduce") == "comm" and clf.role("no such category") == "other"
    assert clf.group("Attention (prefill)") == "Attention" and clf.group("Dense GEMM") == "Dense GEMM"


def test_every_example_hits_its_own_rule(clf):
    """Registry `examples` guard the rule order: an earlier rule must not steal them."""
    checked = 0
    for rule in clf.rules:
        for name in rule.examples:
            assert clf.classify(name) == (rule.category, rule.id), name
            checked += 1
    assert checked >= 40


# --- real kernel names ----------------------------------------------------------------------

# (name or name prefix as it appears in ../shared/traces, expected category)
REAL_NAMES = [
    # AMD: Tensile, aiter / CK (mangled), vLLM/SGLang ROCm kernels, triton_kernels MoE
    ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64", "Dense GEMM"),
    ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32", "Dense GEMM"),
    ("attn_fwd", "Attention"),
    ("_ZN5aiter24add_rmsnorm_quant_kernel", "RMSNorm"),
    ("_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwd", "RMSNorm"),
    ("_ZN7sgl_hip10activation18act_and_mul_kernel", "Activation"),
    ("void paged_attention_ll4mi_QKV_mfma16_kernel", "Attention (decode)"),
    ("void paged_attention_ll4mi_reduce_kernel", "Attention (decode)"),
    ("void (anonymous namespace)::store_kvcache", "KV Cache"),
    ("void rotary_embedding_kernel<", "RoPE"),
    ("void rocprim::", "Reduce"),
    ("kernel_unified_attention_2d", "Attention"),
    ("kernel_unified_attention_3d", "Attention"),
    ("reduce_segments", "Attention"),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", "MoE GEMM+SwiGLU"),
    ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1", "MoE GEMM"),
    ("_finalize_matmul_scatter_bf16", "MoE Finalize"),
    ("_combined_routing_compute", "MoE Routing"),
    ("_combined_routing_memset", "MoE Routing"),
    ("_topk_forward", "MoE Routing"),
    ("_sum_bitmatrix_rows", "MoE Routing"),
    ("triton_poi_fused_constant_pad_nd_moe_forward_0", "Triton Fused"),
    ("void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16", "KV Cache"),
    ("void at::native::elementwise_kernel_manual_unroll<128, 8, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda", "Copy/Memory"),
    ("void at::native::elementwise_kernel_manual_unroll<128, 8, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16", "Elementwise"),
    # NVIDIA: cuBLAS / nvjet, FA2, TRT-LLM gen MoE, vLLM, NCCL, multimem
    ("nvjet_tst_", "Dense GEMM"),
    ("sm90_xmma_gemm_bf16bf16", "Dense GEMM"),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm", "Dense GEMM"),
    ("void pytorch_flash::flash_fwd_kernel", "Attention"),
    ("fmhaSm100aKernel_", "Attention (prefill)"),
    ("bmm_MxE4m3_MxE2m1MxE4m3", "MoE GEMM+SwiGLU"),
    ("bmm_Bfloat16_MxE2m1MxE4m3", "MoE GEMM"),
    ("void moe::dev::routing::", "MoE Routing"),
    ("void moe::dev::finalize::", "MoE Finalize"),
    ("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type vllm::fused_add_rms_norm_kernel", "RMSNorm"),
    ("void vllm::rms_norm_kernel", "RMSNorm"),
    ("void vllm::rotary_embedding_kernel", "RoPE"),
    ("void (anonymous namespace)::multimem_all_reduce_kernel", "All-Reduce"),
    ("ncclDevKernel_AllGather_RING_LL", "All-Gather"),
    ("void tensorrt_llm::kernels::quantize_with_block_size", "Quantize"),
    ("void vllm::scaled_fp8_quant_kernel_strided", "Quantize"),
    ("Memcpy DtoD (Device -> Device)", "Copy/Memory"),
    ("Memcpy HtoD (Pinned -> Device)", "Copy/Memory"),
    ("Memset (Device)", "Copy/Memory"),
    ("_copy_page_indices_kernel", "KV Cache"),
    # PyTorch native
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps", "Reduce"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_kernel", "Activation"),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy", "Copy/Memory"),
    ("void at::native::(anonymous namespace)::indexSelectLargeIndex", "Gather/Scatter"),
    ("void at::native::vectorized_gather_kernel", "Gather/Scatter"),
    ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::(anonymous namespace)::masked_fill_kernel", "Elementwise"),
    ("triton_poi_fused_add_cos_sin_0", "Triton Fused"),
    # training (A100 / V100 / MI250)
    ("ncclKernel_SendRecv_RING_SIMPLE", "Communication"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float", "All-Reduce"),
    ("void split_embedding_backward_codegen_rowwise_adagrad", "Embedding"),
    ("void fbgemm_gpu::permute_2D_lengths_kernel", "Embedding"),
    ("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor", "Optimizer"),
    ("void cub::DeviceRadixSortOnesweepKernel", "Sorting"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel", "LayerNorm"),
    ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel", "LayerNorm"),
    ("volta_sgemm_128x32_nt", "Dense GEMM"),
    ("ampere_sgemm_128x128_tn", "Dense GEMM"),
    ("void splitKreduce_kernel", "Dense GEMM"),
    ("void gemv2T_kernel_val", "Dense GEMM"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::tanh_backward_kernel_cuda", "Activation"),
]


@pytest.mark.slow
@pytest.mark.real
def test_real_names_map_to_expected_category(clf, trace_names):
    all_names = set().union(*trace_names.values())
    wrong = []
    for key, expected in REAL_NAMES:
        hits = [key] if key in all_names else [n for n in all_names if n.startswith(key)]
        assert hits, f"{key!r} no longer occurs in the traces"
        wrong += [(n[:100], clf.classify(n)[0], expected) for n in hits if clf.classify(n)[0] != expected]
    assert not wrong, wrong


@pytest.mark.real
@pytest.mark.slow
def test_other_share_of_kernel_time(clf, trace_names):
    shares = {}
    for trace, durs in trace_names.items():
        total = sum(durs.values())
        other = sum(d for n, d in durs.items() if clf.classify(n)[0] == OTHER)
        shares[trace] = other / total if total else 0.0
    print("\nunclassified (Other) share of GPU time:")
    for trace, share in shares.items():
        print(f"  {trace:40s} {share:7.2%}")
    for trace in LLM_TRACES:
        if trace in shares:
            assert shares[trace] < 0.10, f"{trace}: {shares[trace]:.1%} of kernel time is Other"


# --- matching mechanics ---------------------------------------------------------------------

def test_unmatched_and_batch(clf):
    names = ["totally_unknown_kernel", "nvjet_tst_64x8_64x16_4x1_v_bz_TNT", "Memset (Device)"]
    cats, rules = clf.classify_names(names)
    assert cats == [OTHER, "Dense GEMM", "Copy/Memory"]
    assert rules[0] == "" and rules[1] in clf.rule_ids and rules[2] in clf.rule_ids


def test_case_insensitive(clf):
    assert clf.classify("CIJK_ALIK_BLJK_S_B_MT64x64")[0] == "Dense GEMM"
    assert clf.classify("MyFusedRMSNormKernel")[0] == "RMSNorm"


def test_argument_list_does_not_decide(clf):
    # the argument type names flashinfer; without stripping it the name could look like attention
    name = "void my_quantize_kernel<float>(flashinfer::AttentionSFLayout, float const*)"
    assert strip_args(name) == "void my_quantize_kernel<float>"
    assert clf.classify(name)[0] == "Quantize"


def test_strip_args_edge_cases():
    assert strip_args("f(void (*)(int), int)") == "f"
    assert strip_args("g<h(int)>(int)") == "g<h(int)>"
    assert strip_args("truncated_name)") == "truncated_name)"      # unbalanced: unchanged
    assert strip_args("no_args") == "no_args"
    assert strip_args("(only)") == "(only)"
    assert strip_args("void f<T>(int) const ") == "void f<T>"        # a const member function
    assert strip_args("memset (Device)") == "memset"


def test_model_cache_key_follows_the_code_that_cuts_names():
    from kerneldiff.core.ingest import cache

    assert "names" in cache._SOURCE_PACKAGES


def test_the_matcher_and_the_display_cut_names_alike():
    # one strip_args: what rules see is the display form's name, lowercased
    from kerneldiff.core.names.parts import strip_signature

    for name in ("void at::native::k<float>(float*) const", "Memcpy HtoD (Pinned -> Device)", "nvjet_x  "):
        assert strip_signature(name).lower() in match_text(name)


def test_qualified_prefix():
    assert qualified_prefix("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256EEEvPT0_") == "aiter::add_rmsnorm_quant_kernel<…>"
    assert qualified_prefix("_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16EEvv") == \
        "sgl_hip::activation::act_and_mul_kernel<…>"
    assert qualified_prefix("_ZN12_GLOBAL__N_113my_kernel_fooEPf") == "(anonymous namespace)::my_kernel_foo"
    assert qualified_prefix("_Z10add_kernelPfS_i") == "add_kernel"
    assert qualified_prefix("_ZNSt6vector4sizeEv") == "std::vector::size"
    assert qualified_prefix("_Zgarbage") == "_Zgarbage"
    assert qualified_prefix("_ZN0_3fooEv") == "_ZN0_3fooEv"        # no identifier is empty
    # mangled names match on both the readable and the mangled text
    text = match_text("_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdIEEEvv")
    assert text.startswith("ck_tile::kentry<…> ") and "rmsnorm2dfwd" in text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_classifies(name):
    clf = Classifier.load()
    cat, rule = clf.classify(name)
    assert cat in clf.categories
    assert (rule == "") == (cat == OTHER) or rule in clf.rule_ids or rule in {r.id for r in clf.inductor_rules}


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(("poi", "red", "per", "tem", "for")), st.text(alphabet="abcmnopsux_", max_size=40),
       st.integers(0, 30))
def test_any_inductor_name_classifies(kind, body, n):
    """Any text in the op-list position parses and lands on an Inductor rule (the catch-all at worst)."""
    clf = Classifier.load()
    name = f"triton_{kind}_fused_{body}_{n}"
    cat, rule = clf.classify(name)
    assert rule in {r.id for r in clf.inductor_rules} and cat in clf.categories
    assert "_".join(clf.inductor_ops(name)) in (body, "")


def test_classify_names_reads_each_distinct_name(clf):
    # the loader calls it once per distinct kernel name; its speed per name: bench/bench_names.py
    names = [f"void at::native::vectorized_elementwise_kernel<4, at::native::Op{i}<float>, std::array<char*, 3ul> >(int)"
             for i in range(300)]
    fresh = Classifier(clf.rules, {c: {"role": clf.role(c)} for c in clf.categories})
    cats, rules = fresh.classify_names(names)
    assert len(cats) == len(rules) == len(names)
    assert set(cats) == {"Elementwise"}
    assert [fresh.classify(n) for n in names[:3]] == list(zip(cats[:3], rules[:3]))


# --- user registry --------------------------------------------------------------------------

def test_user_registry_overrides(tmp_path, clf):
    user = tmp_path / "mine.toml"
    user.write_text('''
[categories."My GEMM"]
role = "gemm"
[categories."Dense GEMM"]
role = "other"

[[rules]]
id = "user.small_nvjet"
category = "My GEMM"
regex = '^nvjet_tst_64x8_'

[[rules]]
id = "norm.rmsnorm"          # same id as a shipped rule: replaces it
category = "LayerNorm"
contains = "rms_norm"
''', encoding="utf-8")
    mine = Classifier.load(user)
    assert mine.classify("nvjet_tst_64x8_64x16_4x1_v_bz_TNT") == ("My GEMM", "user.small_nvjet")
    assert mine.classify("nvjet_tst_128x8_64x16_4x1_v_bz_TNT")[0] == "Dense GEMM"   # shipped rule still there
    assert mine.classify("void vllm::rms_norm_kernel<float>(float*)") == ("LayerNorm", "norm.rmsnorm")
    assert mine.rule_ids.count("norm.rmsnorm") == 1
    assert mine.classify("aiter_rmsnorm_thing")[0] == OTHER          # the shipped rmsnorm rule is gone
    assert mine.role("My GEMM") == "gemm" and mine.role("Dense GEMM") == "other"
    assert mine.categories[-1] == OTHER and "My GEMM" in mine.categories
    # the shipped classifier is unaffected
    assert clf.classify("nvjet_tst_64x8_64x16_4x1_v_bz_TNT")[0] == "Dense GEMM"
    assert clf.role("Dense GEMM") == "gemm"


@pytest.mark.parametrize("body, problem", [
    ("[[rules]\nid = 1", "invalid TOML"),
    ('[[rules]]\nid = "x"\ncategory = "Nope"\ncontains = "a"', "not declared"),
    ('[[rules]]\nid = "x"\ncategory = "Dense GEMM"\nregex = "(unclosed"', "bad regex"),
    ('[[rules]]\nid = "x"\ncategory = "Dense GEMM"', "needs `contains` or `regex`"),
    ('[[rules]]\nid = "x"\ncategory = "Dense GEMM"\ncontain = "typo"', "unknown key"),
    ('[[rules]]\ncategory = "Dense GEMM"\ncontains = "a"', "has no id"),
    ('[categories."X"]\nrole = "gpu"', "role"),
    ('[categories."X"]\nrole = "norm"\ncomponents = ["Missing"]', "component"),
    ('[[rules]]\nid = "x"\ncategory = "Dense GEMM"\ncontains = "a"\n[[rules]]\nid = "x"\ncategory = "Dense GEMM"\ncontains = "b"', "twice"),
    ('rules = "nope"', "array of tables"),
    ('[[rules]]\nid = "x"\ncategory = "Dense GEMM"\ncontains = "a"\nvendor = "Intel"', "vendor"),
])
def test_bad_user_registry(tmp_path, body, problem):
    user = tmp_path / "bad.toml"
    user.write_text(body, encoding="utf-8")
    with pytest.raises(TraceError) as info:
        Classifier.load(user)
    msg = str(info.value)
    assert msg.startswith(str(user)) and problem in msg and "\n" not in msg


def test_missing_user_registry(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        Classifier.load(tmp_path / "absent.toml")


# --- the first-rule matcher (one Aho-Corasick pass, regexes gated by their required literal) ---

def _rule_by_rule(classifier, text):
    """The definition: the first rule in registry order with a literal in the text or a regex found."""
    for i, (_, literals, regexes) in enumerate(classifier._compiled):
        if any(lit in text for lit in literals) or any(rx.search(text) for rx in regexes):
            return i
    return None


@pytest.mark.slow
def test_first_rule_matcher_agrees_with_trying_each_rule_in_turn(classifier):
    import random
    import string

    words = sorted({lit for _, lits, _ in classifier._compiled for lit in lits})
    words += ["matmul_ogs_", "moe_gemm", "fused_moe", "silu", "swiglu", "conv", "olution", "upsampl", "sampl", "ing",
              "lambda", "lamb", "argm", "ax", "elu_", "masked_", "fill_kernel", "top_", "k_", "p", "nvjet", "bmm_",
              "dynbatch", "_fwd_", "kernel_stage1", "fmha", "context", "forgen", "bn_", "fw", "scan", "ssm", "rope",
              "rms_", "norm", "matmul", "gemm", "fbgemm", "all_", "gather", "decode_", "attn", "reduce_segments"]
    rnd = random.Random(7)
    names = [n for r in classifier.rules for n in r.examples]
    for _ in range(20_000):
        names.append("".join(rnd.choice(words) if rnd.random() < 0.5 else rnd.choice(string.ascii_lowercase + "_")
                             for _ in range(rnd.randint(1, 10))))
    hits = 0
    for name in names:
        text = match_text(name)
        want = _rule_by_rule(classifier, text)
        assert classifier._matcher.first_rule(text) == want, name
        hits += want is not None
    assert hits > len(names) // 2        # the names do exercise the rules


def test_required_literal_of_a_regex():
    import re

    from kerneldiff.core.analysis.rule_matcher import required_literal

    assert required_literal(re.compile(r"fmoe(?:(?!fmoe)\w)*?(silu|gelu)")) == "fmoe"
    assert required_literal(re.compile(r"ssm(?<![a-z]ssm)")) == "ssm"
    assert required_literal(re.compile(r"^_fwd_(grouped_)?kernel_stage[12]")) == "kernel_stage"
    assert required_literal(re.compile(r"all_?reduce")) == "reduce"
    assert required_literal(re.compile(r"a|b")) is None               # neither side is required
    assert required_literal(re.compile(r"Gemm", re.I)) is None         # case-folded: no plain literal
    # read from the pattern's text (no re._parser): where unsure, a shorter run, never a wrong one
    assert required_literal(re.compile(r"aten::_convolution\w*")) == "aten::_convolution"
    assert required_literal(re.compile(r"\(paren\)s")) == "(paren)s"   # escaped punctuation is plain
    assert required_literal(re.compile(r"ab{2,3}cd")) == "cd"          # a repeated character is not
    assert required_literal(re.compile(r"abc*?de+d")) == "ab"
    assert required_literal(re.compile(r"foo[]|(]barz")) == "barz"     # `]` first and `|`, `(` in a class
    assert required_literal(re.compile(r"x(a|b)yz")) == "yz"           # `|` inside a group
    assert required_literal(re.compile(r"\x41bcd\d\N{EM DASH}e")) == "bcd"
    assert required_literal(re.compile(r"a b", re.X)) is None          # verbose: spaces are not literal


# pieces of patterns: literals, escapes, classes, groups, repeats, anchors, alternation
_PIECES = ["a", "b", "ab", "k_", "::", r"\.", r"\(", r"\w", r"\d+", r"\x61", "[ab]", "[]a]", "[^(]", "(a|b)",
           "(?:ab)", "(?!a)", "(?<=b)", ".", "^", "$", "*", "+", "?", "*?", "{2}", "{1,2}", "{,2}", "{", "}", "|", ")"]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8), data=st.data())
def test_required_literal_is_in_every_match(pieces, data):
    """Sound whatever the pattern: every text the regex matches holds the literal."""
    import re

    from kerneldiff.core.analysis.rule_matcher import required_literal

    source = "".join(pieces)
    try:
        rx = re.compile(source)
    except re.error:
        return
    lit = required_literal(rx)
    if lit is None:
        return
    for _ in range(5):
        text = data.draw(st.from_regex(rx, fullmatch=True))
        assert lit in text, (source, lit, text)


def test_a_name_no_rule_matches_runs_only_ungated_regexes(classifier):
    """One pass per name whatever the rules: a 1 KB name no rule matches is not tried 176 times
    (bounded by counting the regexes run, not by timing)."""
    import re

    ran = []
    m = classifier._matcher
    original = m._regexes
    m._regexes = [(i, _Counting(rx, ran)) for i, rx in original]
    try:
        assert m.first_rule("k" * 1016) is None
    finally:
        m._regexes = original
    ungated = len(m._always)
    assert len(ran) == ungated and ungated <= 2, [r.pattern for r in ran]
    assert hasattr(original[0][1], "search")   # a shipped regex compiles on first use (LazyPattern)


class _Counting:
    def __init__(self, rx, ran):
        self.rx, self.ran, self.pattern = rx, ran, rx.pattern

    def search(self, text):
        self.ran.append(self)
        return self.rx.search(text)


def test_small_unique_is_np_unique():
    """The table-based unique of small integer ids gives np.unique's values and inverse exactly,
    on both of its paths (dense table, and the sort when the bound is large)."""
    import numpy as np

    from kerneldiff.core.numbers import small_unique

    rng = np.random.default_rng(5)
    for n, bound in ((0, 10), (1, 1), (1000, 50), (1000, 10**7), (5000, 5000)):
        v = rng.integers(0, bound, n)
        u, inv = small_unique(v, bound)
        eu, einv = np.unique(v, return_inverse=True)
        assert np.array_equal(u, eu) and np.array_equal(inv, einv.reshape(-1)) and inv.dtype == np.int64
