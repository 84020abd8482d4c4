"""Devices are never merged: a file whose GPU events name two devices is read one device at a time.

The file: the real H100 Qwen trace with a copy of every event under a second GPU pid / device and a
second host pid (correlation and External ids reused, as two ranks' traces merged into one file
have them). Each device must read exactly as the original trace does."""

from __future__ import annotations

import json

import pytest

from kerneldiff.cli.main import main
from kerneldiff.core.analysis.devices import device_totals, select_device
from kerneldiff.core.analysis.timeline import timeline
from kerneldiff.core.session import Session

from conftest import real_trace
from two_devices import doubled_events, write_gz

def doubled(src, dst) -> None:
    write_gz(doubled_events(src), dst)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    orig = real_trace("h100_qwen1.5-0.5b_hf.json.gz")
    two = tmp_path_factory.mktemp("devices") / "h100_two_devices.json.gz"
    doubled(orig, two)
    return str(orig), str(two)


@pytest.fixture(scope="module")
def models(pair):
    orig, two = pair
    one = Session([orig], use_cache=False)
    one.load(0)
    whole = Session([two], use_cache=False)
    from kerneldiff.core.orchestration import load

    merged = load(two, classifier=whole.classifier)
    return one.models[0], merged, whole.classifier


@pytest.mark.slow
def test_device_totals_split_the_file(models):
    orig, merged, _ = models
    totals = device_totals(merged)
    assert [t.device for t in totals] == [0, 1]
    for t in totals:
        assert t.kernels == len(orig.kernels)
        assert t.gpu_time_us == pytest.approx(orig.gpu_time_us)
    assert orig.gpu_time_us == pytest.approx(45_647.3, abs=0.1)        # 45.6 ms, not 91.3


@pytest.mark.slow
@pytest.mark.parametrize("device", [0, 1])
def test_each_device_reads_as_the_original(models, device):
    orig, merged, classifier = models
    view = select_device(merged, device, classifier)
    assert view.device == device
    assert len(view.kernels) == len(orig.kernels)
    assert view.gpu_time_us == pytest.approx(orig.gpu_time_us)
    assert len(view.steps) == len(orig.steps) and view.num_layers == orig.num_layers == 24
    assert (view.pass_source, view.phase_source, view.layer_source) == \
        (orig.pass_source, orig.phase_source, orig.layer_source)
    assert (view.kernels.cat == orig.kernels.cat).all()
    assert (view.kernels.layer == orig.kernels.layer).all()
    assert (view.kernels.cpu_op >= 0).sum() == (orig.kernels.cpu_op >= 0).sum()
    a, b = timeline(view).whole, timeline(orig).whole
    assert (a.span_us, a.busy_us, a.idle_us) == pytest.approx((b.span_us, b.busy_us, b.idle_us))


@pytest.mark.slow
def test_timeline_tells_streams_apart_by_device(models):
    orig, merged, _ = models
    # the same stream id on two devices is two streams, and the devices' copies overlap exactly
    assert timeline(merged).streams == 2 * timeline(orig).streams
    assert timeline(merged).whole.overlap_us == pytest.approx(timeline(orig).whole.busy_us, rel=1e-6)


@pytest.mark.slow
def test_info_lists_devices(pair, capsys):
    _, two = pair
    assert main(["info", two, "--json", "--no-cache"]) == 0
    s = json.loads(capsys.readouterr().out)["summary"]
    assert [d["device"] for d in s["devices"]] == [0, 1]
    assert [d["kernels"] for d in s["devices"]] == [1707, 1707]
    assert s["device"] == 0 and s["gpu_time_us"] == pytest.approx(45_647.3, abs=0.1)


@pytest.mark.slow
@pytest.mark.parametrize("device", [None, 1])
def test_compare_is_device_with_device(pair, capsys, device):
    orig, two = pair
    extra = [] if device is None else ["--device", str(device)]
    assert main(["compare", two, orig, "--format", "json", "--no-cache", *extra]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["a"]["gpu_time_us"] == pytest.approx(d["b"]["gpu_time_us"])
    assert d["ratio"] == pytest.approx(1.0) and d["wall"]["wall_gap_us"] == pytest.approx(0.0)
    said = [w for w in d["warnings"] if "holds 2 devices" in w]
    assert said and f"device {device or 0} is read alone" in said[0]


@pytest.mark.slow
def test_unknown_device_is_one_line(pair, capsys):
    _, two = pair
    assert main(["info", two, "--device", "3", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no device 3" in err[0] and "devices: 0, 1" in err[0]


@pytest.mark.parametrize("name", [pytest.param("b200_vllm_eager.json.gz", marks=pytest.mark.slow),
                                  "mi300x_sglang_qwen3-8b_decode.json.gz"])
def test_other_vendors_and_engines_split_alike(tmp_path, capsys, name):
    """The B200 vLLM trace (ids as JSON strings) and the MI300X SGLang one (device 9): each device
    of the doubled file compares equal with the original."""
    orig = real_trace(name)
    two = tmp_path / f"two_{name}"
    doubled(orig, two)
    for device in ([], ["--device", "10" if "mi300x" in name else "1"]):
        assert main(["compare", str(two), str(orig), "--format", "json", "--no-cache", *device]) == 0
        d = json.loads(capsys.readouterr().out)
        for k in ("gpu_time_us", "kernels", "steps", "layers_per_step"):
            assert d["a"][k] == pytest.approx(d["b"][k]), k
        assert d["wall"]["wall_gap_us"] == pytest.approx(0.0)
