"""The shared real traces against their ground truth (passes, phases, layers, attention time),
checked by the project-independent ../shared/tools/truth_check.py through the installed CLI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

SHARED = Path(__file__).resolve().parents[3] / "shared"
CHECK = SHARED / "tools" / "truth_check.py"


@pytest.mark.real
def test_truth_check_passes_on_every_shared_trace():
    if not CHECK.exists() or not (SHARED / "traces" / "TRUTH.json").exists():
        pytest.skip("../shared/tools/truth_check.py or the traces are absent")
    kd = shutil.which("kerneldiff", path=str(Path(sys.executable).parent))
    if kd is None:
        pytest.skip("the kerneldiff command is not installed beside this interpreter")
    r = subprocess.run([sys.executable, str(CHECK), "--kd", kd], capture_output=True, text=True, timeout=900)
    failed = [line for line in r.stdout.splitlines() if line.startswith("FAIL")]
    assert not failed, "\n".join(failed)
    assert r.returncode == 0 and "0 failed" in r.stdout.splitlines()[-1]
