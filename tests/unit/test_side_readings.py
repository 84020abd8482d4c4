"""A side's own readings (`prepare_side`), computed before the comparison (in the CLI, in the forked
child that loaded it, then pickled back with the model), change nothing in the comparison."""

from __future__ import annotations

import pickle

import pytest

from kerneldiff.core.analysis.side_readings import launch_costs, prepare_side
from kerneldiff.core.compare.engine import compare
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.orchestration import load
from kerneldiff.core.numbers import strict_json
from conftest import real_trace


def _pair(paths):
    return [load(p, use_cache=False) for p in paths]


def _same_comparison(paths, classifier, phase="all"):
    plain = strict_json(compare(*_pair(paths), phase=phase, classifier=classifier))
    prepared = _pair(paths)
    for m in prepared:
        prepare_side(m, phase)
        assert {("launch_costs", phase), ("pass_tokens",), ("host_time", phase)} <= set(m.__dict__["_memo"])
    carried = [pickle.loads(pickle.dumps(m)) for m in prepared]   # as a forked child sends it back
    assert strict_json(compare(*carried, phase=phase, classifier=classifier)) == plain


@pytest.mark.parametrize("phase", ["all", "decode"])
def test_prepared_demo_sides_compare_the_same(classifier, phase):
    _same_comparison([DEMO_A, DEMO_B], classifier, phase)


@pytest.mark.slow
def test_prepared_real_sides_compare_the_same(classifier):
    _same_comparison([real_trace("h100_llama_eager_sdpa.json.gz"), real_trace("h100_llama_compiled.json.gz")],
                     classifier)


def test_launch_costs_are_the_timelines_readings(demo_models):
    import numpy as np

    from kerneldiff.core.analysis.cut_work import compared_mask
    from kerneldiff.core.analysis.timeline import dispatch_gap, kernel_floor

    for m in demo_models.values():
        rows = np.nonzero(compared_mask(m, "all"))[0]
        assert launch_costs(m, "all") == (dispatch_gap(m, rows), kernel_floor(m, rows))
