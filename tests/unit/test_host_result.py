"""Comparison.host is typed (core.compare.host_result) and written as the analysis spells it: each
side's host time on the comparison's basis, `{}` for a side without passes, through every writer and
back through the comparison cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneldiff.core import comparison_cache
from kerneldiff.core.analysis.host_time import host_time
from kerneldiff.core.compare.engine import compare
from kerneldiff.core.compare.host_result import HostTime, HostTimes
from kerneldiff.core.numbers import json_ready, strict_json
from kerneldiff.core.orchestration import load

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"


def test_a_side_without_passes_is_an_empty_object():
    both = HostTimes(HostTime(), HostTime(passes=2, host_us=3.0, compile_ids=["0/0"]))
    doc = json.loads(strict_json(both))
    assert doc["a"] == {} and doc["b"]["compile_ids"] == ["0/0"] and doc["b"]["host_us"] == 3.0
    assert json.loads(json.dumps(json_ready(both))) == doc
    assert not both.a and both.b and both.side("b") is both.b and both


@pytest.mark.parametrize("names", [("a100_control", "v100_test"), ("h100_llama_eager_sdpa", "h100_llama_compiled")])
def test_every_writer_spells_the_host_time_as_the_analysis(names):
    paths = [TRACES / f"{n}.json.gz" for n in names]
    if not all(p.exists() for p in paths):
        pytest.skip("real traces not available (../shared/traces absent)")
    a, b = (load(p, use_cache=False) for p in paths)
    cmp = compare(a, b)
    docs = [json.loads(strict_json(cmp)), json.loads(json.dumps(json_ready(cmp))),
            json.loads(json.dumps(cmp.to_dict(), allow_nan=False))]
    for side, model in (("a", a), ("b", b)):
        raw = host_time(model, cmp.phase)
        div = raw.get("passes", 1) if cmp.basis == "per_pass" else 1
        want = {k: x / div if k.endswith("_us") else x for k, x in raw.items()}
        for doc in docs:
            assert list(doc["host"][side]) == list(want)
            assert doc["host"][side] == pytest.approx(want)
    back = comparison_cache.loads(comparison_cache.dumps({"phases": [cmp.phase], "comparison": cmp}))["comparison"]
    assert back == cmp and type(back.host.a) is HostTime


def test_a_comparison_built_by_hand_writes_no_host_time_as_an_empty_object():
    """The engine always reads the host time; a Comparison built without it holds HostTimes()
    (falsy, no side), written `{}` by every writer and kept so through the comparison cache."""
    from kerneldiff.core.compare.result import Comparison, Side

    def side(key):
        return Side(key, key.upper(), f"{key}.json", "GPU", "nvidia", 0.0, 0, 0, 0, "unknown", ["all"])

    cmp = Comparison(side("a"), side("b"), "all", None, 0.0, [], [], [], [], [], [])
    assert not cmp.host and cmp.host.side("a") is None
    for doc in (json.loads(strict_json(cmp)), json.loads(json.dumps(json_ready(cmp))), cmp.to_dict()):
        assert doc["host"] == {}
    read = HostTimes(HostTime(), HostTime())   # read, both sides without passes: each side `{}`
    assert read and json.loads(strict_json(read)) == {"a": {}, "b": {}}
    back = comparison_cache.loads(comparison_cache.dumps({"phases": ["all"], "comparison": cmp}))["comparison"]
    assert back == cmp and back.host == HostTimes()
