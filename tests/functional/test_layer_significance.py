"""Layer significance (core/compare/layer_significance.py): a 1 µs-per-pass slowdown planted in one
layer of a real trace is found, and nothing is found in a trace against itself; each layer's
standard error is √(σa²/na + σb²/nb) of its steady passes, recomputed here from the per-pass times."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import real_trace
from model_edits import layer_slowed

from kerneldiff.core.compare.engine import compare
from kerneldiff.core.compare.layer_significance import critical
from kerneldiff.core.orchestration import load


@pytest.fixture(scope="module")
def eager():
    return load(real_trace("h100_llama_eager_sdpa.json.gz"), use_cache=False)


@pytest.mark.real
@pytest.mark.slow
def test_a_planted_slowdown_of_one_microsecond_per_pass_is_found(eager):
    slowed = layer_slowed(eager, 5, 1.0)
    cmp = compare(slowed, eager)
    rows = {r.layer: r for r in cmp.layers}
    assert len(rows) == 16
    r = rows[5]
    assert r.departs and r.departure_t > critical(16)
    assert math.isclose(r.gap_per_pass_us, 1.0, abs_tol=0.05)      # the prefill pass is not steady
    assert [l for l, x in rows.items() if x.departs] == [5]
    assert all(not x.noise for x in [r]) and all(x.noise for l, x in rows.items() if l != 5)


@pytest.mark.real
@pytest.mark.slow
def test_a_trace_against_itself_has_no_significant_layer(eager):
    cmp = compare(eager, eager)
    assert cmp.layers and all(r.departs is False and r.t == 0.0 for r in cmp.layers)


@pytest.mark.real
@pytest.mark.slow
def test_standard_error_from_the_per_pass_times(eager):
    """Per-pass layer times summed here from the kernels' layer and pass; steady passes, mean, σ and
    the Welch standard error computed with numpy, against the tool's."""
    slowed = layer_slowed(eager, 3, 2.0)
    cmp = compare(slowed, eager)

    def per_pass(m, layer):
        k = m.kernels
        sel = (k.layer == layer) & (k.step >= 0)
        steps, inv = np.unique(k.step[sel], return_inverse=True)
        return np.bincount(inv, weights=k.dur[sel].astype(float))

    for r in cmp.layers:
        stats = []
        for m in (slowed, eager):
            x = per_pass(m, r.layer)
            med = np.median(x)
            keep = np.abs(x - med) <= 5 * 1.4826 * np.median(np.abs(x - med))
            stats.append((keep.sum(), x[keep].mean(), x[keep].std(ddof=1)))
        (na, ma, sa), (nb, mb, sb) = stats
        se = math.sqrt(sa ** 2 / na + sb ** 2 / nb)
        assert math.isclose(r.se_us, se, rel_tol=1e-9)
        assert math.isclose(r.gap_per_pass_us, ma - mb, rel_tol=1e-9, abs_tol=1e-9)
        assert math.isclose(r.t, (ma - mb) / se, rel_tol=1e-9, abs_tol=1e-9)
