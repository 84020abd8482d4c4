"""`--device N` reads device N's own name and properties: a file holding an H100 (device 0) and an
A100 (device 1) must not call device 1 an H100 (nor take the H100's peaks for it)."""

from __future__ import annotations

import pytest

from kerneldiff.core.analysis.devices import select_device
from kerneldiff.core.orchestration import load
from kerneldiff.core.session import Session

from conftest import real_trace
from two_devices import doubled_events, write_gz

A100 = "NVIDIA A100-SXM4-80GB"


@pytest.fixture(scope="module")
def two_gpus(tmp_path_factory):
    d = doubled_events(real_trace("h100_qwen1.5-0.5b_hf.json.gz"))
    first = d["deviceProperties"][0]
    d["deviceProperties"] = [first, {**first, "id": first.get("id", 0) + 1, "name": A100,
                                     "computeMajor": 8, "computeMinor": 0}]
    path = tmp_path_factory.mktemp("two_gpus") / "h100_and_a100.json.gz"
    write_gz(d, path)
    return path, first.get("id", 0)


@pytest.mark.real
def test_each_device_reads_its_own_name(two_gpus):
    path, first = two_gpus
    s = Session([str(path)], use_cache=False)
    m = load(path, classifier=s.classifier, use_cache=False)
    assert [x.get("name") for x in m.info.devices][1] == A100
    d0 = select_device(m, first, s.classifier)
    d1 = select_device(m, first + 1, s.classifier)
    assert "H100" in d0.info.gpu
    assert d1.info.gpu == A100 and d1.info.device["name"] == A100
    assert m.info.gpu == d0.info.gpu          # the file's own info is untouched
