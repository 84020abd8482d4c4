"""Ground truth: generated pairs with planted differences must be found — and nothing much else.

Prints precision and recall over all generated pairs (run with -s to see them)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kerneldiff.core.compare.engine import compare
from kerneldiff.core.orchestration import load
from kerneldiff.core.synth.pair import write_pair

PAIRS = [
    dict(seed=1),                                                    # AMD vs NVIDIA, dense, eager
    dict(seed=2, moe=True, graph=True, tp=2),                        # MoE, graph replay, all-reduce
    dict(seed=3, vendor_a="nvidia", vendor_b="amd", annotation="vllm-old", prefill_steps=2),
    dict(seed=4, vendor_a="nvidia", vendor_b="nvidia", annotation="sglang", layers=12),
    dict(seed=5, vendor_a="amd", vendor_b="amd", annotation="hf", steps=4, gzip=False),
]
SCORE = {"expected": 0, "found": 0, "unplanted": 0}


def _side(s: str) -> str:
    return s.lower()


def _expected(truth: dict) -> list[tuple[str, str, str]]:
    """(kind, fused side, category) the comparison must report."""
    p = truth["planted"]
    out = []
    for f in p["fusions"]:
        if f["type"] == "explicit":
            out.append(("fused_category", _side(f["fused_side"]), f["fused_category"]))
        else:
            out.append(("sequence", _side(f["fused_side"]), f["unique_category"]))
    ci = p["count_imbalance"]
    out.append(("count_imbalance", _side(ci["less_side"]), ci["category"]))
    mk = p["missing_kernel"]
    out.append(("missing_kernel", _side(mk["missing_side"]), mk["category"]))
    return out


def _matches(f, kind: str, side: str, cat: str) -> bool:
    if f.kind != kind or f.fused_side != side:
        return False
    if kind == "sequence":
        return cat in f.component_categories
    return f.fused_category == cat


@pytest.fixture(scope="module", params=PAIRS, ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
def generated(request, tmp_path_factory, classifier):
    out = tmp_path_factory.mktemp("pair")
    kw = dict(layers=8, steps=6)
    kw.update(request.param)
    pa, pb, pt = write_pair(out, **kw)
    truth = json.loads(pt.read_text())
    a, b = load(pa, classifier=classifier), load(pb, classifier=classifier)
    return truth, a, b, compare(a, b, classifier=classifier)


def test_segmentation_finds_exactly_L_layers_in_every_step(generated):
    truth, a, b, _ = generated
    L, S = truth["model"]["layers"], truth["steps"]
    for m in (a, b):
        assert len(m.steps) == S
        assert [s.phase for s in m.steps] == truth["phases"] or truth["annotation_style"] == "hf"
        assert m.num_layers == L and m.architecture == "transformer"
        k = m.kernels
        for s in range(S):
            layers = np.unique(k.layer[(k.step == s) & (k.layer >= 0)])
            assert layers.tolist() == list(range(L)), f"step {s}"


def test_planted_slow_layer_ranks_first(generated):
    truth, _, _, c = generated
    slow = truth["planted"]["slow_layer"]
    assert c.layers[0].layer == slow["layer"]
    assert (c.layers[0].gap_us > 0) == (slow["side"].lower() == "a")


def test_planted_differences_are_found_with_the_right_side(generated):
    truth, _, _, c = generated
    expected = _expected(truth)
    found = [e for e in expected if any(_matches(f, *e) for f in c.fusions)]
    unplanted = [f for f in c.fusions if not any(_matches(f, *e) for e in expected)]
    SCORE["expected"] += len(expected)
    SCORE["found"] += len(found)
    SCORE["unplanted"] += len(unplanted)
    recall = SCORE["found"] / SCORE["expected"]
    precision = SCORE["found"] / max(SCORE["found"] + SCORE["unplanted"], 1)
    print(f"\nfusion findings so far: recall {recall:.0%}, precision {precision:.0%} "
          f"({SCORE['found']}/{SCORE['expected']} planted found, {SCORE['unplanted']} not planted)")
    assert found == expected, f"missed: {[e for e in expected if e not in found]}; got {[(f.kind, f.fused_side, f.fused_category) for f in c.fusions]}"
    assert len(unplanted) <= 1, [(f.kind, f.fused_side, f.fused_category, f.evidence) for f in unplanted]
    for f in c.fusions:
        assert f.evidence and 0 < f.confidence <= 1
        assert f.estimated_saving is not None and f.estimated_saving.total_us >= 0


def test_missing_kernel_shows_as_a_gap_in_the_aligned_pairs(generated):
    truth, _, _, c = generated
    mk = truth["planted"]["missing_kernel"]
    present = mk["present_side"].lower()
    assert c.alignments, "no aligned layers: nothing to find the gap in"
    for al in c.alignments:
        gaps = [p for p in al.pairs if getattr(p, f"{present}_name") == mk["name"]
                and getattr(p, f"{'b' if present == 'a' else 'a'}_name") is None]
        assert gaps, f"layer {al.layer}: the missing kernel is not a gap"


def test_self_compare_of_a_generated_trace_has_no_findings(generated, classifier):
    _, a, _, _ = generated
    c = compare(a, a, classifier=classifier)
    assert c.fusions == [] and all(l.ratio == pytest.approx(1.0) for l in c.layers)
