"""Kernel alignment stays linear in time and memory whatever a layer holds (issue 16, third
corpus: one "layer" of 20,000 kernels against 9,000 took two minutes and 1.6 GB). Large layers are
aligned in a band, in integer scores; checked here against a plain Needleman–Wunsch with the same
scores, and end to end through the CLI under a CPU and memory bound."""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys

import pytest

from kerneldiff.core.compare import align as al

import hostile_corpus as hc

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

Q = al._Q


def _score(ca, na, oa, cb, nb, ob, comps) -> int:
    if na == nb:
        return Q["name"]
    if ca == cb:
        return Q["op"] if oa and ob and oa != ob else Q["category"]
    if cb in comps.get(ca, ()) or ca in comps.get(cb, ()):
        return Q["component"]
    return Q["mismatch"]


def _reference(a, b, comps) -> tuple[int, list]:
    """Plain Needleman–Wunsch over the integer scores, with align's tie-breaks; (score, pairs)."""
    m, n = len(a), len(b)
    g = Q["gap"]
    H = [[0] * (n + 1) for _ in range(m + 1)]
    T = [[0] * (n + 1) for _ in range(m + 1)]
    for j in range(1, n + 1):
        H[0][j], T[0][j] = g * j, 2
    for i in range(1, m + 1):
        H[i][0], T[i][0] = g * i, 1
        for j in range(1, n + 1):
            d = H[i - 1][j - 1] + _score(*a[i - 1], *b[j - 1], comps)
            u = H[i - 1][j] + g
            l = H[i][j - 1] + g
            H[i][j], T[i][j] = (d, 0) if d >= u and d >= l else (u, 1) if u >= l else (l, 2)
    pairs, i, j = [], m, n
    while i or j:
        t = T[i][j] if i and j else (1 if j == 0 else 2)
        if t == 0:
            pairs.append((i - 1, j - 1)); i -= 1; j -= 1
        elif t == 1:
            pairs.append((i - 1, None)); i -= 1
        else:
            pairs.append((None, j - 1)); j -= 1
    return H[m][n], pairs[::-1]


def _total(pairs, a, b, comps) -> int:
    s = 0
    for i, j in pairs:
        s += Q["gap"] if i is None or j is None else _score(*a[i], *b[j], comps)
    return s


def _seq(rng, n, cats=("GEMM", "Attention", "Norm", "Elementwise", "RMSNorm+GEMM"), names=12, ops=("", "aten::mm", "aten::bmm")):
    return [(c := rng.choice(cats), f"{c}_{rng.randrange(names)}", rng.choice(ops)) for _ in range(n)]


def _banded(a, b, comps):
    return al._banded([x[0] for x in a], [x[1] for x in a], [x[0] for x in b], [x[1] for x in b], comps,
                      [x[2] for x in a], [x[2] for x in b])


COMPS = {"RMSNorm+GEMM": ["Norm", "GEMM"]}


@pytest.mark.parametrize("seed", range(12))
def test_banded_alignment_equals_plain_needleman_wunsch_when_the_band_covers_the_table(seed):
    rng = random.Random(seed)
    a, b = _seq(rng, rng.randrange(1, 60)), _seq(rng, rng.randrange(1, 60))
    want_score, want = _reference(a, b, COMPS)
    got = _banded(a, b, COMPS)      # these sizes: the band is wider than the table
    assert got == want
    assert _total(got, a, b, COMPS) == want_score


@pytest.mark.parametrize("seed", range(6))
def test_a_narrow_band_still_gives_a_complete_ordered_alignment(seed, monkeypatch):
    """With the band far narrower than the table: every kernel once, in order; and where the best
    path stays near the diagonal (one side is the other with a few kernels fused away) the
    score is the optimum."""
    monkeypatch.setattr(al, "BAND_CELLS", 1)
    monkeypatch.setattr(al, "BAND_MIN", 8)
    rng = random.Random(100 + seed)
    b = _seq(rng, 400)
    a = [x for k, x in enumerate(b) if k % 37 != 5]          # a few kernels missing on one side
    got = _banded(a, b, COMPS)
    assert [i for i, _ in got if i is not None] == list(range(len(a)))
    assert [j for _, j in got if j is not None] == list(range(len(b)))
    assert _total(got, a, b, COMPS) == _reference(a, b, COMPS)[0]


def test_only_layers_past_the_full_table_are_banded():
    assert not al.coarse(2_000, 2_000) and al.coarse(2_001, 2_000) and al.coarse(20_000, 9_000)


def _one_layer_doc(n: int, seed: int) -> dict:
    """One step, two decoder-layer module calls of n kernels each (no attention anchors)."""
    ev, corr, t = [], 0, 5.0
    span = 40.0 * n * 2 + 100
    ev.append({"ph": "X", "cat": "user_annotation", "name": "execute_context_1(64)_generation_0(0)", "pid": 1,
               "tid": 1, "ts": 0.0, "dur": span})
    ev.append({"ph": "X", "cat": "python_function", "name": "nn.Module: LlamaForCausalLM_0", "pid": 1, "tid": 1,
               "ts": 1.0, "dur": span - 2, "args": {"Python id": 1, "Python parent id": -1}})
    for layer in range(2):
        ev.append({"ph": "X", "cat": "python_function", "name": f"nn.Module: LlamaDecoderLayer_{layer}", "pid": 1,
                   "tid": 1, "ts": t, "dur": 40.0 * n - 1, "args": {"Python id": 2 + layer, "Python parent id": 1}})
        for i in range(n):
            corr += 1
            name = [f"nvjet_tst_128x64_{(i * 7 + seed) % 97}", f"vectorized_elementwise_kernel<4, add_{(i * 3 + seed) % 89}>",
                    f"triton_poi_fused_mul_{i % 83}"][i % 3]
            ext = 10**6 + corr
            ev.append({"ph": "X", "cat": "cpu_op", "name": ["aten::mm", "aten::add", "aten::mul"][i % 3], "pid": 1,
                       "tid": 1, "ts": t + 1, "dur": 20.0, "args": {"External id": ext}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 3,
                       "dur": 5.0, "args": {"correlation": corr, "External id": ext}})
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": t + 10, "dur": 4.0 + i % 5,
                       "args": {"correlation": corr, "External id": ext, "device": 0, "stream": 7}})
            t += 40
    return {**hc.metadata(), "traceEvents": ev}


def _bounded():
    resource.setrlimit(resource.RLIMIT_CPU, (60, 61))
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def test_a_layer_of_twenty_thousand_kernels_compares_in_bounded_time_and_memory(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_one_layer_doc(20_000, 0)))
    b.write_text(json.dumps(_one_layer_doc(9_000, 1)))
    r = subprocess.run([sys.executable, "-m", "kerneldiff.cli", "compare", str(a), str(b), "--format", "json",
                        "--no-cache"], capture_output=True, text=True, timeout=600, preexec_fn=_bounded)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(r.stdout)
    assert any("too large for the full kernel alignment" in w and "20,000 × 9,000" in w for w in report["warnings"])
    pairs = [p for al_ in report["alignments"] for p in al_["pairs"]]
    assert sum(p["a_name"] is not None for p in pairs) == 2 * 20_000
    assert sum(p["b_name"] is not None for p in pairs) == 2 * 9_000
