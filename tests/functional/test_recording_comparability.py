"""Two recordings of one run that differ in profiler options: the comparability check says so (code
`recording`), the headline calls wall clock and idle inconclusive, and the gate judges wall and idle
checks inconclusive while it still judges kernel time — both ways round."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import ROOT
from kerneldiff.core.gate.spec import parse_checks
from kerneldiff.core.report.headline import headline
from kerneldiff.core.session import Session

TRACE = ROOT / "tests" / "data" / "recorded" / "h100small_static_graphs.json.gz"


SHAPE_KEYS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")


def _without_shapes(tmp_path):
    """The trace as record_shapes=False would have left it (it was recorded without stacks)."""
    with gzip.open(TRACE, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    for e in doc["traceEvents"]:
        if isinstance(e.get("args"), dict):
            for k in SHAPE_KEYS:
                e["args"].pop(k, None)
    p = tmp_path / "no_shapes.json"
    p.write_text(json.dumps(doc))
    return p


def _session(a, b) -> Session:
    s = Session([str(a), str(b)], use_cache=False, workers=0)
    s.load(0)
    s.load(1)
    return s


@pytest.fixture(scope="module")
def stripped(tmp_path_factory):
    return _without_shapes(tmp_path_factory.mktemp("rec"))


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_shape_recording_difference_makes_wall_and_idle_inconclusive(stripped, order):
    a, b = (TRACE, stripped) if order == "ab" else (stripped, TRACE)
    s = _session(a, b)
    cmp = s.compare()
    c = cmp.comparability
    assert "recording" in c.codes
    reason = c.reasons[c.codes.index("recording")]
    assert "record_shapes on " in reason and "inconclusive" in reason
    assert "inconclusive" in headline(cmp).verdict
    g = s.gate(parse_checks("3%", ["wall", "idle", "kernels"]))
    by = {r.metric: r for r in g.checks}
    assert by["wall"].status == "inconclusive" and by["idle"].status == "inconclusive"
    # the same kernels on both sides: kernel time is judged, and passes
    assert by["kernels"].status == "pass"


def test_the_same_recording_is_not_flagged():
    s = _session(TRACE, TRACE)
    c = s.compare().comparability
    assert "recording" not in c.codes
