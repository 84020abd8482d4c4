"""Issue 26: how the JSON is written changes nothing kerneldiff says — key order, whitespace, the
spelling of numbers, escaped keys and strings, metadata before or after the events."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import invariants as inv
from conftest import real_trace
from kerneldiff.core.ingest.probe import probe

NUMBER_KEYS = ("ts", "dur", "pid", "tid", "correlation", "External id", "stream", "device")


def spellings(doc: dict, seed: int) -> dict[str, dict]:
    """The same trace written in other ways: name -> Reference.of keywords."""
    return {
        "keys in another order": {"doc": inv.keys_reordered(doc, seed)},
        "indented": {"doc": doc, "indent": 3},
        "no blanks": {"doc": doc, "separators": (",", ":")},
        "metadata after the events": {"doc": inv.meta_last(doc)},
        "numbers with exponents": {"doc": None, "text": inv.renumbered_text(doc, "exp", NUMBER_KEYS)},
        "numbers with trailing zeros": {"doc": None, "text": inv.renumbered_text(doc, "zeros", NUMBER_KEYS)},
        "escaped keys": {"doc": None, "text": inv.escaped_json(doc)},
        "escaped keys and strings": {"doc": None, "text": inv.escaped_json(doc, values=True)},
    }


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), style=st.sampled_from(["hf-generate", "vllm", "sglang", "hf"]),
       float_ts=st.booleans())
def test_spelling_changes_nothing_on_generated_traces(tmp_path_factory, seed, style, float_ts):
    root = tmp_path_factory.mktemp("spell")
    doc = inv.synth_doc(root / "src", seed, style, float_ts=float_ts, strings_numbers=seed % 2 == 1)
    ref = inv.Reference(root, doc)
    for what, kw in spellings(doc, seed).items():
        assert inv.diff(ref.answer, ref.of(**kw)) == [], what


@pytest.mark.slow
@pytest.mark.parametrize("name", inv.real_params(quick=inv.QUICK_REAL[:4], slow=[
    "h100_qwen1.5-0.5b_hf.json.gz", "mi300x_qwen1.5-0.5b_hf.json.gz", "b200_vllm_eager.json.gz", "v100_test.json.gz",
    "a100_control.json.gz"]))
def test_spelling_changes_nothing_on_real_traces(tmp_path, name):
    doc = inv.read_doc(real_trace(name))
    ref = inv.Reference(tmp_path, doc)
    for what, kw in spellings(doc, 26).items():
        assert inv.diff(ref.answer, ref.of(**kw)) == [], what


def _probe_view(path) -> tuple:
    i = probe(str(path))
    return i.gpu, i.vendor, i.device_count, i.device, i.runtime, i.distributed, i.with_stack, i.record_shapes


@pytest.mark.parametrize("where", ["before", "after"])
def test_escaped_metadata_keys_are_the_same_keys_for_the_probe(tmp_path, where):
    """`"\\u0064eviceProperties"` is `deviceProperties`: the probe (what the start screen and
    `info --probe-only` show) reads it wherever the metadata is, before or after the events."""
    doc = inv.synth_doc(tmp_path / "src", 3, "hf")
    doc = doc if where == "before" else inv.meta_last(doc)
    plain = inv.write_doc(tmp_path / "plain.json", doc)
    escaped = tmp_path / "escaped.json"
    escaped.write_text(inv.escaped_json(doc, top_only=True))
    assert escaped.read_text().count("\\u0064eviceProperties") == 1
    want = _probe_view(plain)
    assert want[0] and want[1] != "other"
    assert _probe_view(escaped) == want


def test_a_nested_key_named_like_metadata_is_not_the_metadata(tmp_path):
    """Metadata after the events, with a member that holds its own `hip_runtime_version` (a
    package list, say): the top-level keys count, not the nested one (it made an NVIDIA trace AMD)."""
    doc = inv.meta_last(inv.synth_doc(tmp_path / "src", 4, "hf", vendor="nvidia"))
    want = _probe_view(inv.write_doc(tmp_path / "plain.json", doc))
    doc = {**doc, "environment": {"hip_runtime_version": 1, "deviceProperties": []}}
    assert _probe_view(inv.write_doc(tmp_path / "t.json", doc)) == want
    assert want[1] == "NVIDIA" and want[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["h100_qwen1.5-0.5b_hf.json.gz"])
def test_real_trace_with_escaped_metadata_keys_probes_the_same(tmp_path, name):
    """The HF traces write deviceProperties after the events."""
    doc = inv.read_doc(real_trace(name))
    escaped = tmp_path / "escaped.json"
    escaped.write_text(inv.escaped_json(doc, top_only=True))
    assert _probe_view(escaped) == _probe_view(inv.write_doc(tmp_path / "plain.json", doc))
    assert probe(str(escaped)).gpu == "NVIDIA H100 80GB HBM3"
