"""Exposed communication has one definition: communication kernels while no compute kernel runs
(copies and memsets hide nothing). `compare`'s ledger, `gate`'s comm check and a run's rank rows
read the same figure on the real traces that communicate."""

from __future__ import annotations

import json

import pytest

from conftest import real_trace
from kerneldiff.cli.main import main


@pytest.mark.slow
@pytest.mark.parametrize("a, b", [("a100_control.json.gz", "v100_test.json.gz")])
def test_compare_and_gate_read_the_same_exposed_communication(a, b, capsys):
    pa, pb = str(real_trace(a)), str(real_trace(b))
    assert main(["compare", pa, pb, "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (led,) = [e for e in doc["ledger"] if e["cause"] == "exposed communication"]
    main(["gate", pa, pb, "--gate", "comm", "--format", "json", "--no-cache"])
    g = json.loads(capsys.readouterr().out)
    (c,) = [x for x in g["checks"] if x["metric"] == "comm"]
    passes = (doc["a"]["passes"], doc["b"]["passes"])
    assert (c["base"] * passes[0], c["new"] * passes[1]) == pytest.approx((led["a_us"], led["b_us"]), abs=0.01)
