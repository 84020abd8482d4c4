"""Model cache: exact roundtrip, damage is detected and rebuilt, stale keys miss, concurrent
writers leave a valid entry, no pickle anywhere, bounded size."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import struct
from dataclasses import replace

import numpy as np
import pytest

from kerneldiff.core.ingest import cache
from kerneldiff.core.orchestration import load
from kerneldiff.core.synth.pair import SynthConfig, write_trace

TABLES = ("kernels", "cpu_ops", "launches", "python", "annotations")


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("KERNELDIFF_CACHE_MAX", raising=False)
    return tmp_path / "xdg" / "kerneldiff" / "models"


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    p = tmp_path_factory.mktemp("cache") / "t.json"
    write_trace(p, SynthConfig(layers=4, steps=4, strings_numbers=True))
    return p


def assert_same_model(a, b):
    for t in TABLES:
        ca, cb = getattr(a, t).columns, getattr(b, t).columns
        assert list(ca) == list(cb)
        for c in ca:
            assert ca[c].dtype == cb[c].dtype, (t, c)
            assert np.array_equal(ca[c], cb[c]), (t, c)
    assert a.strings.strings == b.strings.strings
    assert (a.steps, a.layers, a.categories, a.rules) == (b.steps, b.layers, b.categories, b.rules)
    assert (a.num_layers, a.architecture, a.warnings, a.dropped_events) == (
        b.num_layers, b.architecture, b.warnings, b.dropped_events)
    assert replace(a.info, seconds=0) == replace(b.info, seconds=0)   # probe timing aside
    assert a.path == b.path


def entries(d):
    return sorted(d.glob("*.kdc")) if d.exists() else []


def test_roundtrip_is_exact_and_reopen_hits(cache_home, trace, classifier):
    fresh = load(trace, classifier=classifier, use_cache=True)
    assert len(fresh.kernels) and len(fresh.python) and fresh.num_layers == 4
    assert len(entries(cache_home)) == 1
    key = cache.key_for(trace, classifier)
    again = cache.get(key)
    assert again is not None
    assert_same_model(fresh, again)
    assert_same_model(fresh, load(trace, classifier=classifier, use_cache=True))
    # the model without the cache is the same too
    assert_same_model(fresh, load(trace, classifier=classifier))


def test_cache_is_opt_in_and_can_be_turned_off(cache_home, trace, classifier, monkeypatch):
    load(trace, classifier=classifier)
    assert entries(cache_home) == []
    monkeypatch.setenv("KERNELDIFF_CACHE_MAX", "0")
    load(trace, classifier=classifier, use_cache=True)
    assert entries(cache_home) == []


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_damaged_entry_is_ignored_and_rebuilt(cache_home, trace, classifier, damage):
    good = load(trace, classifier=classifier, use_cache=True)
    (entry,) = entries(cache_home)
    data = bytearray(entry.read_bytes())
    if damage == "flip":
        data[len(data) // 3] ^= 0x40          # inside the column data: only a CRC can tell
        entry.write_bytes(bytes(data))
    elif damage == "truncate":
        entry.write_bytes(bytes(data[: len(data) // 2]))
    else:
        entry.write_bytes(b"not a cache entry at all")
    key = cache.key_for(trace, classifier)
    assert cache.get(key) is None
    assert not entry.exists()                  # dropped...
    rebuilt = load(trace, classifier=classifier, use_cache=True)
    assert_same_model(good, rebuilt)
    assert cache.get(key) is not None          # ...and written again


def test_changed_file_or_rules_miss(cache_home, tmp_path, trace, classifier):
    p = tmp_path / "copy.json"
    p.write_bytes(trace.read_bytes())
    load(p, classifier=classifier, use_cache=True)
    key = cache.key_for(p, classifier)
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    stale = cache.key_for(p, classifier)
    assert stale != key and cache.get(stale) is None
    reg = tmp_path / "user.toml"
    reg.write_text('[[rules]]\nid = "mine.all_gemms"\ncategory = "Dense GEMM"\ncontains = ["nvjet", "cijk"]\n')
    from kerneldiff.core.analysis.classify import Classifier

    assert cache.key_for(p, Classifier.load(str(reg))) != stale


def _write_entry(args):
    home, path, rounds = args
    os.environ["XDG_CACHE_HOME"] = home
    from kerneldiff.core.analysis.classify import Classifier

    classifier = Classifier.load()
    model = load(path, classifier=classifier)
    key = cache.key_for(path, classifier)
    return all(cache.put(key, model) for _ in range(rounds))


def test_concurrent_writers_leave_a_valid_entry(cache_home, trace, classifier):
    home = str(cache_home.parents[1])
    with mp.get_context("fork").Pool(2) as pool:
        assert all(pool.map(_write_entry, [(home, str(trace), 8)] * 2))
    (entry,) = entries(cache_home)              # one entry, no temporary files left
    assert [p.name for p in cache_home.iterdir()] == [entry.name]
    got = cache.get(cache.key_for(trace, classifier))
    assert got is not None
    assert_same_model(got, load(trace, classifier=classifier))


def test_no_pickle_anywhere(cache_home, trace, classifier):
    load(trace, classifier=classifier, use_cache=True)
    (entry,) = entries(cache_home)
    data = entry.read_bytes()
    hlen, _crc, end = struct.unpack("<QI8s", data[-20:])
    assert end == b"KDCEND01"
    header = json.loads(data[-20 - hlen:-20])   # metadata is plain JSON
    assert {"strings", "steps", "info", "fields", "arrays"} <= set(header)
    with open(entry, "rb") as f:
        for name, where in header["arrays"].items():
            f.seek(where["offset"])
            arr = np.load(f, allow_pickle=False)    # raises if a record needed pickle
            assert arr.dtype != object, name


def test_size_is_bounded_least_recently_used_first(cache_home, tmp_path, trace, classifier, monkeypatch):
    paths = []
    for i in range(3):
        p = tmp_path / f"t{i}.json"
        p.write_bytes(trace.read_bytes())
        paths.append(p)
    load(paths[0], classifier=classifier, use_cache=True)
    size = entries(cache_home)[0].stat().st_size
    monkeypatch.setenv("KERNELDIFF_CACHE_MAX", str(int(size * 2.5)))
    load(paths[1], classifier=classifier, use_cache=True)
    first = cache.entry_path(cache.key_for(paths[0], classifier))
    os.utime(first, (1, 1))                      # t0 least recently used
    load(paths[2], classifier=classifier, use_cache=True)
    kept = {p.name for p in entries(cache_home)}
    assert len(kept) == 2 and first.name not in kept


def test_code_fingerprint_covers_every_module_that_shapes_a_model():
    """A fix in the scanner, the phase reader or any module added later must change the key
    (the fingerprint once listed module names and silently missed the compiled scanner)."""
    names = {p.name for p in cache._sources()}
    assert {"scan.py", "source.py", "slices.py", "decode.py", "columns.py", "workers.py", "build.py", "loader.py", "readings.py", "phases.py", "layers.py", "classify.py",
            "model.py", "gzip_stream.py"} <= names
    assert all(p.exists() for p in cache._sources())


def test_code_fingerprint_changes_with_the_code(tmp_path):
    a, b = tmp_path / "scan.py", tmp_path / "phases.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    before = cache.code_fingerprint([a, b])
    a.write_text("x = 3\n")
    assert cache.code_fingerprint([a, b]) != before
