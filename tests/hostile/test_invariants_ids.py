"""Issue 26: names and clocks that carry no meaning change nothing — a constant time shift (one
past 2^52 µs too, where only a warning is added), pids, tids, streams and join ids renumbered
(moved, or mapped to random values in the same order), and events no analysis reads added."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import invariants as inv
from conftest import real_trace

RESOLUTION = "where a 64-bit float resolves only"


def relabelled(doc: dict, seed: int) -> dict[str, dict]:
    return {
        "shifted by 1 s": inv.shifted(doc, 10**6),
        "shifted back by 1 hour": inv.shifted(doc, -3.6e9),
        "ids moved": inv.renumbered(doc),
        "ids mapped": inv.renumbered(doc, seed=seed),
        "ignorable events added": inv.with_ignorable(doc, seed),
    }


@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), style=st.sampled_from(["hf-generate", "vllm", "sglang", "hf"]),
       vendor=st.sampled_from(["nvidia", "amd"]))
def test_shifts_ids_and_ignorable_events_change_nothing_on_generated_traces(tmp_path_factory, seed, style, vendor):
    root = tmp_path_factory.mktemp("ids")
    doc = inv.synth_doc(root / "src", seed, style, vendor, strings_numbers=seed % 3 == 0)
    ref = inv.Reference(root, doc)
    for what, other in relabelled(doc, seed).items():
        assert inv.diff(ref.answer, ref.of(other)) == [], what


@pytest.mark.parametrize("name", inv.real_params(quick=inv.QUICK_REAL[:4], slow=[
    "h100_qwen1.5-0.5b_hf.json.gz", "b200_vllm_eager.json.gz", "v100_test.json.gz", "a100_control.json.gz"]))
def test_shifts_ids_and_ignorable_events_change_nothing_on_real_traces(tmp_path, name):
    doc = inv.read_doc(real_trace(name))
    ref = inv.Reference(tmp_path, doc)
    for what, other in relabelled(doc, 26).items():
        assert inv.diff(ref.answer, ref.of(other)) == [], what


def _without_resolution_warning(answer: dict) -> tuple[dict, int]:
    """The answer with the warning about a double's resolution taken out, and how many there were."""
    n = 0

    def walk(v):
        nonlocal n
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            keep = [x for x in v if not (isinstance(x, str) and RESOLUTION in x)]
            n += len(v) - len(keep)
            return [walk(x) for x in keep]
        return v
    return walk(answer), n


@pytest.mark.parametrize("name", ["synth", pytest.param("v100_test.json.gz", marks=pytest.mark.slow)])
def test_a_shift_past_2_pow_52_changes_nothing_but_says_the_resolution(tmp_path, name):
    """Integer-µs timestamps shifted by an integer past 2^52 are still exact doubles (below 2^53):
    every figure is the same; the trace now reaches where a double resolves 1 µs, which is said."""
    doc = inv.synth_doc(tmp_path / "src", 5) if name == "synth" else inv.read_doc(real_trace(name))
    ref = inv.Reference(tmp_path, doc)
    got, warned = _without_resolution_warning(ref.of(inv.shifted(doc, 2**52)))
    assert warned >= 1
    assert inv.diff(ref.answer, got) == []
