"""Lookups over cpu_ops and names, made once instead of once per pass or by a sort, give what the
plain per-pass search gives (real traces: with shapes, compiled, and a ROCm one)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import real_trace
from kerneldiff.core.analysis import passes
from kerneldiff.core.analysis.timeline import name_mask, name_masks
from kerneldiff.core.orchestration import load


@pytest.mark.slow
@pytest.mark.parametrize("name", ["h100_llama_eager_sdpa.json.gz", "h100_qwen1.5-0.5b_hf.json.gz",
                                  "mi300x_qwen1.5-0.5b_hf.json.gz"])
def test_first_op_of_each_pass_and_name_masks(name, classifier):
    m = load(str(real_trace(name)), classifier=classifier, use_cache=False)
    c = m.cpu_ops
    for ops in (passes.EMBEDDING_OPS, passes.GEMM_OPS):
        ids = passes._strings_matching(m, c.name, lambda s: s in ops)
        rows = passes._rows_named(m, ids)
        assert len(m.steps) and len(rows)
        for s in m.steps:
            plain = np.flatnonzero(np.isin(c.name, ids) & (c.ts >= s.ts) & (c.ts <= s.ts + s.dur))
            want = int(plain[np.argmin(c.ts[plain])]) if len(plain) else -1
            assert passes._first_op_in(m, rows, s) == want
    for table in (m.launches, m.cpu_ops, m.kernels):
        for pattern in (re.compile(r"^(cuda|hip)"), re.compile(r"mm|gemm", re.I)):
            names = table.name.astype(np.int64)
            names[::7] = -1    # rows without a name
            ids, inv = np.unique(names, return_inverse=True)
            want = np.array([i >= 0 and bool(pattern.search(m.strings[int(i)])) for i in ids.tolist()], bool)[inv]
            assert np.array_equal(name_mask(m, names, pattern), want)
        pats = [re.compile(r"^(cuda|hip)"), re.compile(r"mm|gemm", re.I), re.compile("Torch-Compiled")]
        assert all(np.array_equal(got, name_mask(m, table.name, p))
                   for got, p in zip(name_masks(m, table.name, pats), pats))   # several patterns, one look
