"""Kernel names people can read: the Itanium demangler (core/names/demangle.py) against c++filt,
on hostile input, and the shortening for narrow table cells (core/names/display.py)."""

from __future__ import annotations

import sys

import pytest

from kerneldiff.core.names.demangle import MAX_OUTPUT, demangle, readable
from kerneldiff.core.names.display import short_name

# (mangled, what GNU c++filt 2.40 prints), from g++ 12 objects, libstdc++ and libLLVM-14
CXXFILT = [
    ('_Z12plain_kernelI4bf16Li256ELb1EEvPT_PKS1_fd',
     'void plain_kernel<bf16, 256, true>(bf16*, bf16 const*, float, double)'),
    ('_Z2fpPFvicEM3FooiMS1_KFviE',
     'fp(void (*)(int, char), int Foo::*, void (Foo::*)(int) const)'),
    ('_Z3arrIiLm3EEvRAT0__T_PS1_',
     'void arr<int, 3ul>(int (&) [3ul], int (*) [3ul])'),
    ('_Z3vecSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS5_EESt3mapIiS_IiSaIiEESt4lessIiESaISt4pairIKiSA_EEESt8functionIFviEE',
     'vec(std::vector<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, std::allocator<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > > >, std::map<int, std::vector<int, std::allocator<int> >, std::less<int>, std::allocator<std::pair<int const, std::vector<int, std::allocator<int> > > > >, std::function<void (int)>)'),
    ('_Z4litsILln5ELm7ELc97ELx1099511627776EEvv',
     'void lits<-5l, 7ul, (char)97, 1099511627776ll>()'),
    ('_Z6packedIJEEvDpT_',
     'void packed<>()'),
    ('_Z6packedIJidcPKcEEvDpT_',
     'void packed<int, double, char, char const*>(int, double, char, char const*)'),
    ('_ZN12_GLOBAL__N_119CatArrayBatchedCopyINS_10OpaqueTypeIiEEjLi4ELi64EEEvPT_T0_',
     'void (anonymous namespace)::CatArrayBatchedCopy<(anonymous namespace)::OpaqueType<int>, unsigned int, 4, 64>((anonymous namespace)::OpaqueType<int>*, unsigned int)'),
    ('_ZN2at6native29vectorized_elementwise_kernelILi2EZ4mainEUlfE_iEEviT0_T1_',
     'void at::native::vectorized_elementwise_kernel<2, main::{lambda(float)#1}, int>(int, main::{lambda(float)#1}, int)'),
    ('_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_',
     'void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)'),
    ('_ZN3Foo1sEv',
     'Foo::s()'),
    ('_ZN3Foo2tmIPVKiEEvT_',
     'void Foo::tm<int const volatile*>(int const volatile*)'),
    ('_ZN3Foo2tmIZ4mainEUlfE_EEvT_',
     'void Foo::tm<main::{lambda(float)#1}>(main::{lambda(float)#1})'),
    ('_ZN3FooC1Ev',
     'Foo::Foo()'),
    ('_ZN3FooC2Ev',
     'Foo::Foo()'),
    ('_ZN3FooD1Ev',
     'Foo::~Foo()'),
    ('_ZN3FooD2Ev',
     'Foo::~Foo()'),
    ('_ZN5OuterIiE5InnerIcE2goEic',
     'Outer<int>::Inner<char>::go(int, char)'),
    ('_ZN7ck_tile6kentryILi1ENS_6KernelINS_6TraitsIfLNS_9FusedEnumE1ELb1EEEEEJNS1_INS_8sequenceIJLi1ELi3072EEEEE5KargsEEEEvDpT1_',
     'void ck_tile::kentry<1, ck_tile::Kernel<ck_tile::Traits<float, (ck_tile::FusedEnum)1, true> >, ck_tile::Kernel<ck_tile::sequence<1, 3072> >::Kargs>(ck_tile::Kernel<ck_tile::sequence<1, 3072> >::Kargs)'),
    ('_ZNK3Foo3barEi',
     'Foo::bar(int) const'),
    ('_ZNK3FoocviEv',
     'Foo::operator int() const'),
    ('_ZNK3FooeqERKS_',
     'Foo::operator==(Foo const&) const'),
    ('_ZNV3Foo3bazEPc',
     'Foo::baz(char*) volatile'),
    ('_ZTSN4llvm2cl3optINS_10FPOpFusion14FPOpFusionModeELb0ENS0_6parserIS3_EEEUlRKS3_E_E',
     'typeinfo name for llvm::cl::opt<llvm::FPOpFusion::FPOpFusionMode, false, llvm::cl::parser<llvm::FPOpFusion::FPOpFusionMode> >::{lambda(llvm::FPOpFusion::FPOpFusionMode const&)#1}'),
    ('_ZTIZNK4llvm12GenericCycleINS_17GenericSSAContextINS_15MachineFunctionEEEE12printEntriesERKS3_EUlRNS_11raw_ostreamEE_',
     'typeinfo for llvm::GenericCycle<llvm::GenericSSAContext<llvm::MachineFunction> >::printEntries(llvm::GenericSSAContext<llvm::MachineFunction> const&) const::{lambda(llvm::raw_ostream&)#1}'),
    ('_ZTSN4llvm2cl3optINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEELb1ENS0_6parserIS7_EEEUlRKS7_E_E',
     'typeinfo name for llvm::cl::opt<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, true, llvm::cl::parser<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > > >::{lambda(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)#1}'),
    ('_ZN4llvm2cl5applyINS0_3optINS_17PassSummaryActionELb0ENS0_6parserIS3_EEEENS0_4descEJNS0_11ValuesClassENS0_12OptionHiddenEEEEvPT_RKT0_DpRKT1_',
     'void llvm::cl::apply<llvm::cl::opt<llvm::PassSummaryAction, false, llvm::cl::parser<llvm::PassSummaryAction> >, llvm::cl::desc, llvm::cl::ValuesClass, llvm::cl::OptionHidden>(llvm::cl::opt<llvm::PassSummaryAction, false, llvm::cl::parser<llvm::PassSummaryAction> >*, llvm::cl::desc const&, llvm::cl::ValuesClass const&, llvm::cl::OptionHidden const&)'),
    ('_ZSt11make_uniqueIN4llvm21BranchProbabilityInfoEJRNS0_8FunctionERNS0_8LoopInfoEEENSt8__detail9_MakeUniqIT_E15__single_objectEDpOT0_',
     'std::__detail::_MakeUniq<llvm::BranchProbabilityInfo>::__single_object std::make_unique<llvm::BranchProbabilityInfo, llvm::Function&, llvm::LoopInfo&>(llvm::Function&, llvm::LoopInfo&)'),
    ('_ZNSt5dequeIPKN4llvm10bfi_detail16IrreducibleGraph7IrrNodeESaIS5_EE13emplace_frontIJS5_EEEvDpOT_',
     'void std::deque<llvm::bfi_detail::IrreducibleGraph::IrrNode const*, std::allocator<llvm::bfi_detail::IrreducibleGraph::IrrNode const*> >::emplace_front<llvm::bfi_detail::IrreducibleGraph::IrrNode const*>(llvm::bfi_detail::IrreducibleGraph::IrrNode const*&&)'),
    ('_ZN4llvm4yaml7yamlizeISt6vectorINS0_5Hex32ESaIS3_EENS0_12EmptyContextEEENSt9enable_ifIXsr18has_SequenceTraitsIT_EE5valueEvE4typeERNS0_2IOERS8_bRT0_',
     'std::enable_if<has_SequenceTraits<std::vector<llvm::yaml::Hex32, std::allocator<llvm::yaml::Hex32> > >::value, void>::type llvm::yaml::yamlize<std::vector<llvm::yaml::Hex32, std::allocator<llvm::yaml::Hex32> >, llvm::yaml::EmptyContext>(llvm::yaml::IO&, std::vector<llvm::yaml::Hex32, std::allocator<llvm::yaml::Hex32> >&, bool, llvm::yaml::EmptyContext&)'),
    ('_ZN4llvm4yaml7yamlizeINS_7support6detail31packed_endian_specific_integralIjLNS2_10endiannessE1ELm1ELm1EEEEENSt9enable_ifIXsr16has_ScalarTraitsIT_EE5valueEvE4typeERNS0_2IOERS8_bRNS0_12EmptyContextE',
     'std::enable_if<has_ScalarTraits<llvm::support::detail::packed_endian_specific_integral<unsigned int, (llvm::support::endianness)1, 1ul, 1ul> >::value, void>::type llvm::yaml::yamlize<llvm::support::detail::packed_endian_specific_integral<unsigned int, (llvm::support::endianness)1, 1ul, 1ul> >(llvm::yaml::IO&, llvm::support::detail::packed_endian_specific_integral<unsigned int, (llvm::support::endianness)1, 1ul, 1ul>&, bool, llvm::yaml::EmptyContext&)'),
    ('_ZGTtNKSt11logic_error4whatEv',
     'transaction clone for std::logic_error::what() const'),
    ('_ZGTtNKSt13bad_exception4whatEv',
     'transaction clone for std::bad_exception::what() const'),
    ('_ZGTtNKSt13bad_exceptionD1Ev',
     'transaction clone for std::bad_exception::~bad_exception() const'),
    ('_ZGTtNKSt13runtime_error4whatEv',
     'transaction clone for std::runtime_error::what() const'),
]

