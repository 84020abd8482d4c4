"""Hostile names, round two: what the analysis reads from names must neither crash on odd digits
nor take time that grows with the square of a name. Each heavy case runs in a child bounded by
CPU time (RLIMIT_CPU), not wall time, so a loaded machine cannot fail it."""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap

import pytest

from kerneldiff.core.aie.analysis import _natural_key as natural_key
from kerneldiff.core.analysis.classify import MATCH_CHARS, Classifier
from kerneldiff.core.analysis.demangle import demangle
from kerneldiff.core.analysis.phases import parse_step

CPU_SECONDS = 20


def _bounded(code: str) -> subprocess.CompletedProcess:
    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))

    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], preexec_fn=limit, capture_output=True,
                          text=True)


@pytest.mark.parametrize("name", ["_ZN²foo", "_Z" + "5" * 5000, "_Z٣abc", "_ZN" + "9" * 30 + "fooE"],
                         ids=["superscript", "5000-digits", "arabic-indic", "30-digits"])
def test_demangler_gives_odd_digits_back_unchanged(name):
    assert demangle(name) == name


def test_demangler_still_demangles():
    assert demangle("_ZN3foo3barEv") == "foo::bar()"


HUGE = {"fmoe": '"fmoe" * 60000', "rmsnorm": '"rmsnorm" * 40000',
        "triton_red": '"triton_red_fused_" + "_mean_pow" * 1800', "parens": '"k(" + ")" * 3_000_000'}


@pytest.mark.parametrize("expr", list(HUGE.values()), ids=list(HUGE))
def test_classifying_a_huge_name_is_bounded(expr):
    run = _bounded(f"""
        from kerneldiff.core.analysis.classify import Classifier
        from kerneldiff.core.analysis.names import strip_signature
        name = {expr}
        strip_signature(name)
        print(*Classifier.load(None).classify(name))
    """)
    assert run.returncode == 0, run.stderr[-500:]
    assert run.stdout.strip()


def test_a_long_name_is_classified_by_its_head():
    c = Classifier.load(None)
    head = "rms_norm_kernel"
    assert c.classify(head + "x" * (3 * MATCH_CHARS))[0] == c.classify(head)[0]


def test_tile_names_sort_whatever_their_digits():
    tiles = ["core_trace for tile 2", "core_trace for tile ²", "core_trace for tile 10", "tile " + "7" * 5000, "tile 1"]
    ordered = sorted(tiles, key=natural_key)
    assert ordered.index("core_trace for tile 2") < ordered.index("core_trace for tile 10")
    assert set(ordered) == set(tiles)


def test_a_step_annotation_with_a_5000_digit_number_does_not_crash():
    parse_step("execute_context_" + "1" * 5000 + "(1)_generation_0(0)")
    parse_step("execute_1_context_" + "٣" * 50 + "(1)_generation_0(0)")
    assert parse_step("execute_context_1(64)_generation_0(0)") is not None
