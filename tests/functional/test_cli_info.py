"""`kerneldiff info`: probe then load summary; bad input exits 2 with one line."""

from __future__ import annotations

import json

import pytest

from kerneldiff.core.demo import DEMO_A, DEMO_TRUTH
from kerneldiff.cli.main import main


def test_info_on_demo_reports_probe_and_summary(capsys):
    assert main(["info", str(DEMO_A)]) == 0
    out = capsys.readouterr().out
    truth = json.loads(DEMO_TRUTH.read_text())
    assert "gfx942" in out or "MI300" in out
    assert f"layers/step {truth['model']['layers']}" in out
    assert "top operations" in out


def test_info_json(capsys):
    assert main(["info", "--json", str(DEMO_A)]) == 0
    doc = json.loads(capsys.readouterr().out)
    truth = json.loads(DEMO_TRUTH.read_text())
    assert doc["probe"]["vendor"] == "AMD" and doc["probe"]["compressed"] is True
    s = doc["summary"]
    assert s["layers_per_step"] == truth["model"]["layers"]
    assert s["steps"] == truth["steps"]
    assert s["kernels"] == truth["sides"]["A"]["kernels"] + truth["sides"]["A"]["memcpys"] + truth["sides"]["A"]["memsets"]
    assert abs(sum(o["share"] for o in s["operations"]) - 1.0) < 1e-6


def test_info_bad_file_exit_2(tmp_path, capsys):
    p = tmp_path / "x.json"
    p.write_text('{"traceEvents": [{"ph": "X", ')
    rc = main(["info", str(p)])
    err = capsys.readouterr().err
    assert rc == 2 and str(p) in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow   # real traces
@pytest.mark.real
def test_info_speaks_words_not_python(capsys):
    # issue 30: `info` printed `{'prefill': 1, 'decode': 47}` and `with_stack=None`
    from conftest import real_trace

    assert main(["info", str(real_trace("h100_llama_eager_sdpa.json.gz")), str(DEMO_A)]) == 0
    out = capsys.readouterr().out
    assert "steps 48 (prefill 1, decode 47)" in out
    assert "Python stacks yes · input shapes yes" in out
    assert "{'" not in out and "with_stack=" not in out and "=None" not in out
