"""Hostile inputs, third corpus (issue 16): what a trace holds. Device metadata of any type or
size costs that value only; NaN in the metadata costs nothing else; timestamps beyond what a
double resolves are said; a gzip header of any length is read; step counts too long to read are
unknown, not zero. Each case runs through the CLI as a user would (info and compare --format
json): exit 0, strict JSON, and the readings the good parts allow."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib

import pytest

import hostile_corpus as hc
from kerneldiff.core.analysis.phases import parse_step
from kerneldiff.core.ingest.probe import clean_device, probe

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not


def _strict(text: str):
    def refuse(c):
        raise ValueError(f"non-finite literal {c} in the JSON report")
    return json.loads(text, parse_constant=refuse)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kerneldiff.cli", *args], capture_output=True, text=True, timeout=300)


def _device(**fields) -> dict:
    d = hc.metadata()["deviceProperties"][0]
    d.update(fields)
    return d


# deviceProperties values of every wrong type, size and finiteness; what must survive of each
DEVICE_CASES = {
    "memory_beyond_float": ({"totalGlobalMem": 10**400}, "NVIDIA H100 80GB HBM3"),
    "memory_beyond_int64": ({"totalGlobalMem": 2**64}, "NVIDIA H100 80GB HBM3"),
    "cc_as_list": ({"computeMajor": [9], "computeMinor": [0]}, "NVIDIA H100 80GB HBM3"),
    "cc_as_object": ({"computeMajor": {"a": 1}}, "NVIDIA H100 80GB HBM3"),
    "cc_list_no_name": ({"name": "", "computeMajor": [9]}, None),
    "name_as_list": ({"name": ["H100"]}, "NVIDIA Hopper (sm_90) 80 GB"),
    "negative_sms": ({"numSms": -132, "warpSize": -1}, "NVIDIA H100 80GB HBM3"),
    "bools": ({"numSms": True, "computeMajor": False}, "NVIDIA H100 80GB HBM3"),
    "huge_everything": ({k: 10**30 for k in ("id", "numSms", "warpSize", "computeMajor", "computeMinor")},
                        "NVIDIA H100 80GB HBM3"),
}


@pytest.mark.parametrize("case", sorted(DEVICE_CASES))
def test_device_properties_of_any_type_cost_only_that_value(tmp_path, case):
    fields, gpu = DEVICE_CASES[case]
    doc = hc.good_doc()
    doc["deviceProperties"] = [_device(**fields)]
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    info = probe(str(p))
    if gpu is not None:
        assert info.gpu == gpu
    assert info.with_stack is not None and info.record_shapes is not None
    good = tmp_path / "good.json"
    good.write_text(json.dumps(hc.good_doc()))
    for args in (("info", str(p)), ("compare", str(p), str(good), "--format", "json", "--no-cache")):
        r = _cli(*args)
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
    _strict(r.stdout)


def test_clean_device_keeps_usable_values_and_types():
    d = clean_device({"name": "X", "computeMajor": 9.0, "computeMinor": [0], "totalGlobalMem": 10**400,
                      "numSms": True, "clockRate": float("nan"), "maxGridSize": [1, 2], "note": "ok", 3: 4})
    assert d == {"name": "X", "computeMajor": 9, "note": "ok"}
    assert type(d["computeMajor"]) is int


@pytest.mark.parametrize("where", ["device", "distributed", "version"])
def test_a_nan_in_the_metadata_costs_that_value_only(tmp_path, where):
    """Python's json writes NaN and Infinity; the probe's parser refuses them. One such value
    dropped every metadata key after it (GPU unknown, with_stack unknown)."""
    doc = hc.good_doc()
    if where == "device":
        doc["deviceProperties"][0].update(totalGlobalMem=float("nan"), numSms=float("inf"), warpSize=float("-inf"))
    elif where == "distributed":
        doc["distributedInfo"]["world_size"] = float("nan")
    else:
        doc = {"cuda_driver_version": float("nan"), **doc}
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))    # allow_nan: NaN, Infinity, -Infinity literals
    info = probe(str(p))
    assert info.gpu == "NVIDIA H100 80GB HBM3" and info.vendor == "NVIDIA"
    assert info.with_stack is True and info.record_shapes is not None
    assert info.distributed.get("backend") == "nccl"
    assert all(v == v for v in info.device.values())   # no NaN kept
    r = _cli("compare", str(p), str(p), "--format", "json", "--no-cache")
    assert r.returncode == 0, r.stderr
    _strict(r.stdout)


def test_a_string_that_spells_nan_is_left_alone(tmp_path):
    doc = hc.good_doc(device_name='NaN Infinity "NaN" GPU')
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    assert probe(str(p)).gpu == 'NaN Infinity "NaN" GPU'


def test_timestamps_a_double_cannot_resolve_are_warned_about(tmp_path):
    """At 9.9e17 µs a double resolves 128 µs: busy time, gaps and the timeline are rounded to
    that. Said in a warning, never silently (the README accepts |ts| up to 1e18)."""
    events = hc.good_events()
    for e in events:
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] += 9.9e17
    p = tmp_path / "far.json"
    p.write_text(json.dumps({**hc.metadata(), "traceEvents": events}))
    near = tmp_path / "near.json"
    near.write_text(json.dumps(hc.good_doc()))
    r = _cli("compare", str(p), str(near), "--format", "json", "--no-cache")
    assert r.returncode == 0, r.stderr
    report = _strict(r.stdout)
    text = json.dumps(report)
    assert "resolves only 128 µs" in text or "resolves only 128 \\u00b5s" in text
    assert "resolves only" not in json.dumps(report.get("b", {}))   # today's epoch µs are fine


def _member(body: bytes, flags: int, name_len: int) -> bytes:
    """One gzip member with optional header fields: FHCRC 2, FEXTRA 4, FNAME 8, FCOMMENT 16."""
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    raw = c.compress(body) + c.flush()
    head = b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0\0\xff"
    if flags & 4:
        head += (60_000).to_bytes(2, "little") + b"e" * 60_000
    if flags & 8:
        head += b"n" * name_len + b"\0"
    if flags & 16:
        head += b"a comment\0"
    if flags & 2:
        head += b"\0\0"
    return head + raw + zlib.crc32(body).to_bytes(4, "little") + (len(body) & 0xFFFFFFFF).to_bytes(4, "little")


@pytest.mark.parametrize("flags,name_len", [(0x18, 262_134), (0x18, 3_000_000), (0x1E, 300_000), (0x0C, 10)])
@pytest.mark.parametrize("members", [1, 2])
def test_a_gzip_header_of_any_length_is_read(tmp_path, flags, name_len, members):
    """A valid gzip whose file name runs past 256 KiB, with a comment, was refused ("invalid
    lookback distance": ISA-L misreads a header split across its input pieces)."""
    body = json.dumps(hc.good_doc()).encode()
    cut = len(body) // 2
    data = _member(body, flags, name_len) if members == 1 else \
        _member(body[:cut], flags, name_len) + _member(body[cut:], flags, name_len)
    p = tmp_path / "t.json.gz"
    p.write_bytes(data)
    plain = tmp_path / "t.json"
    plain.write_bytes(body)
    assert probe(str(p)).gpu == "NVIDIA H100 80GB HBM3"
    got = _cli("compare", str(p), str(plain), "--format", "json", "--no-cache")
    assert got.returncode == 0, got.stderr
    report = _strict(got.stdout)
    assert report["a"]["kernels"] == report["b"]["kernels"] > 0      # every event of both members
    assert report["a"]["gpu_time_us"] == report["b"]["gpu_time_us"]


def test_a_gzip_cut_inside_its_header_is_a_cut_stream(tmp_path):
    body = json.dumps(hc.good_doc()).encode()
    p = tmp_path / "t.json.gz"
    p.write_bytes(_member(body, 0x18, 100_000)[:50_000])
    r = _cli("compare", str(p), str(p), "--no-cache")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr


@pytest.mark.parametrize("name", [
    "execute_context_" + "9" * 400 + "(1)_generation_2(2)",
    "execute_2_context_" + "9" * 19 + "(sq5sk5)_generation_1(sq1sk1)",
    "execute_context_1(5)_generation_" + "9" * 40 + "(3)",
])
def test_step_counts_too_long_to_read_are_unknown_not_zero(name):
    phase, source, requests, _tokens, _kv = parse_step(name)
    assert source == "vllm" and phase == "unknown" and requests is None


@pytest.mark.parametrize("flag", ["--registry", "--peaks"])
@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "/proc/self/status", "dir", "big", "latin1"])
def test_a_settings_file_that_is_not_one_is_refused_before_any_read(tmp_path, flag, target):
    """A FIFO given as --registry blocked forever; /dev/zero filled memory. Settings files go
    through the same regular-file check as traces, with a size bound."""
    import os

    good = tmp_path / "good.json"
    good.write_text(json.dumps(hc.good_doc()))
    if target == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)
    elif target == "dir":
        path = tmp_path
    elif target == "big":
        path = tmp_path / "big.toml"
        path.write_bytes(b"# " + b"x" * (17 << 20) + b"\n")
    elif target == "latin1":
        path = tmp_path / "latin1.toml"
        path.write_bytes("# caf\u00e9\n".encode("latin-1"))
    else:
        path = target
    r = _cli("compare", str(good), str(good), "--no-cache", flag, str(path))
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in r.stderr, r.stderr
    assert "trace file" not in lines[0]


