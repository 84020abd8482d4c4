"""No pass of the compiled Llama trace compiles (issue 38): its compile ids 0/0, 0/1 and 0/2 (2
recompiles) were compiled before the profiler's window, so all 48 passes are steady.

The proof is read from the raw events, with Python stacks recorded (`python_function` frames):
- none of TorchDynamo's or Inductor's compile frames is in the trace (convert_frame's `_compile`,
  `compile_inner`, `backend_compile`, `compile_fx`, `fx_codegen_and_compile`, AOT's
  `create_aot_dispatcher_function`, `OutputGraph.call_user_compiler`);
- the first call of each compile id (`Torch-Compiled Region: 0/0` in pass 0, `0/1` in pass 1) runs
  the already compiled graph (`## Call CompiledFxGraph …`) inside it, as every later pass does;
- Triton's frames that look like compiling (`triton/compiler/compiler.py(…): __init__`) come as
  often in every pass (per launch: the kernel's launch metadata), never more in a first pass."""

from __future__ import annotations

import bisect
import gzip
import json
import re
from collections import Counter

import pytest

from conftest import real_trace
from kerneldiff.core.orchestration import load

COMPILED = "h100_llama_compiled.json.gz"
COMPILE_FRAMES = re.compile(
    r"_dynamo/convert_frame\.py\(\d+\): _compile\b|compile_inner|backend_compile|_inductor/compile_fx\.py|"
    r"fx_codegen_and_compile|create_aot_dispatcher_function|call_user_compiler")


@pytest.mark.real
@pytest.mark.slow
def test_no_pass_of_the_compiled_llama_compiles():
    with gzip.open(real_trace(COMPILED), "rt", encoding="utf-8") as f:
        ev = json.load(f)["traceEvents"]
    frames = [e for e in ev if e.get("cat") == "python_function"]
    assert len(frames) > 100_000                                    # stacks were recorded
    assert not [e["name"] for e in frames if COMPILE_FRAMES.search(e.get("name", ""))]
    calls = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in frames
                   if e["name"] == "nn.Module: LlamaForCausalLM_0")
    starts = [c[0] for c in calls]

    def pass_of(e) -> int:
        return bisect.bisect_right(starts, float(e["ts"])) - 1

    regions = sorted((e for e in ev if e.get("name", "").startswith("Torch-Compiled Region: ")),
                     key=lambda e: float(e["ts"]))
    ids = [e["name"].rsplit(" ", 1)[1] for e in regions]
    assert ids[:3] == ["0/0", "0/1", "0/2"] and set(ids[3:]) == {"0/2"}      # two recompiles
    assert [pass_of(e) for e in regions] == list(range(48))
    graphs = [e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("## Call CompiledFxGraph")]
    for r in regions:   # each region, the first calls of 0/0 and 0/1 included, runs a compiled graph
        t0, t1 = float(r["ts"]), float(r["ts"]) + float(r["dur"])
        assert sum(t0 <= float(g["ts"]) <= t1 for g in graphs) == 1
    per_pass = Counter(pass_of(e) for e in frames if re.match(r"triton/compiler/compiler\.py\(\d+\): __init__", e["name"]))
    assert len(set(per_pass.values())) == 1 and len(per_pass) == 48
    m = load(real_trace(COMPILED), use_cache=False, workers=0)
    assert [s.kind for s in m.steps] == ["steady"] * 48
