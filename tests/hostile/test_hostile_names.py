"""Names are data (issue 16, round two): every parser of kernel, operator, annotation and tile names
stays bounded in CPU time whatever the name, reads ASCII digits only, and never raises; and the
test suite itself runs with a private cache and HOME, its children bounded by CPU time.

Work that could blow up runs in a forked child under RLIMIT_CPU and RLIMIT_AS (not a wall-clock
limit: the CI machine is a loaded 2-core box), so a regression shows as SIGXCPU, not a hang."""

from __future__ import annotations

import multiprocessing
import os
import re
import resource
import signal
import subprocess
import sys

import pytest

from kerneldiff.core.analysis import classify as cl
from kerneldiff.core.analysis.inductor_names import parse_inductor
from kerneldiff.core.analysis.rule_matcher import MAX_MATCH_CHARS, match_text
from kerneldiff.core.names.demangle import demangle, readable
from kerneldiff.core.names.display import short_name
from kerneldiff.core.names.parts import qualified_prefix, strip_args, strip_signature
from kerneldiff.core.analysis.phases import parse_step

import conftest
import hostile_corpus as hc
import hostile_cases_names

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

CPU_S = 30                  # CPU seconds for everything one child checks (linear code needs ~1)
HANG_S = 600                # wall-clock safety net only
LONG = 64 * 1024            # adversarial names are longer than any cap


