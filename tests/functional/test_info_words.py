"""`kerneldiff info` at 80 columns speaks in words: a figure the trace does not give (the B200 vLLM
step annotation `execute_context_1(888_788544)_generation_0(0)` names no KV tokens) reads `unknown`,
never Python's `None`."""

from __future__ import annotations

import gzip
import json
import re

from kerneldiff.cli.main import main

from conftest import real_trace


def test_info_never_prints_none(capsys, monkeypatch):
    path = real_trace("b200_vllm_eager.json.gz")
    steps = [e["name"] for e in json.load(gzip.open(path))["traceEvents"]
             if e.get("name", "").startswith("execute_context")]
    assert steps and not re.search(r"kv|KV", steps[0])   # the annotation gives no KV tokens
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["info", str(path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "step shapes" in out and "KV tokens unknown" in out
    assert not re.search(r"\bNone\b", out), [ln for ln in out.splitlines() if "None" in ln]
