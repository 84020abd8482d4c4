"""Reading apart from the readings: ingest hands over the trace's columns only; the readings
(joins, classes, passes, phases, layers) are computed by analysis.readings, and the session's load
(orchestration.load) is exactly the read followed by that pipeline."""

import numpy as np
import pytest

from kerneldiff.core.analysis import readings
from kerneldiff.core.analysis.classify import Classifier
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.ingest.loader import read_trace
from kerneldiff.core.orchestration import load


@pytest.fixture(scope="module")
def classifier():
    return Classifier.load(None)


@pytest.mark.parametrize("path", [DEMO_A, DEMO_B], ids=["a", "b"])
def test_the_read_holds_columns_and_no_reading(path):
    m = read_trace(str(path))
    assert len(m.kernels) > 0
    k = m.kernels
    assert (k.cat == -1).all() and (k.cpu_op == -1).all() and (k.step == -1).all() and (k.layer == -1).all()
    assert m.steps == [] and m.categories == []


@pytest.mark.parametrize("path", [DEMO_A, DEMO_B], ids=["a", "b"])
def test_the_load_is_the_read_then_the_readings(path, classifier):
    loaded = load(str(path), classifier=classifier, use_cache=False)
    stages = []
    read = readings.read(read_trace(str(path)), classifier, lambda frac, stage: stages.append(stage))
    assert stages == ["phases", "layers"]
    assert (read.kernels.cat >= 0).all() and read.steps
    for name in ("cat", "rule", "cpu_op", "launch", "step", "phase", "layer"):
        assert np.array_equal(read.kernels.columns[name], loaded.kernels.columns[name]), name
    assert read.categories == loaded.categories and read.warnings == loaded.warnings
    assert read.steps == loaded.steps and read.num_layers == loaded.num_layers > 0
