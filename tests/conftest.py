from __future__ import annotations

import atexit
import gzip
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Every test, and every process a test starts, gets a throwaway home and cache: the suite must not
# fill (or read stale entries from) the user's ~/.cache/kerneldiff. Set at import, before any
# fixture or child process exists; removed when the session ends.
TEST_HOME = Path(tempfile.mkdtemp(prefix="kerneldiff-tests-"))
os.environ["HOME"] = str(TEST_HOME / "home")
os.environ["XDG_CACHE_HOME"] = str(TEST_HOME / "cache")
(TEST_HOME / "home").mkdir()
os.environ.pop("KERNELDIFF_CACHE_MAX", None)   # the user's setting must not change what tests see
atexit.register(shutil.rmtree, TEST_HOME, True)

# Compiled bytecode is kept for the run and every process it starts, whatever the environment says
# (PYTHONDONTWRITEBYTECODE): without it every run compiles and assertion-rewrites each test module
# again (collection: 10.3 s of CPU per collecting process against 3.6 s with it kept), and each CLI
# subprocess a test starts compiles the kerneldiff modules it imports again.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

ROOT = Path(__file__).resolve().parents[1]
SHARED_TRACES = ROOT.parent / "shared" / "traces"

# No timed assertions: Hypothesis fails an example that runs over 200 ms by default, which on a busy
# machine fails the machine, not the code. Speed is measured by the bench/ scripts.
from hypothesis import settings as _hypothesis_settings   # noqa: E402

_hypothesis_settings.register_profile("kerneldiff", deadline=None)
_hypothesis_settings.load_profile("kerneldiff")


@pytest.fixture(autouse=True)
def private_cache_and_home():
    """Every test runs with HOME and the cache inside the run's throwaway directory (a test that
    moved them elsewhere must have used monkeypatch, which puts them back)."""
    from kerneldiff.core.ingest.cache import cache_dir

    root = TEST_HOME.resolve()
    assert Path(os.environ["HOME"]).resolve().is_relative_to(root)
    assert cache_dir().resolve().is_relative_to(root), f"cache outside the test run: {cache_dir()}"
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


@pytest.fixture(scope="session")
def demo_models():
    """The bundled demo pair, loaded once per test process (keyed by path, for PreloadedLoader): about
    25 modules use it. Tests must not change these models (tests/model_edits.py makes copies)."""
    from kerneldiff.core.demo import DEMO_A, DEMO_B
    from kerneldiff.core.orchestration import load

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


# Tests whose code path forks a child (kerneldiff.core.processes.fork_child) need a process that
# holds one thread, as the CLI does: the fork is refused once any thread runs beside the main one.
# An xdist worker runs many tests in one process, and a test elsewhere may leave a daemon thread
# behind; so these run first in the collection, which xdist hands out first to every worker.
FORK_FIRST = ("tests/unit/test_child_load.py", "tests/unit/test_compare_ahead.py",
              "tests/unit/test_compare_beside.py", "tests/unit/test_reader.py")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: not item.nodeid.startswith(FORK_FIRST))   # stable: the rest keep their order
