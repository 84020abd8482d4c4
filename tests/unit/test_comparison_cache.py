"""Comparisons kept beside the models (kerneldiff.core.comparison_cache): read back equal to what was
computed, keyed by everything that decides them, refused when JSON would not give them back as they
were, dropped when damaged, and read without numpy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

from kerneldiff.core import comparison_cache as cc
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.session import Session

from conftest import real_trace


@pytest.fixture()
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path


def pair(tmp_path, a=DEMO_A, b=DEMO_B):
    """Copies of a pair (their keys name the files: a test may edit them)."""
    pa, pb = tmp_path / f"a-{a.name}", tmp_path / f"b-{b.name}"
    shutil.copy(a, pa)
    shutil.copy(b, pb)
    return [str(pa), str(pb)]


def compared(paths, phase="all", **kw):
    s = Session(paths, keep_comparisons=True, **kw)
    s.load_all()
    return s, s.compare(phase)


def same(x, y) -> bool:
    """Equal as stored: the JSON form is one-to-one with the value (NaN equal to NaN)."""
    return cc.dumps(x) == cc.dumps(y)


def entries():
    return sorted(cc.cache_dir().glob(f"*{cc.SUFFIX}"))


def test_a_pair_compared_once_opens_on_the_same_comparison_without_loading(cache_home):
    paths = pair(cache_home)
    first, comp = compared(paths)
    assert len(entries()) == 1
    again = Session(paths, keep_comparisons=True)
    stored = again.stored_comparison("all")
    assert stored is not None and again.models == [None, None]
    assert stored == comp and same(stored, comp)
    assert again.phases() == first.phases()          # before either trace is loaded
    assert again.stored_comparison("decode") is None  # another phase was never compared
    # once loaded, compare answers from the store too: the same comparison
    again.load_all()
    assert same(again.compare("all"), comp)


@pytest.mark.slow
def test_the_real_pair_comes_back_equal(cache_home):
    a, b = real_trace("h100_llama_eager_sdpa.json.gz"), real_trace("h200_llama_eager_sdpa.json.gz")
    s, comp = compared([str(a), str(b)])
    stored = Session([str(a), str(b)], keep_comparisons=True).stored_comparison("all")
    assert stored == comp and same(stored, comp)
    assert json.dumps(stored.to_dict(), allow_nan=True) == json.dumps(comp.to_dict(), allow_nan=True)


def test_nothing_is_kept_unless_asked_or_for_a_stand_in_loader(cache_home):
    paths = pair(cache_home)
    compared([*paths][:2], use_cache=False)
    s = Session(paths)            # keep_comparisons off (the CLI)
    s.load_all()
    s.compare()
    assert entries() == []
    s = Session(paths, keep_comparisons=True)
    s.load_all()
    s.compare(keep=False)         # the explorer stores it once shown
    assert entries() == []
    assert s.keep_comparison("all", s.compare(keep=False)) and len(entries()) == 1


def test_the_key_names_the_files_the_phase_and_the_options(cache_home):
    paths = pair(cache_home)
    base = cc.key_for(paths, "all")
    assert base == cc.key_for(paths, "all")
    assert base != cc.key_for(paths[::-1], "all")
    assert base != cc.key_for(paths, "decode")
    assert base != cc.key_for(paths, "all", device=1)
    assert base != cc.key_for(paths, "all", fusion_overrides={"launch_ns": 1.0})
    registry = cache_home / "rules.toml"
    registry.write_text("# no rules\n")
    with_registry = cc.key_for(paths, "all", registry=str(registry))
    assert with_registry not in (None, base)
    registry.write_text("# other bytes\n")
    assert cc.key_for(paths, "all", registry=str(registry)) != with_registry
    assert cc.key_for(paths, "all", registry=str(cache_home / "absent.toml")) is None
    # an edit in place that keeps size and mtime still changes the key (ctime, sampled content)
    st = os.stat(paths[0])
    data = bytearray(open(paths[0], "rb").read())
    data[-2:-1] = b" " if data[-2:-1] != b" " else b"\n"
    open(paths[0], "wb").write(bytes(data))
    os.utime(paths[0], ns=(st.st_atime_ns, st.st_mtime_ns))
    assert cc.key_for(paths, "all") != base


def test_the_code_stamp_sees_sources_and_data_not_bytecode(tmp_path):
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    src, data = tmp_path / "pkg" / "a.py", tmp_path / "rules.toml"
    src.write_text("x = 1\n")
    data.write_text("[a]\n")
    stamp = cc.code_stamp(str(tmp_path))
    (tmp_path / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"compiled")
    (tmp_path / "notes.txt").write_text("not code")
    assert cc.code_stamp(str(tmp_path)) == stamp
    src.write_text("x = 22\n")
    assert cc.code_stamp(str(tmp_path)) != stamp
    stamp = cc.code_stamp(str(tmp_path))
    os.utime(data, ns=(1, 1))
    assert cc.code_stamp(str(tmp_path)) != stamp
    stamp = cc.code_stamp(str(tmp_path))
    (tmp_path / "pkg" / "b.so").write_bytes(b"\0")
    assert cc.code_stamp(str(tmp_path)) != stamp


def test_a_comparison_is_filed_under_the_files_it_was_made_from(cache_home, monkeypatch):
    paths = pair(cache_home)
    s = Session(paths, keep_comparisons=True)
    s.load_all()
    with open(paths[1], "ab") as f:   # changed after it was loaded
        f.write(b"\n")
    s.compare()
    # filed under the file as it was read: the file as it is now has nothing stored
    assert len(entries()) == 1
    assert Session(paths, keep_comparisons=True).stored_comparison("all") is None

    # a file that changes while it is read is not filed at all
    from kerneldiff.core import cache_keys

    real, calls = cache_keys.file_identity, []
    monkeypatch.setattr(cache_keys, "file_identity", lambda p: (calls.append(p), [*real(p), len(calls)])[1])
    for e in entries():
        e.unlink()
    s = Session(paths, keep_comparisons=True)
    s.load_all()
    comp = s.compare()
    assert entries() == [] and not s.keep_comparison("all", comp)


def test_what_json_would_not_give_back_is_never_stored(cache_home):
    import numpy as np

    paths = pair(cache_home)
    s, comp = compared(paths)
    for p in entries():
        p.unlink()
    key = cc.key_for(paths, "all")
    bad = [replace(comp, warnings=("a tuple",)), replace(comp, ratio=np.float64(1.5)),
           replace(comp, host={1: "an int key"}), replace(comp, host={cc.TAG: "the tag"})]
    extra = replace(comp)
    extra.note = "an attribute outside the fields"
    for value in [*bad, extra]:
        assert not cc.put(key, value, ["all"])
    assert entries() == []
    assert cc.put(key, comp, ["all"]) and same(cc.get(key)[0], comp)


def test_a_damaged_entry_is_dropped_and_computed_again(cache_home):
    paths = pair(cache_home)
    s, comp = compared(paths)
    (entry,) = entries()
    good = entry.read_bytes()
    key = entry.name.removesuffix(cc.SUFFIX)
    head, _, body = good.partition(b"\n")
    flipped = bytearray(body)
    flipped[len(flipped) // 2] ^= 0x01
    other_key = json.loads(head) | {"key": "0" * 40}
    for damage in (good[: len(good) // 2], head + b"\n" + bytes(flipped), b"", b"not json\n{}",
                   json.dumps(other_key).encode() + b"\n" + body):
        entry.write_bytes(damage)
        assert cc.get(key) is None and not entry.exists()
    # a symlink where an entry should be is not followed
    target = cache_home / "elsewhere"
    target.write_bytes(good)
    entry.symlink_to(target)
    assert cc.get(key) is None and not entry.is_symlink()
    s2 = Session(paths, keep_comparisons=True)
    s2.load_all()
    assert same(s2.compare(), comp) and entry.is_file()   # computed again, and stored


def test_writing_off_and_the_newest_kept(cache_home, monkeypatch):
    paths = pair(cache_home)
    s, comp = compared(paths)
    for p in entries():
        p.unlink()
    monkeypatch.setenv("KERNELDIFF_CACHE_MAX", "0")
    assert not cc.put("k" * 40, comp, ["all"]) and entries() == []
    monkeypatch.delenv("KERNELDIFF_CACHE_MAX")
    monkeypatch.setattr(cc, "MAX_ENTRIES", 3)
    for i in range(5):
        assert cc.put(f"{i:040d}", comp, ["all"])
        os.utime(cc.entry_path(f"{i:040d}"), (1000 + i, 1000 + i))
    cc._evict(cc.cache_dir())
    assert [p.name[:40] for p in entries()] == [f"{i:040d}" for i in (2, 3, 4)]


def test_a_stored_comparison_is_read_without_numpy(cache_home):
    paths = pair(cache_home)
    compared(paths)
    code = ("import sys; from kerneldiff.core.session import Session\n"
            f"s = Session({paths!r}, keep_comparisons=True)\n"
            "c = s.stored_comparison('all')\n"
            "assert c is not None and s.phases()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy')[:3])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, XDG_CACHE_HOME=str(cache_home / "xdg")))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_typed_parts_come_back_typed(cache_home):
    """A recorded pair whose A leaves out its graph-capture pass and whose fusions carry estimates:
    the passes left out, the fusion model's parameters and the layers' steady passes are read back
    as their types, equal."""
    from kerneldiff.core.compare.fusion_params import FusionParams
    from kerneldiff.core.compare.result import FromRows, LeftOutPasses, SteadyPasses

    rec = cc.Path(__file__).resolve().parents[1] / "data" / "recorded"
    paths = pair(cache_home, rec / "h100small_static_graphs.json.gz", rec / "h100small_eager_attn.json.gz")
    _, comp = compared(paths)
    stored = Session(paths, keep_comparisons=True).stored_comparison("all")
    assert stored == comp and same(stored, comp)
    assert type(stored.a.passes_left_out) is LeftOutPasses and stored.a.passes_left_out.kinds == {"capture": 1}
    params = [f.estimated_saving.params for f in stored.fusions if f.estimated_saving]
    assert params and all(type(p) is FusionParams for p in params)
    steady = [r.a.steady for r in stored.layers if r.a.steady is not None]
    assert steady and all(type(x) is SteadyPasses for x in steady)
    assert stored.ledger and all(type(e.from_rows) is FromRows for e in stored.ledger)
    assert json.dumps(stored.to_dict(), allow_nan=True) == json.dumps(comp.to_dict(), allow_nan=True)