# kernels recorded mangled in the real AMD traces (../shared/traces), and what they are
AMD = [
    ("_ZN5aiter32fused_rmsnorm_gemm_a16w16_kernelIDF16bLi256ELi64ELb1EEEvPT_PKS1_S4_S4_fiiii",
     "void aiter::fused_rmsnorm_gemm_a16w16_kernel<std::bfloat16_t, 256, 64, true>(std::bfloat16_t*, "
     "std::bfloat16_t const*, std::bfloat16_t const*, std::bfloat16_t const*, float, int, int, int, int)"),
    ("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
     "void aiter::add_rmsnorm_quant_kernel<std::bfloat16_t, std::bfloat16_t, 256, 16, false, false, true, 1>"
     "(std::bfloat16_t*, std::bfloat16_t*, float*, std::bfloat16_t*, std::bfloat16_t*, std::bfloat16_t*, double, "
     "int, int, int, int, int, int, int, bool)"),
    # C++20 template parameter declaration (Tn): c++filt 2.40 and llvm-cxxfilt 14 give up on it (llvm-cxxfilt
    # also on DF16b, std::bfloat16_t, so on all six mangled kernels of the real traces): README, *Kernel names*
    ("_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i",
     "void sgl_hip::activation::act_and_mul_kernel<__hip_bfloat16, &silu<__hip_bfloat16> >(__hip_bfloat16*, "
     "__hip_bfloat16 const*, int)"),
]
CK = ("_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePassINS_27Rmsnorm2dFwdPipelineProblemIDF16bDF16b"
      "fDF16bDF16bDF16bffNS_19Generic2dBlockShapeINS_8sequenceIJLi1ELi3072EEEENS5_IJLi1ELi128EEEENS5_IJLi1ELi8EEEEEENS_18Rms"
      "norm2dFwdTraitsILb1ELb0ELb0ELb0ELNS_21Rmsnorm2dFusedAddEnumE0ELNS_23Rmsnorm2dFusedQuantEnumE0ELNS_22Rmsnorm2dSensiti"
      "veEnumE0EEEEENS_33Rmsnorm2dFwdPipelineDefaultPolicyEEENS_17Default2DEpilogueINS_24Default2DEpilogueProblemIfDF16bLb0E"
      "Lb1ELb0EEEvEEEEJNSM_5KargsEEEEvDpT1_")


