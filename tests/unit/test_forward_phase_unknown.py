"""Prefill or a whole forward: a pass of many tokens is a prompt's (the model generates) or a whole
forward (a detector, a classifier). When the trace holds no decode pass, no module call naming the
model and no generate() frame, nothing says which: its passes read `unknown`, with why, never a
confident `prefill` (the OWLv2 traces without stacks read prefill before)."""

from __future__ import annotations

import gzip
import json

import pytest

from kerneldiff.core.model import PHASE_ID
from kerneldiff.core.orchestration import load
from kerneldiff.core.synth.pair import write_pair


def _load(tmp_path, **kw):
    a, _, _ = write_pair(tmp_path, annotation="hf-generate", layers=2, **kw)
    with gzip.open(a, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    frames = [e["name"] for e in events if e.get("cat") == "python_function"]
    return load(a, use_cache=False, workers=0), frames


def test_a_prompt_pass_without_stacks_is_unknown_and_says_why(tmp_path):
    m, frames = _load(tmp_path, steps=1, prefill_steps=1, with_stack=False)
    assert frames == []                                   # the raw events hold no module call nor frame
    assert [s.phase for s in m.steps] == ["unknown"]
    assert m.phase_source.endswith("unknown: prefill or a whole forward (no module call or generate frame "
                                   "says whether the model generates)")
    in_pass = m.kernels.step >= 0
    assert in_pass.any() and (m.kernels.phase[in_pass] == PHASE_ID["unknown"]).all()


@pytest.mark.parametrize("kw, want", [
    (dict(steps=1, prefill_steps=1, with_stack=True), ["prefill"]),           # LlamaForCausalLM and generate()
    (dict(steps=3, prefill_steps=1, with_stack=False), ["prefill", "decode", "decode"]),   # decode passes say it
])
def test_a_trace_that_says_the_model_generates_keeps_its_prefill(tmp_path, kw, want):
    m, frames = _load(tmp_path, **kw)
    assert [s.phase for s in m.steps] == want
    assert "unknown:" not in m.phase_source
    if kw["with_stack"]:
        assert any(f.endswith(": generate") for f in frames)
