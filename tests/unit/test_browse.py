"""One trace on its own (kerneldiff.core.analysis.trace_totals): every figure checked against numpy on the
model's columns, against `info`'s operation totals and against the comparison engine's statistics."""

from __future__ import annotations

import numpy as np
import pytest

from kerneldiff.core.analysis import trace_totals as browse
from kerneldiff.core.analysis.summary import summarize
from kerneldiff.core.compare.engine import compare
from kerneldiff.core.demo import DEMO_A, DEMO_B

from conftest import kineto_doc, write_trace


@pytest.fixture(scope="module", params=["a", "b"])
def model(request, demo_models):
    return demo_models[str(DEMO_A if request.param == "a" else DEMO_B)]


def test_category_totals_are_the_operations_to_the_last_digit(model):
    """`info`'s per-category totals (category_totals) and the browse view's Operations: one grouping,
    in the same order, with the same sums and shares, in every phase."""
    for phase in ["all", *model.phases_present()]:
        ops = browse.operations(model, phase)
        cats = browse.category_totals(model, phase)
        assert [(c.category, c.count, c.total_us, c.share) for c in cats] == \
            [(o.category, o.stats.count, o.stats.total_us, o.stats.share) for o in ops]


def test_operations_match_info_and_numpy(model):
    ov = browse.overview(model)
    k = model.kernels
    assert ov.gpu_time_us == pytest.approx(float(k.dur.sum())) and ov.kernels == len(k)
    totals = summarize(model).operations
    info = {r.category: r for r in totals}
    assert [o.category for o in ov.operations] == [r.category for r in totals]
    for o in ov.operations:
        assert o.stats.count == info[o.category].count
        assert o.stats.total_us == info[o.category].total_us  # the same sum, to the last digit
        cat = model.categories.index(o.category) if o.category in model.categories else -1
        d = k.dur[k.cat == cat]
        assert o.stats.median_us == pytest.approx(float(np.median(d)))
        assert o.stats.p95_us == pytest.approx(float(np.percentile(d, 95)))
        assert (o.stats.min_us, o.stats.max_us) == (float(d.min()), float(d.max()))
        assert o.kernel_names == len(np.unique(k.name[k.cat == cat]))
        assert 1 <= len(o.top_kernels) <= browse.TOP_N
    assert sum(o.stats.share for o in ov.operations) == pytest.approx(1.0)


def test_layers_and_kernels_match_the_engine(model):
    ov = browse.overview(model)
    own = compare(model, model)  # side A of a self-comparison: the engine's own figures
    by_layer = {r.layer: r.a for r in own.layers}
    assert [r.layer for r in ov.layers] == sorted(by_layer)
    k = model.kernels
    for r in ov.layers:
        e = by_layer[r.layer]
        assert (r.total_us, r.kernels, r.passes) == (pytest.approx(e.total_us), e.kernels, e.passes)
        assert r.median_us == pytest.approx(e.median_us) and r.p90_us == pytest.approx(e.p90_us)
        sel = k.layer == r.layer
        per_pass = np.bincount(k.step[sel])
        assert r.kernels_per_pass == int(np.median(per_pass[per_pass > 0]))
    same = {s.name: s.a for s in own.same_kernels}
    assert sorted(x.name for x in ov.kernel_totals) == sorted(same)
    for x in ov.kernel_totals:
        e = same[x.name]
        for f in ("count", "total_us", "mean_us", "median_us", "min_us", "p90_us", "p95_us", "max_us", "share"):
            assert getattr(x.stats, f) == pytest.approx(getattr(e, f), rel=1e-12), (x.name, f)
        assert model.kernel_name(x.row) == x.name and x.category == model.category(x.row)
    totals = [x.stats.total_us for x in ov.kernel_totals]
    assert totals == sorted(totals, reverse=True)


def test_layer_kernels_follow_the_pass(model):
    k = model.kernels
    layer = int(np.bincount(k.layer[k.layer >= 0]).argmax())
    rows = browse.layer_kernels(model, layer)
    sel = k.layer == layer
    assert sum(r.stats.count for r in rows) == int(sel.sum())
    assert sum(r.stats.total_us for r in rows) == pytest.approx(float(k.dur[sel].sum()))
    passes = len(np.unique(k.step[sel]))
    # the first kernel of every pass is at position 0; positions never go backwards
    first_rows = [int(np.flatnonzero(sel & (k.step == s))[0]) for s in np.unique(k.step[sel])]
    assert {model.kernel_name(r) for r in first_rows} <= {r.name for r in rows if r.position == 0}
    assert [r.position for r in rows] == sorted(r.position for r in rows)
    for r in rows:
        assert r.per_pass == pytest.approx(r.stats.count / passes)


def test_steps_are_the_timeline(model):
    k = model.kernels
    steps = browse.steps(model)
    assert [s.index for s in steps] == [s.index for s in model.steps]
    t0 = float(k.ts.min())
    for s in steps:
        sel = k.step == s.index
        assert s.kernels == int(sel.sum()) and s.gpu_us == pytest.approx(float(k.dur[sel].sum()))
        assert s.start_us == pytest.approx(float(k.ts[sel].min()) - t0)
        assert s.span_us == pytest.approx(float((k.ts[sel] + k.dur[sel]).max() - k.ts[sel].min()))
        assert s.phase == model.steps[s.index].phase
        assert sum(us for _c, us in s.top_operations) <= s.gpu_us + 1e-6
    starts = [s.start_us for s in steps]
    assert starts == sorted(starts)


def test_phase_filter(model):
    for phase in model.phases_present():
        ov = browse.overview(model, phase)
        mask = model.phase_mask(phase)
        assert ov.phase == phase and ov.kernels == int(mask.sum())
        assert ov.gpu_time_us == pytest.approx(float(model.kernels.dur[mask].sum()))
        assert all(s.phase == phase for s in ov.steps) and ov.steps
        assert sum(x.stats.count for x in ov.kernel_totals) == ov.kernels
    empty = browse.overview(model, "mixed")
    assert empty.kernels == 0 and empty.operations == [] and empty.layers == [] and empty.steps == []
    assert "no kernels in phase 'mixed'" in empty.warnings
    with pytest.raises(ValueError):
        browse.overview(model, "warmup")


def test_a_trace_without_steps_or_layers(tmp_path):
    from kerneldiff.core.orchestration import load

    events = [{"ph": "X", "cat": "kernel", "name": f"k{i % 3}", "ts": 10 + 10 * i, "dur": 1 + i, "pid": 0, "tid": 7,
               "args": {"device": 0, "stream": 7, "correlation": i}} for i in range(7)]
    m = load(write_trace(tmp_path / "t.json", kineto_doc(events)), use_cache=False)
    ov = browse.overview(m)
    assert ov.kernels == 7 and ov.gpu_time_us == sum(1 + i for i in range(7))
    assert {x.name: x.stats.count for x in ov.kernel_totals} == {"k0": 3, "k1": 2, "k2": 2}
    assert ov.layers == [] and browse.layer_kernels(m, 0) == []
    assert len(ov.steps) == len(m.steps)
