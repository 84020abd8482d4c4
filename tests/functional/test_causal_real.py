"""is_causal as the attention ops recorded it (their Concrete Inputs), on the real Llama traces:
the raw events are read here, independently of our loader, and set against the attention shapes."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.real]

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"
EAGER, COMPILED = "h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz"
OP = "aten::_cudnn_attention_forward"      # the op that launches the cuDNN kernels on both
IS_CAUSAL = 10                             # its is_causal argument (PyTorch's signature)


def _need(name: str) -> Path:
    p = TRACES / name
    if not p.exists():
        pytest.skip(f"../shared/traces/{name} is absent")
    return p


def _raw_causal(name: str) -> Counter:
    """(seq_q, seq_k, is_causal text) -> calls, from the raw cpu_op events."""
    out: Counter = Counter()
    for e in json.load(gzip.open(_need(name)))["traceEvents"]:
        if e.get("cat") == "cpu_op" and e.get("name") == OP:
            q, k = e["args"]["Input Dims"][0], e["args"]["Input Dims"][1]
            out[(q[2], k[2], e["args"]["Concrete Inputs"][IS_CAUSAL])] += 1
    return out


def test_causality_is_read_from_the_recorded_arguments():
    raw_a, raw_b = _raw_causal(EAGER), _raw_causal(COMPILED)
    r = subprocess.run([sys.executable, "-m", "kerneldiff.cli", "compare", str(_need(EAGER)), str(_need(COMPILED)),
                        "--table", "attention-shapes", "--format", "json"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(r.stdout)
    for side, raw in (("a", raw_a), ("b", raw_b)):
        for (sq, sk, causal), n in raw.items():
            got = [x for x in rows if x["seq_q"] == sq and x["seq_k"] == sk and x[f"{side}_calls"]]
            assert len(got) == 1, (side, sq, sk)
            x = got[0]
            assert x[f"{side}_calls"] == n
            # the prefill: is_causal True on eager (no mask), False on compiled (an explicit mask)
            assert x["causal"] == (causal == "True" and sq > 1)
            assert x["causal_assumed"] is False          # read, not assumed
            full = 2.0 * 4 * 32 * sq * sk * (64 + 64)
            assert x["flops_per_call"] == pytest.approx(full / 2 if x["causal"] else full)
    assert raw_a[(256, 256, "True")] == 16 and raw_b[(256, 256, "False")] == 16   # the case worth testing exists
