"""A trace whose kernels do not link to a CPU launch says why: its runtime launch events were not
recorded (every kernel still carries its correlation id), not "correlation ids missing"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kerneldiff.core.session import Session

from conftest import real_trace

STRIP = Path(__file__).resolve().parents[3] / "shared" / "tools" / "strip_recording.py"


@pytest.mark.real
@pytest.mark.slow
def test_runtime_stripped_trace_blames_the_runtime_events(tmp_path):
    src = real_trace("h100_qwen1.5-0.5b_hf.json.gz")
    if not STRIP.exists():
        pytest.skip("../shared/tools/strip_recording.py is absent")
    out = tmp_path / "no_runtime.json.gz"
    subprocess.run([sys.executable, str(STRIP), str(src), str(out), "--drop", "runtime"], check=True,
                   capture_output=True)
    s = Session([str(out)], use_cache=False)
    s.load_all()
    said = [w for w in s.models[0].warnings if "link to a CPU launch" in w]
    assert said and "no CUDA/HIP runtime launch events recorded" in said[0]
    assert not any("correlation ids missing" in w for w in s.models[0].warnings)