@pytest.mark.parametrize("mangled,expected", CXXFILT + AMD)
def test_demangle_agrees_with_cxxfilt(mangled, expected):
    assert demangle(mangled) == expected


def test_demangle_composable_kernel_pack_and_enum_literals():
    d = demangle(CK)
    assert d.startswith("void ck_tile::kentry<1, ck_tile::Rmsnorm2dFwd<ck_tile::Rmsnorm2dFwdPipelineOnePass<")
    assert "(ck_tile::Rmsnorm2dFusedAddEnum)0" in d and "ck_tile::sequence<1, 3072>" in d
    # the parameter is the pack T1_ (one element) expanded: the nested Kargs type, not "T1_..."
    assert d.endswith("ck_tile::Default2DEpilogue<ck_tile::Default2DEpilogueProblem<float, std::bfloat16_t, "
                      "false, true, false>, void> >::Kargs)")
    assert readable(CK).endswith("::Kargs>") and "(" not in readable(CK).split("<")[0]


def test_not_mangled_or_unreadable_names():
    assert demangle("nvjet_hsh_64x32_64x6_2x1_v_bz_TNT") == "nvjet_hsh_64x32_64x6_2x1_v_bz_TNT"
    assert demangle("void at::native::foo<int>(int)") == "void at::native::foo<int>(int)"
    assert demangle("_Z") == "_Z" and demangle("_Zgarbage") == "_Zgarbage"
    # a name cut short: what can be read, the rest marked
    assert demangle("_ZN5aiter32fused_rmsnorm_gemm_a16w16_kernelIDF16bLi256E") == \
        "aiter::fused_rmsnorm_gemm_a16w16_kernel<…>"
    assert demangle("_ZN12_GLOBAL__N_113my_kernel_fooEPf") == "(anonymous namespace)::my_kernel_foo(float*)"
    assert demangle("_Z10add_kernelPfS_i.kd") == "add_kernel(float*, float*, int)"
    assert demangle("_Z3foov.cold") == "foo() [clone .cold]"


