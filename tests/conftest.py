from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_TRACES = ROOT.parent / "shared" / "traces"


# --- a private HOME and cache for the whole run ---------------------------------------------
# The model cache lives in $XDG_CACHE_HOME/kerneldiff (else ~/.cache/kerneldiff): a test run must
# not fill the user's real one (it wrote ~360 MB there). Set before any test or fixture runs, in
# os.environ so subprocesses and forked CLI runs inherit it; tests that need their own cache
# directory still set XDG_CACHE_HOME with monkeypatch.
PRIVATE_ROOT: Path | None = None


def pytest_configure(config):
    global PRIVATE_ROOT
    PRIVATE_ROOT = Path(tempfile.mkdtemp(prefix="kerneldiff-tests-")).resolve()
    (PRIVATE_ROOT / "home").mkdir()
    os.environ["HOME"] = str(PRIVATE_ROOT / "home")
    os.environ["XDG_CACHE_HOME"] = str(PRIVATE_ROOT / "cache")
    os.environ.pop("KERNELDIFF_CACHE_MAX", None)   # the user's setting must not change what tests see


def pytest_unconfigure(config):
    if PRIVATE_ROOT is not None:
        shutil.rmtree(PRIVATE_ROOT, ignore_errors=True)


@pytest.fixture(autouse=True)
def private_cache_and_home():
    """Every test runs with HOME and the cache inside the run's private directory (a test that
    moved them elsewhere must have used monkeypatch, which puts them back)."""
    from kerneldiff.core.ingest.cache import cache_dir

    assert PRIVATE_ROOT is not None and Path(os.environ["HOME"]).resolve().is_relative_to(PRIVATE_ROOT)
    assert cache_dir().resolve().is_relative_to(PRIVATE_ROOT), f"cache outside the test run: {cache_dir()}"
    yield


def real_trace(name: str) -> Path:
    p = SHARED_TRACES / name
    if not p.exists():
        pytest.skip(f"real trace {name} not available (../shared/traces absent)")
    return p


@pytest.fixture(scope="session")
def classifier():
    from kerneldiff.core.analysis.classify import Classifier

    return Classifier.load()


@pytest.fixture(scope="module")
def demo_models():
    """The bundled demo pair, loaded once per test module (keyed by path, for PreloadedLoader)."""
    from kerneldiff.core.demo import DEMO_A, DEMO_B
    from kerneldiff.core.ingest.loader import load

    return {str(DEMO_A): load(DEMO_A, use_cache=False), str(DEMO_B): load(DEMO_B, use_cache=False)}


def write_trace(path: Path, doc, gz: bool = False) -> Path:
    data = json.dumps(doc).encode() if not isinstance(doc, (bytes, bytearray)) else bytes(doc)
    if gz:
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def kineto_doc(events, device_name="NVIDIA H100 80GB HBM3", vendor="NVIDIA", **extra):
    meta = {"schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": device_name, "totalGlobalMem": 85899345920,
                                  "computeMajor": 9, "computeMinor": 0 if vendor == "NVIDIA" else 4,
                                  "warpSize": 32 if vendor == "NVIDIA" else 64, "numSms": 132}]}
    if vendor == "NVIDIA":
        meta |= {"cupti_version": 22, "cuda_runtime_version": 12040}
    elif vendor == "AMD":
        meta |= {"roctracer_version": 4.1, "hip_runtime_version": 60443483}
    meta |= {"distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 4}, "with_stack": 1,
             "record_shapes": 0}
    meta |= extra
    meta["traceEvents"] = events
    return meta
