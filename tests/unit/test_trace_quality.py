"""Trace-quality warnings for timestamps and joins that cannot be right: kernels of one stream
running over each other, and one single-kernel launch joined to many kernels. Both are silent
wrong numbers otherwise (summed kernel time counts the overlap twice; every kernel takes one
operator's module, pass and shapes)."""

from __future__ import annotations

import copy

import pytest

import hostile_corpus as hc
from conftest import SHARED_TRACES, write_trace
from kerneldiff.core.orchestration import load

OVERLAP = "kernels on one stream overlap"
SHARED = "single-kernel launch call"


def _load(tmp_path, doc):
    return load(write_trace(tmp_path / "t.json", doc), use_cache=False)


def test_a_good_trace_has_neither_warning(tmp_path):
    m = _load(tmp_path, hc.good_doc())
    assert not any(OVERLAP in w or SHARED in w for w in m.warnings)


def test_kernels_running_over_each_other_on_one_stream_are_flagged(tmp_path):
    doc = hc.good_doc()
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["ts"], e["dur"] = 100.0, 1e5
    m = _load(tmp_path, doc)
    assert [w for w in m.warnings if OVERLAP in w] == [next(w for w in m.warnings if OVERLAP in w)]
    assert "98%" in next(w for w in m.warnings if OVERLAP in w)        # 47 of 48 equal kernels


def test_overlap_on_different_streams_is_concurrency_not_a_fault(tmp_path):
    doc = hc.good_doc()
    for i, e in enumerate(e for e in doc["traceEvents"] if e.get("cat") == "kernel"):
        e["ts"], e["dur"], e["args"]["stream"] = 100.0, 1e5, 1000 + i
    assert not any(OVERLAP in w for w in _load(tmp_path, doc).warnings)


def test_one_launch_joined_to_many_kernels_is_flagged(tmp_path):
    doc = copy.deepcopy(hc.good_doc())
    for e in doc["traceEvents"]:
        if isinstance(e.get("args"), dict) and "correlation" in e["args"]:
            e["args"]["correlation"] = 1
    w = [x for x in _load(tmp_path, doc).warnings if SHARED in x]
    assert len(w) == 1 and w[0].startswith("48 kernels share 1 ")


@pytest.mark.parametrize("name", sorted(p.name for p in SHARED_TRACES.glob("*.json.gz")) or ["absent"])
def test_real_traces_raise_neither(name):
    """Hopper and Blackwell traces do overlap a little on one stream (programmatic dependent launch;
    at most 0.02% of kernel time): under the threshold. Graph replays share a correlation id."""
    from conftest import real_trace

    m = load(real_trace(name))
    assert not any(OVERLAP in w or SHARED in w for w in m.warnings)