def _calls(fn, *args):
    """fn(*args) and the number of Python function calls it made (counted, not timed)."""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        out = fn(*args)
    finally:
        sys.setprofile(None)
    return out, calls


@pytest.mark.parametrize("name", [
    "_Z1f" + "P" * 100_000 + "i",                 # deep pointers: depth limit
    "_Z1fI" + "PS_" * 5_000 + "E",                # substitutions feeding on each other
    "_Z1fIiEv" + "S_" * 8_000,                    # many parameters
    "_ZN" + "1a" * 8_000 + "E",                   # a very long qualified name
    "_Z1fI" + "I" * 50_000,                       # nothing but openings
    "_Z1fIJ" + "S0_" * 5_000 + "EEvDpT_",         # a huge pack expanded
    "_Z1fIiEvT_" + "S0_" * 5_000,
    "_Z" + "N1aI" * 3_000,
])
def test_demangle_is_bounded_on_hostile_names(name):
    """The work is linear in the name: a substitution or template argument expanded again and again
    would take far more than a few calls per character. Its speed: bench/bench_names.py."""
    out, calls = _calls(demangle, name)
    assert calls <= 20 * len(name) + 1_000, f"{calls:,} calls for {len(name):,} characters"
    assert isinstance(out, str) and len(out) <= max(MAX_OUTPUT + 16, len(name))


def test_the_call_count_sees_the_demangler_work():
    assert _calls(demangle, "_Z3vecSt6vectorIiSaIiEE")[1] > 10


def test_short_names_read_at_table_widths():
    amd = AMD[0][0]
    assert short_name(amd, 80) == "aiter::fused_rmsnorm_gemm_a16w16_kernel<std::bfloat16_t, 256, 64, true>"
    assert short_name(amd, 30) == "fused_rmsnorm_gemm_a16w16<bfl…"
    assert short_name(amd, 15) == "fused_rmsnorm_…"
    assert not short_name(amd, 15).startswith("_Z")
    # "(anonymous namespace)" is one qualifier, not a return type followed by "namespace)::…"
    cat = ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::"
           "OpaqueType<2u>, unsigned int, 4, 64, 64>(at::native::(anonymous namespace)::OpaqueType<2u>*, "
           "at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::"
           "OpaqueType<2u>, unsigned int, 64, 64>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, "
           "int, unsigned int)")
    for w in (14, 20, 48):
        s = short_name(cat, w)
        assert s.startswith("CatArrayBatch") and "namespace)" not in s and len(s) <= w
    rope = "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, int)"
    assert short_name(rope, 48) == "vllm::rotary_embedding_kernel<BFloat16>"
    assert short_name(rope, 26) == "rotary_embedding<BFloat16>"
    assert short_name(CK, 40) == "kentry<Rmsnorm2dFwd, Kargs>"
    assert short_name("nvjet_hsh_128x64", 30) == "nvjet_hsh_128x64"
    for w in (1, 2, 8, 14, 30):
        for n in (amd, cat, rope, CK):
            assert len(short_name(n, w)) <= max(w, 1)


# --- names of one table: what tells neighbours apart (issue 30) ---------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

