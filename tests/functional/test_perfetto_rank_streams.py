"""The Perfetto export of a run puts each rank's collectives on the streams they ran on (one track
per stream, named by it), checked against the raw events of the real two-rank HTA sample (read
here with json): per rank and stream the same NCCL kernels, and every track nests or is disjoint."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from conftest import real_trace
from kerneldiff.cli.main import main
from test_perfetto_nesting import improper


def raw_streams(path) -> Counter:
    """NCCL kernels per stream, as the raw events record them."""
    events = json.load(gzip.open(path))["traceEvents"]
    return Counter(int(e["args"]["stream"]) for e in events
                   if e.get("cat") == "kernel" and e["name"].startswith("nccl"))


@pytest.mark.slow
def test_hta_collectives_on_their_streams(tmp_path):
    run = real_trace("hta_two_ranks/sampled_rank-0.json.gz").parent
    out = tmp_path / "runs.json"
    assert main(["compare", str(run), str(run), "--format", "perfetto", "--no-cache", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    ev = doc["traceEvents"]
    assert doc["otherData"]["rank_collectives"]["outside_the_drawn_passes"] == {"a": 0, "b": 0}
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("name") == "thread_name"}
    for rank in (0, 1):
        want = raw_streams(run / f"sampled_rank-{rank}.json.gz")
        assert len(want) > 1          # this sample's collectives ran on several streams
        for base in (1000, 2000):
            got = Counter()
            for e in ev:
                if e.get("ph") == "X" and e["pid"] == base + rank:
                    got[names[(e["pid"], e["tid"])]] += 1
                    assert names[(e["pid"], e["tid"])] == f"stream {e['args']['stream']}: collectives"
            assert got == Counter({f"stream {s}: collectives": n for s, n in want.items()})
    assert improper(doc) == []
