"""No test asserts on how fast something ran (speed belongs in bench/ scripts that print figures):
no assertion reads a speed clock, and Hypothesis has no deadline for any example."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

TESTS = Path(__file__).resolve().parents[1]
# clocks that measure speed; time.monotonic() bounds the wait for a process to end (a hang guard)
SPEED_CLOCKS = {"perf_counter", "perf_counter_ns", "process_time", "process_time_ns", "time", "time_ns",
                "thread_time", "thread_time_ns"}


def _timed(tree: ast.AST) -> list[int]:
    """Lines of assertions that call a speed clock (`time.perf_counter()`, `perf_counter()`…), or
    of Hypothesis settings given a deadline other than None."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            for call in ast.walk(node):
                if isinstance(call, ast.Call):
                    f = call.func
                    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                    owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else "time"
                    if name in SPEED_CLOCKS and owner == "time":
                        out.append(node.lineno)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "settings":
            for kw in node.keywords:
                if kw.arg == "deadline" and not (isinstance(kw.value, ast.Constant) and kw.value.value is None):
                    out.append(node.lineno)
    return out


def test_no_assertion_reads_a_speed_clock():
    bad = [f"{p.relative_to(TESTS)}:{n}" for p in sorted(TESTS.rglob("*.py"))
           for n in _timed(ast.parse(p.read_text(encoding="utf-8")))]
    assert not bad, bad


def test_the_checker_sees_a_planted_timed_assertion():
    src = ("import time\nt = time.perf_counter()\nassert time.perf_counter() - t < 0.5\n"
           "assert time.monotonic() < deadline\n@settings(deadline=500)\ndef f(): pass\n"
           "@settings(deadline=None)\ndef g(): pass\n")
    assert _timed(ast.parse(src)) == [3, 5]


def test_hypothesis_gives_no_example_a_deadline():
    assert settings().deadline is None


@given(st.integers())
def test_an_example_with_no_settings_of_its_own_has_no_deadline(_):
    assert settings().deadline is None
