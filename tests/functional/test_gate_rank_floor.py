"""Runs of one step (too few passes and layers for a floor within a trace) read their checks' noise
floor from the spread across their ranks (core/gate/rank_floor): a runs gate is not always
inconclusive. The floor is recomputed here from the raw events of the real HTA ranks."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest

from conftest import real_trace
from kerneldiff.cli.main import main
from kerneldiff.core.gate.noise import Z
from kerneldiff.core.synth.ranks import write_run


def _gate(capsys, *args) -> tuple[int, dict]:
    rc = main(["gate", *map(str, args), "--no-cache", "--format", "json"])
    return rc, json.loads(capsys.readouterr().out)


def _check(doc, metric):
    return next(c for c in doc["checks"] if c["metric"] == metric)


@pytest.mark.slow
def test_single_step_runs_are_judged(tmp_path, capsys):
    kw = dict(ranks=4, passes=1, straggler=2, straggle_us=200, transfer_us=80, jitter_us=5.0)
    write_run(tmp_path / "a", seed=1, **kw)
    write_run(tmp_path / "a2", seed=2, **kw)
    write_run(tmp_path / "slow", seed=3, **{**kw, "straggle_us": 200}, gemm_us=400.0)
    rc, same = _gate(capsys, tmp_path / "a", tmp_path / "a2")
    assert same["verdict"] == "pass" and rc == 0
    wall = _check(same, "wall")
    assert wall["noise"] is not None and wall["noise_from"].startswith("the spread across 4 ranks")
    assert not any(c["metric"] == "skew" for c in same["checks"])
    assert any(n.startswith("skew not checked: base 1 pass, new 1 pass") for n in same["notes"])
    rc, slow = _gate(capsys, tmp_path / "a", tmp_path / "slow")
    assert slow["verdict"] == "regression" and rc != 0
    assert _check(slow, "wall")["status"] == "regression"
    rc, fast = _gate(capsys, tmp_path / "slow", tmp_path / "a")    # swapping sides mirrors it
    assert _check(fast, "wall")["status"] == "improvement"


def _raw_wall_per_pass(path) -> float:
    ev = json.load(gzip.open(path))["traceEvents"]
    gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    steps = [e for e in ev if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"
             and e.get("cat") != "gpu_user_annotation"]
    span = max(float(e["ts"]) + float(e["dur"]) for e in gpu) - min(float(e["ts"]) for e in gpu)
    return span / len(steps)


@pytest.mark.slow
def test_hta_floor_is_the_spread_across_ranks(capsys):
    run = real_trace("hta_two_ranks/sampled_rank-0.json.gz").parent
    rc, doc = _gate(capsys, run, run)
    wall = _check(doc, "wall")
    walls = [_raw_wall_per_pass(run / f"sampled_rank-{r}.json.gz") for r in (0, 1)]
    sd = float(np.std(walls, ddof=1))
    assert wall["noise"] == pytest.approx(Z * math.sqrt(2) * sd, rel=1e-6)
    assert wall["status"] == "pass" and doc["verdict"] == "pass" and rc == 0
