"""TraceInfo.to_dict is dataclasses.asdict's result (it skips asdict's deep copy of JSON values)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from kerneldiff.core.ingest.probe import TraceInfo, probe

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


def _same(info: TraceInfo) -> None:
    got, want = info.to_dict(), asdict(info)
    assert repr(got) == repr(want)
    # a copy: changing the dict leaves the probe as it was
    for key in ("device", "devices", "runtime", "distributed"):
        assert got[key] is not getattr(info, key) or not got[key]


def test_to_dict_is_asdict_on_nested_values():
    info = TraceInfo("p", 1, False, "kineto", device={"a": [1, {"b": (2, 3)}], "c": None},
                     devices=[{"x": 1.5}, {"y": True}], runtime={"cuda": "12.1"}, aie_cores=["0,1"])
    _same(info)
    info.to_dict()["devices"][0]["x"] = 9
    assert info.devices[0]["x"] == 1.5


@pytest.mark.skipif(not TRACES.is_dir(), reason="needs ../shared/traces")
def test_to_dict_is_asdict_on_every_real_trace():
    paths = sorted(TRACES.glob("*.json.gz")) + sorted(TRACES.glob("*/*.json.gz"))
    assert paths
    for p in paths:
        _same(probe(str(p)))
