"""The instant probe: vendor, GPU name fallbacks, distributed info, kind — from the file head."""

from __future__ import annotations


import pytest

from conftest import kineto_doc, real_trace, write_trace
from kerneldiff.core import TraceError, probe


def test_probe_plain_and_gzip_agree(tmp_path):
    doc = kineto_doc([{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "pid": 0, "tid": 7}])
    a = probe(write_trace(tmp_path / "a.json", doc))
    b = probe(write_trace(tmp_path / "b.json.gz", doc, gz=True))
    assert not a.compressed and b.compressed
    for info in (a, b):
        assert info.kind == "kineto"
        assert info.vendor == "NVIDIA"
        assert info.gpu == "NVIDIA H100 80GB HBM3"
        assert info.distributed == {"rank": 1, "world_size": 4, "backend": "nccl"}
        assert info.with_stack is True and info.record_shapes is False
        assert info.device["numSms"] == 132


def test_empty_device_name_falls_back_to_arch_and_memory(tmp_path):
    doc = kineto_doc([], device_name="", vendor="AMD")
    info = probe(write_trace(tmp_path / "t.json", doc))
    assert info.vendor == "AMD"
    assert "gfx942" in info.gpu and "80 GB" in info.gpu
    assert info.gpu_source == "gfx arch + memory"


def test_vendor_from_warp_size_when_no_runtime_keys(tmp_path):
    doc = kineto_doc([], device_name="", vendor="none")
    doc["deviceProperties"][0]["warpSize"] = 64
    assert probe(write_trace(tmp_path / "t.json", doc)).vendor == "AMD"


def test_bare_event_array_is_a_chrome_trace(tmp_path):
    info = probe(write_trace(tmp_path / "t.json", [{"ph": "X", "name": "a", "ts": 0, "dur": 1}]))
    assert info.kind == "chrome-array"


def test_metadata_after_trace_events_is_found_in_the_tail(tmp_path):
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "ts": i, "dur": 1} for i in range(20000)]
    doc = {"traceEvents": events, "deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-16GB", "warpSize": 32}],
           "cupti_version": 12}
    info = probe(write_trace(tmp_path / "t.json", doc))
    assert info.gpu == "Tesla V100-SXM2-16GB" and info.vendor == "NVIDIA"


@pytest.mark.parametrize("content,problem", [
    (b"", "empty"), (b"   \n", "blank"), (b"\x00\x01binary", "not JSON"), (b"42", "not JSON"),
])
def test_bad_files_raise_trace_error_naming_the_file(tmp_path, content, problem):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(TraceError) as e:
        probe(p)
    assert str(p) in str(e.value) and problem in str(e.value)
    assert "\n" not in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        probe(tmp_path / "nope.json")


@pytest.mark.parametrize("name,vendor,gpu_part", [
    ("mi300x_vllm_gptoss_decode.json.gz", "AMD", "gfx942"),
    ("b200_vllm_eager.json.gz", "NVIDIA", "B200"),
    ("h100_qwen1.5-0.5b_hf.json.gz", "NVIDIA", "H100"),
    ("mi300x_qwen1.5-0.5b_hf.json.gz", "AMD", "MI300X"),
    ("v100_test.json.gz", "NVIDIA", "V100"),
])
def test_real_traces(name, vendor, gpu_part):
    info = probe(real_trace(name))
    assert info.kind == "kineto" and info.compressed
    assert info.vendor == vendor and gpu_part in info.gpu
