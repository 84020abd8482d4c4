"""What the layer views stand on (core/compare/engine.py): the kernels outside every layer as a row of
their own, a comparison where only one side has layers, and which passes a layer's kernel pairs are
measured over."""

from __future__ import annotations

import numpy as np
import pytest

from kerneldiff.core.compare.engine import compare
from kerneldiff.core.demo import DEMO_A, DEMO_B

from conftest import real_trace
from model_edits import without_layers


@pytest.fixture(scope="module")
def demo(demo_models):
    return demo_models[str(DEMO_A)], demo_models[str(DEMO_B)]


def test_outside_layers_row_completes_the_layers(demo):
    a, b = demo
    c = compare(a, b)
    assert c.layers_from == "both"
    out = c.outside_layers
    assert out is not None and out.layer == -1 and out.rank == 0
    for side in ("a", "b"):
        total = getattr(c, side).gpu_time_us
        in_layers = sum(getattr(r, side).total_us for r in c.layers)
        assert getattr(out, side).total_us == pytest.approx(total - in_layers)
        model = a if side == "a" else b
        assert getattr(out, side).kernels == int(np.count_nonzero(model.kernels.layer < 0))
    assert out.gap_us == pytest.approx(out.a.total_us - out.b.total_us)
    assert out.ratio == pytest.approx(out.a.total_us / out.b.total_us)
    assert all(r.layer >= 0 for r in c.layers)          # the layers list holds layers only
    assert c.to_dict()["outside_layers"]["layer"] == -1


def test_only_one_side_has_layers(demo):
    a, b = demo
    c = compare(without_layers(a), b)
    assert c.layers_from == "b"
    assert c.layers and all(r.ratio is None and r.a.total_us == 0 for r in c.layers)
    assert [r.rank for r in c.layers] == list(range(1, len(c.layers) + 1))
    warning = next(w for w in c.warnings if w.startswith("layers only on"))
    assert c.b.label in warning and "no attention or SSM kernels recognised" in warning
    # A's kernels are all outside layers: nothing to compare there either
    assert c.outside_layers.a.total_us == pytest.approx(c.a.gpu_time_us) and c.outside_layers.ratio is None
    assert compare(a, without_layers(b)).layers_from == "a"
    none = compare(without_layers(a), without_layers(b))
    assert none.layers_from == "" and none.outside_layers is None and not none.layers


def test_pairs_say_which_passes_they_come_from(demo):
    a, b = demo
    c = compare(a, b)   # all phases: one prefill pass runs another kernel sequence than the decode passes
    al = c.alignment(4)
    row = next(r for r in c.layers if r.layer == 4)
    assert row.a.passes == 6 and al.a_passes == 5 and al.b_passes == 5
    assert all(p.a.count == al.a_passes for p in al.pairs if p.a_name is not None)
    assert all(p.b.count == al.b_passes for p in al.pairs if p.b_name is not None)
    decode = compare(a, b, phase="decode").alignment(4)
    assert decode.a_passes == 5 == next(r for r in compare(a, b, phase="decode").layers if r.layer == 4).a.passes


def test_qwen_pair_outside_layers_is_visible():
    a = real_trace("mi300x_qwen1.5-0.5b_hf.json.gz")
    b = real_trace("h100_qwen1.5-0.5b_hf.json.gz")
    from kerneldiff.core.session import Session

    s = Session([str(a), str(b)], use_cache=False)
    s.load_all()
    c = s.compare()
    out = c.outside_layers
    # embedding, lm_head and sampling of the one complete pass: 22 kernels, ~0.2 ms on each side (the
    # 13 ms of a pass cut by the profiler's start are left out, not counted as "outside")
    assert out.a.kernels == out.b.kernels == 22
    assert 0 < out.a.total_us / c.a.gpu_time_us < 0.02
    assert 0 < out.b.total_us / c.b.gpu_time_us < 0.02
    assert c.a.excluded.time_us > 50 * out.a.total_us
