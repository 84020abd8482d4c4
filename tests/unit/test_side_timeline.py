"""Side.timeline is typed (core.compare.side_timeline) and its JSON is the shape `Timeline.to_dict()`
spells: the same keys in the same order, each pass under "pass", through every writer (orjson's
strict_json, json_ready's fallback, Comparison.to_dict) and back through the comparison cache."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from kerneldiff.core import comparison_cache
from kerneldiff.core.analysis.timeline import LaunchStats, LayerIdle, PassWindow, Window, timeline
from kerneldiff.core.compare.engine import compare
from kerneldiff.core.compare.side_timeline import (LaunchTimeline, LayerTimeline, PassTimeline, SideTimeline,
                                                   WindowFigures)
from kerneldiff.core.numbers import json_ready, strict_json
from kerneldiff.core.orchestration import load

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"


def _names(cls) -> list[str]:
    return [f.name for f in fields(cls)]


def test_the_typed_fields_keep_pace_with_the_analysis():
    # a figure added to the analysis and not here would vanish from the JSON without a word
    assert _names(WindowFigures) == _names(Window)
    assert _names(LayerTimeline) == _names(LayerIdle)
    assert _names(LaunchTimeline) == _names(LaunchStats)
    head = ["index", "name", "phase", "kind"]
    assert list(PassTimeline.__struct_fields__) == ["pass_", *head[1:], *(n for n in _names(PassWindow) if n not in head)]


@pytest.fixture(scope="module")
def pair():
    paths = [TRACES / "a100_control.json.gz", TRACES / "v100_test.json.gz"]
    if not all(p.exists() for p in paths):
        pytest.skip("real traces not available (../shared/traces absent)")
    a, b = (load(p, use_cache=False) for p in paths)
    return a, b, compare(a, b)


def test_every_writer_spells_the_timeline_as_before(pair):
    a, b, cmp = pair
    docs = [json.loads(strict_json(cmp)), json.loads(json.dumps(json_ready(cmp))),
            json.loads(json.dumps(cmp.to_dict(), allow_nan=False))]
    for side, model in (("a", a), ("b", b)):
        want = json.loads(strict_json(timeline(model, cmp.phase, keep_cut=False).to_dict()))
        assert want["passes"], "a trace with passes, so that the renamed key is exercised"
        for doc in docs:
            got = doc[side]["timeline"]
            assert got == want and list(got) == list(want)
            assert [list(p) for p in got["passes"]] == [list(p) for p in want["passes"]]


def test_typed_reading_and_the_cache(pair):
    _a, _b, cmp = pair
    t = cmp.a.timeline
    assert isinstance(t, SideTimeline) and all(isinstance(p, PassTimeline) for p in t.passes)
    assert t.idle_us == pytest.approx(t.span_us - t.busy_us, abs=1e-3)
    assert [p.pass_ for p in t.passes] == sorted(p.pass_ for p in t.passes)
    back = comparison_cache.loads(comparison_cache.dumps({"phases": [cmp.phase], "comparison": cmp}))["comparison"]
    assert back == cmp and type(back.a.timeline.passes[0]) is PassTimeline