def test_a_trace_with_empty_columns_is_cached(tmp_path, monkeypatch):
    """A trace without Python stacks, CPU ops or layers was never cached: an empty column made the
    checksum raise inside put(), which hid it."""
    from kerneldiff.core.ingest import cache
    from kerneldiff.core.orchestration import load

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    events = [{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 1.0 + i,
               "dur": 0.5, "args": {"device": 0, "stream": 7}} for i in range(5)]   # a memcpy-only trace
    p = tmp_path / "bare.json"
    p.write_text(json.dumps({**hc.metadata(), "traceEvents": events}))
    m = load(p, use_cache=False)
    assert len(m.kernels) == 5 and len(m.python) == 0 and len(m.cpu_ops) == 0
    assert cache.put("bare", m)
    back = cache.get("bare")
    assert back is not None and len(back.kernels) == 5 and len(back.python) == 0


def test_a_symlink_repointed_during_a_load_does_not_poison_the_cache(tmp_path, monkeypatch):
    """The key was taken from the link's first target and the file read through the link: a
    link moved in between stored the second trace's numbers under the first one's key."""
    import os

    from kerneldiff.core.ingest import cache
    from kerneldiff.core import orchestration as loader

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    small, big = tmp_path / "run1.json", tmp_path / "run2.json"
    small.write_text(json.dumps({**hc.metadata(), "traceEvents": hc.good_events(steps=1)}))
    big.write_text(json.dumps({**hc.metadata(), "traceEvents": hc.good_events(steps=6)}))
    link = tmp_path / "latest.json"
    link.symlink_to(small)
    real_key = cache.key_for
    calls = []

    def key_then_repoint(path, classifier):
        k = real_key(path, classifier)
        if not calls:                      # right after the first key: the link moves
            os.remove(link)
            link.symlink_to(big)
        calls.append(k)
        return k

    monkeypatch.setattr(cache, "key_for", key_then_repoint)
    loader.load(str(link), use_cache=True)
    monkeypatch.setattr(cache, "key_for", real_key)
    again = loader.load(str(small), use_cache=True)
    assert len(again.kernels) == len(loader.load(str(small), use_cache=False).kernels) == 16