from kerneldiff.core.names.display import distinct_short_names  # noqa: E402

NVJET = ["nvjet_sm90_tst_256x8_64x6_2x1_v_bz_TNT", "nvjet_sm90_tst_128x8_64x8_2x1_v_bz_TNT",
         "nvjet_sm90_tst_192x8_64x8_2x1_v_bz_TNT", "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT"]
CUDNN = ["cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0",
         "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0"]


@pytest.mark.parametrize("width", [14, 16, 20, 24, 32])
def test_names_of_one_table_keep_their_tile_configuration(width):
    # at 80x24 the same-kernels table listed eight `nvjet_sm90_tst_…`, the attention drill two
    # `cudnn_generate…ernel0_0`: the middle ellipsis removed the part that differs
    for names in (NVJET, CUDNN):
        short = distinct_short_names(names, width)
        assert len(set(short.values())) == len(names), short
        assert all(len(s) <= width for s in short.values())
    assert "256x8_64x6" in distinct_short_names(NVJET, 16)["nvjet_sm90_tst_256x8_64x6_2x1_v_bz_TNT"]
    assert "knob_3" in distinct_short_names(CUDNN, 40)[CUDNN[0]] or "3_64x64x128" in distinct_short_names(CUDNN, 40)[CUDNN[0]]


def test_names_that_do_not_collide_read_as_alone():
    names = ["DtoH", "nvjet_sm90_tst_256x8_64x6_2x1_v_bz_TNT", "triton_red_fused_add_mean_pow_rsqrt_14"]
    assert distinct_short_names(names, 18) == {n: short_name(n, 18) for n in names}


_word = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(prefix=st.lists(_word, min_size=1, max_size=4), suffix=st.lists(_word, max_size=3),
       middles=st.lists(_word, min_size=2, max_size=8, unique=True), width=st.integers(12, 60))
def test_distinct_names_differ_where_their_middles_fit(prefix, suffix, middles, width):
    head, tail = "_".join(prefix) + "_", "".join("_" + s for s in suffix)
    names = [head + m + tail for m in middles]
    short = distinct_short_names(names, width)
    assert all(len(s) <= width for s in short.values())
    if max(map(len, middles)) + 2 <= width:
        assert len(set(short.values())) == len(set(names)), short


@pytest.mark.slow   # real traces
@pytest.mark.real
def test_same_kernels_of_the_real_pair_read_apart_at_80_columns():
    from kerneldiff.core.session import Session
    from conftest import real_trace

    s = Session([real_trace("h100_llama_eager_sdpa.json.gz"), real_trace("h100_llama_compiled.json.gz")])
    s.load_all()
    names = [k.name for k in s.compare("all").same_kernels]
    nvjet = [n for n in names if n.startswith("nvjet")]
    assert len(nvjet) >= 4
    short = distinct_short_names(names, 18)
    assert len({short[n] for n in nvjet}) == len(set(nvjet))


# --- one owner: a name's parts (core/names/parts.py) ------------------------------------------

def _strip_args_char_by_char(s: str) -> str:
    """The reference: the bracket walk one character at a time (what display names used before)."""
    s = s.rstrip()
    if s.endswith(" const"):
        s = s[:-6].rstrip()
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        if s[i] == ")":
            depth += 1
        elif s[i] == "(":
            depth -= 1
            if depth == 0:
                return s[:i].rstrip() or s
    return s


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab()<> ,", max_size=40))
def test_strip_args_walks_brackets_as_one_character_at_a_time_would(name):
    from kerneldiff.core.names.parts import strip_args

    for s in (name, name + ")", name + " const", "k(" + name + ")"):
        assert strip_args(s) == _strip_args_char_by_char(s), s


def test_the_names_package_imports_nothing_else_of_kerneldiff():
    """core/names is below everything (core.errors prints file names with `visible`): it may
    import only itself and core.lazy_pattern (which imports nothing of kerneldiff: test_layering's
    lowest layer), so no layer above can make it part of an import cycle."""
    import ast
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "core" / "names"
    bad = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            bad += [f"{path.name}: {m}" for m in mods
                    if m.startswith("kerneldiff") and not m.startswith("kerneldiff.core.names")
                    and m != "kerneldiff.core.lazy_pattern"]
    assert not bad, bad
