"""An inferred first layer holds a decoder layer's work, not the model's setup (issue 38, item 8):
the compiled Llama trace, whose layers are read from the kernel sequence. Which kernels are setup is
recounted from the raw events: a kernel name that runs once per forward pass (48 passes, 16 layers)
is not a layer's."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.real]

TRACE = Path(__file__).resolve().parents[3] / "shared" / "traces" / "h100_llama_compiled.json.gz"
PASSES, LAYERS = 48, 16


def test_setup_kernels_scheduled_inside_layer_0_stay_outside_layers():
    if not TRACE.exists():
        pytest.skip("../shared/traces/h100_llama_compiled.json.gz is absent")
    from kerneldiff.core.orchestration import load

    m = load(str(TRACE))
    assert m.num_layers == LAYERS and len(m.steps) == PASSES
    k = m.kernels
    raw = [e for e in json.load(gzip.open(TRACE))["traceEvents"] if e.get("cat") == "kernel"]
    assert len(raw) == int((k.kind == 0).sum())
    # Inductor numbers its kernels (..._rsqrt_9 in one layer, _16 in the next): the name without it
    names = np.array([re.sub(r"_[0-9]+$", "", m.strings[int(i)]) for i in k.name])
    # per pass, a kernel name that runs once is the model's setup (16 layers run theirs 16 times);
    # the fused embedding + input norm opens layer 0 (one kernel: it cannot be split)
    for s in range(PASSES):
        rows = np.flatnonzero(k.step == s)
        count = Counter(names[rows].tolist())
        once = rows[np.array([count[n] == 1 for n in names[rows]])]
        inside = [n for n in names[once[k.layer[once] >= 0]].tolist() if not re.search(r"embedding.*rsqrt", n)]
        assert not inside, (s, inside)
        assert any(n.startswith(("sm80_xmma_gemm_f32", "void gemmk1_kernel")) for n in names[once].tolist())
    # and layer 0 is as long as the other layers in every pass
    for s in range(PASSES):
        per = np.bincount(k.layer[(k.step == s) & (k.layer >= 0)], minlength=LAYERS)
        assert per[0] == np.median(per[1:]), (s, per.tolist())
    assert int((k.layer == 0).sum()) == np.median(np.bincount(k.layer[k.layer >= 0])[1:])
