"""The explorer on every hostile trace that loads: each tab, Enter on its first row, back out.

The CLI runs of the corpus (test_hostile.py) prove the reports; this walks the screens a user
would, comparing each loadable case against the corpus's good trace. Whatever the trace held, the
app must not crash, every tab must draw, and no control character from a trace may reach the
terminal (names are shown with visible escapes).
"""

from __future__ import annotations

import asyncio

import pytest

import hostile_corpus as hc
from kerneldiff.core.errors import TraceError
from kerneldiff.core.orchestration import load
from kerneldiff.tui.app import KernelDiffApp
from tui_driver import PreloadedLoader, screen_text, wait_for_main

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

# The cases whose content reaches the screens (strings, numbers, shapes of the data); the ones that
# differ only in how the bytes are packed (gzip members, key placement, truncation points) load
# into the same models, and walking all 68 costs minutes. A run over all of them passed.
SCREEN_CASES = {"raw_control_bytes", "markup_names", "escape_names", "[bold red]markup_filename", "invalid_utf8",
                "nan_infinity_literals", "overflowing_floats", "negative_durations", "huge_durations",
                "timestamps_beyond_int64", "all_zero_durations", "single_kernel", "no_kernels", "training_trace",
                "python_parent_cycle", "metadata_wrong_types", "strings_for_numbers", "names_fmoe_repeated",
                "names_inductor_16k", "names_mangled_5000_digits", "names_long_operator", "names_module_superscript"}
CASES = [c for c in hc.cases() if c.name in SCREEN_CASES]
CONTROL = ("\x1b", "\x9b", "\x07", "\u202e")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    good, built = hc.build(tmp_path_factory.mktemp("tui-hostile"), CASES)
    models = {str(good): load(good, use_cache=False)}
    for c in built:
        try:
            models[str(c.path)] = load(c.path, use_cache=False)
        except TraceError:
            pass                       # refused in one line: test_hostile checks the message
    return good, {c.name: c for c in built}, models


async def _walk(app: KernelDiffApp) -> list[str]:
    seen = []
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for_main(pilot)
        for tab in "1234567":
            await pilot.press(tab)
            await pilot.pause()
            seen.append(screen_text(app))
            depth = len(app.screen_stack)
            await pilot.press("enter")
            await pilot.pause(0.05)
            seen.append(screen_text(app))
            if len(app.screen_stack) > depth:        # opened a drill-down: one more level, then back
                await pilot.press("enter")
                await pilot.pause(0.05)
                seen.append(screen_text(app))
                while len(app.screen_stack) > depth:
                    await pilot.press("escape")
                    await pilot.pause()
        await pilot.press("p")                       # another phase recomputes every table
        await wait_for_main(pilot)
        seen.append(screen_text(app))
    return seen


def test_the_walked_cases_exist():
    assert {c.name for c in CASES} == SCREEN_CASES


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_every_tab_of_a_hostile_trace_draws(corpus, name):
    good, cases, models = corpus
    case = cases[name]
    if str(case.path) not in models:
        pytest.skip("refused at load (one line, checked by test_hostile)")
    app = KernelDiffApp([str(case.path), str(good)], use_cache=False, loader=PreloadedLoader(models))
    screens = asyncio.run(_walk(app))
    assert app.return_code in (None, 0)
    for text in screens:
        assert "Traceback" not in text
        bad = [ch for ch in CONTROL if ch in text]
        assert not bad, f"control characters {bad!r} reached the screen"
