"""`--device N` reads device N's own name and properties: a file holding an H100 (device 0) and an
A100 (device 1) must not call device 1 an H100 (nor take the H100's peaks for it)."""

from __future__ import annotations

import gzip
import json

import pytest

from kerneldiff.core.analysis.devices import select_device
from kerneldiff.core.orchestration import load
from kerneldiff.core.session import Session

from conftest import real_trace

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")
A100 = "NVIDIA A100-SXM4-80GB"


@pytest.fixture(scope="module")
def two_gpus(tmp_path_factory):
    d = json.load(gzip.open(real_trace("h100_qwen1.5-0.5b_hf.json.gz")))
    ev = d["traceEvents"]
    gpu_pids = {e.get("pid") for e in ev if e.get("cat") in GPU_CATS}
    extra = []
    for e in ev:
        c = json.loads(json.dumps(e))
        if isinstance(c.get("pid"), int):
            c["pid"] = c["pid"] + 1 if c["pid"] in gpu_pids else c["pid"] + 100_000
        a = c.get("args")
        if isinstance(a, dict) and "device" in a and c.get("cat") in GPU_CATS:
            a["device"] = int(a["device"]) + 1
        extra.append(c)
    d["traceEvents"] = ev + extra
    first = d["deviceProperties"][0]
    d["deviceProperties"] = [first, {**first, "id": first.get("id", 0) + 1, "name": A100,
                                     "computeMajor": 8, "computeMinor": 0}]
    path = tmp_path_factory.mktemp("two_gpus") / "h100_and_a100.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(d, f)
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