def test_an_export_never_follows_a_planted_symlink(tmp_path):
    """A dangling link at the export's name (someone else's, in a shared directory) was followed:
    `exists()` called it absent and open() created the file it pointed at."""
    from kerneldiff.tui.export import write_table

    victim = tmp_path / "victim.txt"
    (tmp_path / "kerneldiff-layers-all.csv").symlink_to(victim)          # dangling
    (tmp_path / "kerneldiff-layers-all-2.csv").symlink_to(tmp_path)      # to a directory
    p = write_table("layers-all", ["a"], [[1]], "csv", directory=tmp_path)
    assert p.name == "kerneldiff-layers-all-3.csv" and not p.is_symlink()
    assert p.read_text().splitlines() == ["a", "1"]
    assert not victim.exists()


def test_a_model_whose_names_would_make_a_huge_cache_header_is_not_cached(tmp_path, monkeypatch):
    """Once empty columns could be cached, a million distinct 1 KB names went to the cache too:
    encoding them as the entry's header ran out of memory (exit 2 instead of a loaded trace)."""
    from kerneldiff.core.ingest import cache
    from kerneldiff.core.orchestration import load

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    p = tmp_path / "t.json"
    p.write_text(json.dumps(hc.good_doc()))
    m = load(p, use_cache=False)
    monkeypatch.setattr(cache, "MAX_NAME_CHARS", sum(map(len, m.strings.strings)) - 1)
    assert not cache.put("big-names", m) and cache.get("big-names") is None
    monkeypatch.setattr(cache, "MAX_NAME_CHARS", sum(map(len, m.strings.strings)))
    assert cache.put("big-names", m) and cache.get("big-names") is not None


def test_an_error_names_the_file_as_given_not_its_target(tmp_path, monkeypatch):
    """The reader follows a symlink to the file its cache key names; the error still says the
    name the user typed."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real-broken.json").write_text('{"traceEvents": [}')
    (tmp_path / "latest.json").symlink_to(tmp_path / "real-broken.json")
    r = _cli("info", "latest.json")
    assert r.returncode == 2 and r.stderr.startswith("kerneldiff: latest.json: "), r.stderr