def run_bounded(fn, *args, cpu_s: int = CPU_S, memory: int = 2 << 30) -> int:
    """Run fn(*args) in a forked child limited to `cpu_s` CPU seconds and `memory` more bytes of
    address space; its exit code (0: returned, 1: raised, -SIGXCPU: over the CPU budget)."""
    ctx = multiprocessing.get_context("fork")

    def child():
        with open("/proc/self/statm") as f:
            base = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (base + memory, base + memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        try:
            fn(*args)
        except BaseException:
            import traceback

            traceback.print_exc()
            os._exit(1)
        os._exit(0)

    p = ctx.Process(target=child)
    p.start()
    p.join(HANG_S)
    if p.exitcode is None:
        p.kill()
        p.join()
        pytest.fail(f"no exit after {HANG_S} s of wall-clock time")
    return p.exitcode


def assert_bounded(fn, *args, **kw) -> None:
    rc = run_bounded(fn, *args, **kw)
    assert rc != -signal.SIGXCPU, f"{fn.__name__} used more than its CPU budget"
    assert rc == 0, f"{fn.__name__} failed in the child (exit {rc}); its traceback is on stderr"


# --- adversarial names ------------------------------------------------------------------------

def _repeat(word: str, length: int = LONG) -> str:
    return (word * (length // max(len(word), 1) + 1))[:length]


def _words(source: str) -> list[str]:
    """The literal words a rule is built from (`fmoe`, `silu`, `rms`, `norm`...)."""
    return sorted(set(re.findall(r"[a-z0-9_:]{2,}", source.lower())))


def adversarial_names(rule_sources: list[str]) -> list[str]:
    """Long names made of what the rules look for: each word repeated, pairs of words alternated,
    all words in turn, with and without a last character that makes a match fail at the end."""
    words = sorted({w for s in rule_sources for w in _words(s)})
    names = [_repeat(c) for c in ("a", "_", "(", ")", "<", ">", ":", "9", "²", "٣", " ")]
    names += ["k(" + ")" * LONG, "_Z" + "9" * 5000, "_ZN" + "²" * LONG, "_ZN" + _repeat("3abc")]
    for w in words:
        names += [_repeat(w), _repeat(w) + "!", _repeat(w + "_"), _repeat(w + " ")]
    for a, b in zip(words, words[1:]):
        names.append(_repeat(a + b))
    names.append(_repeat("_".join(words)))
    return names


def _shipped_sources() -> list[str]:
    c = cl.Classifier.load()
    return ([rx for r in c.rules for rx in r.regex] + [w for r in c.rules for w in r.contains]
            + [rx for r in c.op_rules for rx in r.regex])


def _every_rule_on(names: list[str]) -> None:
    """Every kernel-name rule (each literal and regex, not just the first that matches), every
    operator rule, the Inductor parser and whole classification on every name."""
    c = cl.Classifier.load()
    for name in names:
        text = match_text(name)
        assert len(text) <= 2 * MAX_MATCH_CHARS + 1
        for _rule, literals, regexes in c._compiled:
            for lit in literals:
                _ = lit in text
            for rx in regexes:
                rx.search(text)
        for op in (name, "aten::" + name, "vllm::" + name, "_C::" + name):
            c._op_cache.clear()
            c.op_rule(op)
        c.classify(name)
        for cat in c.categories:
            c.matches(name, cat)
        parse_inductor("triton_red_fused_" + name)
        parse_inductor("triton_poi_fused_" + name[:3000] + "_0")


def test_every_registry_rule_runs_in_bounded_time_on_adversarial_names():
    names = adversarial_names(_shipped_sources())
    assert len(names) > 200
    assert_bounded(_every_rule_on, names)


def test_a_user_regex_that_backtracks_is_bounded_by_the_match_length(tmp_path):
    """A user's rule may be quadratic (`a\\w*b`); the length rules see bounds what it can cost."""
    reg = tmp_path / "user.toml"
    reg.write_text('[categories]\n"Mine" = { role = "other" }\n[[rules]]\nid = "mine.slow"\n'
                   'category = "Mine"\nregex = [\'x\\w*y\', \'x\\w*\\d\\w*y\']\n')

    def classify_all():
        c = cl.Classifier.load(str(reg))
        for name in ("x" * LONG, "x" * LONG + "!", "ab" * LONG):
            assert c.classify(name)[0] != "Mine"

    assert_bounded(classify_all, cpu_s=20)


# Patterns Python's re backtracks on without end: nested repeats, ambiguous alternation under a
# repeat, chains of overlapping repeats (found by the third hostile corpus: no syntactic check
# catches them all, so users' patterns run on RE2, linear whatever the pattern).
BACKTRACKING = [r"(\w+)+z", r"(a|b*)*c", r"(?:x{2,})+y", r"(?:(\w)*_)*q", r"(a|aa)*[bc]", r"a*a*a*a*a*[bc]",
                r"(?:a|aa)+$", r"(?:a+)+b", r"(.*a){20}"]


def _user_rules_on(reg: str, names: list[str]) -> None:
    c = cl.Classifier.load(reg)
    for name in names:
        c.classify(name)
        c.op_rule(name[: MAX_MATCH_CHARS])


@pytest.mark.parametrize("rx", BACKTRACKING)
def test_a_user_regex_that_backtracks_runs_in_linear_time(tmp_path, rx):
    """Accepted (it is a valid pattern) and matched by RE2: bounded on names built to make `re`
    backtrack, for kernel-name rules and operator rules alike; it still matches what it should."""
    reg = tmp_path / "user.toml"
    reg.write_text('[categories]\n"Mine" = { role = "other" }\n'
                   f"[[rules]]\nid = 'mine.name'\ncategory = 'Mine'\nregex = ['{rx}']\n"   # TOML literal strings
                   f"[[op_rules]]\nid = 'mine.op'\ncategory = 'Mine'\nregex = ['{rx}']\n")
    names = [ch * 4000 + "!" for ch in "awx_"] + ["ab" * 2000 + "!", "a" * 30000]
    assert_bounded(_user_rules_on, str(reg), names, cpu_s=20)
    c = cl.Classifier.load(str(reg))
    hit = next(s for s in ("wwz", "bbc", "xxxxy", "w_q", "aab", "aaac", "aaaa", "aab", "a" * 20) if re.fullmatch(rx, s))
    assert c.classify(hit) == ("Mine", "mine.name")
    assert c.op_rule(hit).id == "mine.op"


@pytest.mark.parametrize("rx", [r"(?=a)b", r"(a)\1", r"(?>a+)b", r"a++b"])
def test_a_user_regex_re2_cannot_run_is_refused_in_one_line(tmp_path, rx):
    from kerneldiff.core.errors import TraceError

    for kind in ("rules", "op_rules"):
        reg = tmp_path / f"{kind}.toml"
        reg.write_text(f"[[{kind}]]\nid = 'mine.slow'\ncategory = 'Other'\nregex = ['{rx}']\n")
        with pytest.raises(TraceError, match="cannot be matched in linear time") as e:
            cl.Classifier.load(str(reg))
        assert "\n" not in str(e.value)


def test_a_peaks_file_regex_runs_in_linear_time(tmp_path):
    """The peaks file's device patterns meet the trace's device name (the trace's own text)."""
    from kerneldiff.core.analysis.peaks import PeakTable

    f = tmp_path / "peaks.toml"
    f.write_text('[[gpu]]\nkey = "mine"\nmatch = ["(a|aa)*[bc]"]\nbf16 = 100\n')
    table = PeakTable.load(str(f))
    from types import SimpleNamespace

    info = SimpleNamespace(gpu="a" * 4000 + "!", device={}, vendor="nvidia", memory_gb=None)
    assert_bounded(table.find, info, cpu_s=20)
    f.write_text('[[gpu]]\nkey = "mine"\nmatch = ["(?<=x)y"]\nbf16 = 100\n')
    with pytest.raises(ValueError, match="cannot be matched in linear time"):
        PeakTable.load(str(f))


def _other_parsers(names: list[str]) -> None:
    from kerneldiff.core.aie.analysis import _natural_key
    from kerneldiff.core.compare.op_fusion import listed_atoms, op_atoms

    for name in names:
        demangle(name)
        readable(name)
        short_name(name)
        short_name(name, width=12)
        strip_signature(name)
        strip_args(name)
        qualified_prefix(name)
        parse_step(name)
        for prefix in ("execute_", "execute_context_1(", "execute_1_context_0(", "step[DECODE ", "ProfilerStep#"):
            parse_step(prefix + name)
        _natural_key(name)
        op_atoms("aten::" + name)
        op_atoms("_C::" + name)
        listed_atoms("poi", [name])


def test_name_parsers_run_in_bounded_time_on_adversarial_names():
    names = adversarial_names(["context_", "generation_", "flash_attn", "attention_forward", "bs=", "sq", "sk",
                               "scaled_dot_product"])
    names += ["k(" + ")" * 3_000_000, "execute_" + "context_1" * 5000, _repeat("flash_attn") + "!"]
    assert_bounded(_other_parsers, names)


@pytest.mark.parametrize("name, want", [
    ("_ZN²foo", "_ZN²foo"),                        # '²'.isdigit() is True but it is not a length
    ("_ZN٣fooE3barv", "_ZN٣fooE3barv"),            # nor an Arabic-Indic digit
    ("_Z" + "9" * 5000, "_Z" + "9" * 5000),        # beyond int()'s 4,300-digit limit
    ("_ZN3foo" + "9" * 5000 + "E", "foo"),
    ("_ZN5aiter3fooIiEEvv", "void aiter::foo<int>()"),
])
def test_demangler_reads_ascii_digits_only(name, want):
    assert demangle(name) == want
    assert isinstance(readable(name), str) and isinstance(short_name(name), str)


@pytest.mark.parametrize("name", ["_ZN²foo", "_ZN٣fooE", "_Z" + "9" * 5000, "_ZN" + "1" * 40 + "x"])
def test_qualified_prefix_reads_ascii_digits_only(name):
    assert qualified_prefix(name) == name
    assert cl.Classifier.load().classify(name)[0] in cl.Classifier.load().categories


@pytest.mark.parametrize("name, want", [
    ("execute_context_1(64_64)_generation_0(0)", ("prefill", "vllm", 1, 64, None)),
    ("step[DECODE bs=32]", ("decode", "sglang", 32, 32, None)),
    ("step[DECODE bs=２]", ("decode", "sglang", None, None, None)),      # full-width: not a number
    ("step[DECODE bs=٣ toks=12]", ("decode", "sglang", None, 12, None)),
    ("execute_context_²(1)_generation_0(0)", None),
    ("execute_context_1(" + "9" * 5000 + ")_generation_0(0)", ("prefill", "vllm", 1, None, None)),  # token count unknown
    ("execute_context_1(" + "9" * 40 + ")_generation_0(0)", ("prefill", "vllm", 1, None, None)),
])
def test_step_annotations_read_ascii_numbers_only(name, want):
    assert parse_step(name) == want


def test_inductor_index_is_ascii_and_bounded():
    assert parse_inductor("triton_poi_fused_add_mul_7").index == 7
    assert parse_inductor("triton_poi_fused_add_mul_" + "9" * 40).index is None
    k = parse_inductor("triton_poi_fused_add_²")
    assert k is not None and k.index is None and "²" in "".join(k.ops)
    long = parse_inductor("triton_red_fused_" + "_".join(["mean", "pow"] * 2000) + "_0")
    assert long.kind == "red" and long.index is None and set(long.ops) == {"mean", "pow"}


def test_strip_args_is_exact_and_linear():
    assert strip_args("void f<T>(int, T*)") == "void f<T>"
    assert strip_args("f(a)(b)") == "f(a)"
    assert strip_args("f(a(b)c)") == "f"
    assert strip_args("k(" + ")" * 10) == "k(" + ")" * 10     # unbalanced: unchanged
    assert strip_args("(x)") == "(x)"

    def many():
        for _ in range(20):
            assert strip_args("k(" + ")" * 3_000_000).startswith("k(")
            assert strip_args("(" * 3_000_000 + ")") == "(" * 2_999_999

    assert_bounded(many, cpu_s=20)


def test_aie_tiles_sort_naturally_whatever_their_digits():
    from kerneldiff.core.aie.analysis import _natural_key

    tiles = ["tile10", "tile9", "tile0009", "²", "tile" + "9" * 5000, "tile٣", "tile1,2", "tile1,10"]
    got = sorted(tiles, key=_natural_key)
    assert got.index("tile9") < got.index("tile10") < got.index("tile" + "9" * 5000)
    assert got.index("tile1,2") < got.index("tile1,10")


# --- the corpus cases through the CLI ---------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    good, cases = hc.build(tmp_path_factory.mktemp("names"), hostile_cases_names.cases())
    return good, {c.name: c for c in cases}


def _cli(*args: str) -> subprocess.CompletedProcess:
    def limits():
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_S, CPU_S + 1))
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    return subprocess.run([sys.executable, "-m", "kerneldiff.cli", *args], capture_output=True, timeout=HANG_S,
                          preexec_fn=limits, env={**os.environ, "COLUMNS": "200"})


def test_aie_analysis_of_tiles_named_with_odd_digits(built):
    _, cases = built
    path = cases["names_aie_tile_superscript"].path
    r = _cli("aie", str(path))
    assert r.returncode == 0, r.stderr.decode()[-500:]
    assert r.stderr == b"" and "²" in r.stdout.decode()


def test_cut_names_are_counted_in_one_warning_and_shown_in_full(built):
    from kerneldiff.core.orchestration import load

    _, cases = built
    m = load(cases["names_fmoe_repeated"].path, use_cache=False)
    cut = [w for w in m.warnings if "matched against the category rules" in w]
    assert cut == [f"1 kernel name(s) longer than 4,096 characters: only their first 4,096 were matched "
                   "against the category rules (names are shown in full)"]
    from kerneldiff.core.ingest.longstrings import NAME_CAP, cut_name

    # the model keeps the name far past the matching cut (up to the reader's storage bound, marked)
    assert cut_name("fmoe" * 60_000) in [m.strings[i] for i in range(len(m.strings))]
    assert NAME_CAP > 4096
    good = load(built[0], use_cache=False)
    assert not any("matched against the category rules" in w for w in good.warnings)


# --- the suite's own hygiene -------------------------------------------------------------------

def test_a_cached_load_writes_inside_the_private_cache(tmp_path):
    from kerneldiff.core.ingest.cache import cache_dir
    from kerneldiff.core.orchestration import load

    p = tmp_path / "t.json"
    p.write_bytes(hc.dumps(hc.good_doc()))
    load(p, use_cache=True)
    entries = list(cache_dir().glob("*.kdc"))
    assert entries and all(e.resolve().is_relative_to(conftest.TEST_HOME.resolve()) for e in entries)


def test_the_hostile_harness_stops_a_run_by_cpu_time(monkeypatch):
    """A run that spins is ended by RLIMIT_CPU (SIGXCPU) and reported as over its CPU budget."""
    import test_corpus as th

    monkeypatch.setattr(th, "CPU_LIMIT_S", 1)

    def spin():
        th._limit_memory(th._address_space())
        while True:
            pass

    p = multiprocessing.get_context("fork").Process(target=spin)
    p.start()
    p.join(HANG_S)
    assert p.exitcode == -signal.SIGXCPU
    with pytest.raises(AssertionError, match="CPU time"):
        th.check_contract(hc.Case("spin", "a run that spins", "load"), th.Run(p.exitcode, b"", b""), "load")
