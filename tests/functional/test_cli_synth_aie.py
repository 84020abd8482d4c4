"""`kerneldiff synth --aie` writes an AIE trace whose planted iterations `kerneldiff aie` recovers."""

from __future__ import annotations

import json

from kerneldiff.cli.main import main
from kerneldiff.core.aie.analysis import analyze_aie
from kerneldiff.core.aie.analysis import GemmShape


def test_synth_aie_roundtrip(tmp_path, capsys):
    assert main(["synth", str(tmp_path), "--aie", "--seed", "3", "--aie-rows", "2", "--aie-cols", "3"]) == 0
    trace, truth_path = capsys.readouterr().out.split()
    doc = json.loads(open(truth_path).read())
    plan = doc["plan"]
    run = analyze_aie(trace, GemmShape(plan["M"], plan["K"], plan["N"], plan["rows"], plan["cols"]),
                      warmup=plan["warmup"], iterations=plan["iterations"])
    assert len(run.cores) == 6
    assert all(c.detected_iterations == plan["warmup"] + plan["iterations"] for c in run.cores)
    assert main(["aie", trace, "--M", "128", "--K", "128", "--N", "128", "--rows", "2", "--cols", "3",
                 "--warmup", str(plan["warmup"]), "--iterations", str(plan["iterations"])]) == 0
