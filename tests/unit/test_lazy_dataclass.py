"""core.lazy_dataclass: a class whose dataclass methods are made on first use is, once used, what
`dataclasses.dataclass` makes of the same body; and the info path's modules make none at import."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
from dataclasses import field

import pytest

from kerneldiff.core.lazy_dataclass import dataclass as lazy

OPTIONS = [{}, {"frozen": True}, {"order": True}, {"eq": False}, {"unsafe_hash": True}, {"kw_only": True}]


def _pair(deco, **options):
    @deco(**options)
    class Base:
        """doc"""
        x: int
        y: list = field(default_factory=list)
        z: float = 1.5

    @deco(**options)
    class Child(Base):
        w: str = "w"

    return Base, Child


def _hash(obj):
    try:
        return hash(obj)
    except TypeError:
        return "unhashable"


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("which", [0, 1], ids=["base", "subclass"])
def test_once_used_it_is_what_the_standard_decorator_makes(options, which):
    std, ours = _pair(dataclasses.dataclass, **options)[which], _pair(lazy, **options)[which]
    args = {"x": 1} if options.get("kw_only") else {}
    a, b = std(*([] if args else [1]), **args), ours(*([] if args else [1]), **args)
    assert repr(a).rsplit(".", 1)[-1] == repr(b).rsplit(".", 1)[-1]
    assert (a == std(*([] if args else [1]), **args)) == (b == ours(*([] if args else [1]), **args))
    assert [(f.name, f.kw_only) for f in dataclasses.fields(std)] == [(f.name, f.kw_only) for f in dataclasses.fields(ours)]
    assert getattr(std, "__match_args__", None) == getattr(ours, "__match_args__", None)
    assert dataclasses.asdict(a) == dataclasses.asdict(b)
    assert (type(_hash(a)) is int) == (type(_hash(b)) is int)
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__"):
        s, o = std.__dict__.get(name, "absent"), ours.__dict__.get(name, "absent")
        assert (s == "absent", s is None) == (o == "absent", o is None), name
    if options.get("frozen"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            b.x = 3
    assert dataclasses.replace(b, x=5).x == 5


def test_an_instance_unpickled_where_its_class_is_not_made_yet():
    # a worker's result read by a process that has not used the class yet
    from kerneldiff.core.analysis.stats import Stats

    blob = pickle.dumps(Stats(count=3, total_us=1.5))
    code = ("import pickle, sys; s = pickle.loads(sys.stdin.buffer.read()); from kerneldiff.core.analysis.stats "
            "import Stats; print(repr(s), s == Stats(count=3, total_us=1.5))")
    p = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, timeout=120)
    assert p.stdout.decode().strip() == f"{Stats(count=3, total_us=1.5)!r} True", p.stderr[-2000:]


def test_the_first_use_may_be_fields_or_is_dataclass_or_a_subclass():
    for first in (dataclasses.fields, dataclasses.is_dataclass, lambda c: c.__match_args__):
        base, child = _pair(lazy)
        first(base)
        assert child(1, [], 2.0, "v") == child(1, [], 2.0, "v")
        assert repr(base(3)).endswith("Base(x=3, y=[], z=1.5)")


def test_not_made_until_used():
    base, _ = _pair(lazy)
    assert not isinstance(base.__dict__["__dataclass_fields__"], dict)
    base(1)
    assert isinstance(base.__dict__["__dataclass_fields__"], dict)


def test_importing_the_info_path_makes_no_lazy_dataclass():
    # the modules a bare `info` imports hold lazy dataclasses that a 1-kernel info never uses: none
    # of them may be made at import (a module-level use would make it, and cost its ~1 ms)
    code = """
import sys
import kerneldiff.core.analysis.summary, kerneldiff.core.analysis.readings, kerneldiff.core.ingest.loader
from kerneldiff.core.lazy_dataclass import _StandIn
made = []
for name, mod in list(sys.modules.items()):
    if name.startswith("kerneldiff."):
        for v in vars(mod).values():
            if isinstance(v, type) and v.__module__ == name and "__dataclass_fields__" in v.__dict__:
                made.append((name + "." + v.__qualname__, not isinstance(v.__dict__["__dataclass_fields__"], _StandIn)))
lazy = [n for n, m in made if not m]
assert len(lazy) >= 10, made
print("LAZY", len(lazy), "MADE", [n for n, m in made if m])
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]


# --- the compiled methods kept between processes ------------------------------------------------------

# made in a fresh process with the given cache dir: a class of each option, compared with the standard
# decorator's (methods' signatures and annotations, repr, ==, hash, fields); prints what it compiled
MAKE = """
import dataclasses, inspect, sys
from dataclasses import field
from kerneldiff.core import lazy_dataclass
from kerneldiff.core.lazy_dataclass import dataclass as lazy
compiled = []
real_compile = compile
def counting(source, *a, **k):
    compiled.append(source)
    return real_compile(source, *a, **k)
lazy_dataclass.compile = counting
for options in ({}, {"frozen": True}, {"order": True}, {"eq": False}, {"unsafe_hash": True}, {"kw_only": True}):
    pair = []
    for deco in (dataclasses.dataclass, lazy):
        @deco(**options)
        class C:
            x: int
            y: "list[str]" = field(default_factory=list)
            z: float = 1.5
        pair.append(C)
    std, ours = pair
    args = {"x": 1} if options.get("kw_only") else {}
    a, b = std(*([] if args else [1]), **args), ours(*([] if args else [1]), **args)
    for name in ("__init__", "__repr__", "__eq__", "__lt__", "__hash__", "__setattr__"):
        s, o = getattr(std, name, None), getattr(ours, name, None)
        if callable(s) and hasattr(s, "__code__"):
            assert str(inspect.signature(s)) == str(inspect.signature(o)), name
            assert s.__annotations__ == o.__annotations__, name
            assert s.__code__.co_code == o.__code__.co_code, name
    assert repr(a).rsplit(".", 1)[-1] == repr(b).rsplit(".", 1)[-1]
    assert (a == a) == (b == b) and dataclasses.astuple(a) == dataclasses.astuple(b)
print("COMPILED", len(compiled), "DIR", lazy_dataclass.code_dir())
"""


def _make(cache_dir) -> tuple[int, str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_dir)}
    p = subprocess.run([sys.executable, "-c", MAKE], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    _, n, _, path = p.stdout.split()
    return int(n), path


def _files(folder: str) -> dict[str, float]:
    return {f: os.stat(os.path.join(folder, f)).st_mtime_ns for f in os.listdir(folder)}


def test_a_second_process_makes_the_same_classes_without_compiling(tmp_path):
    first, folder = _make(tmp_path)
    assert first > 0 and folder.startswith(str(tmp_path))
    stored = _files(folder)
    assert stored and all(f.endswith(".marshal") for f in stored)   # one file per class made
    second, _ = _make(tmp_path)
    assert second == 0                  # every method's text was in its class's file
    assert _files(folder) == stored     # and nothing was written again


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", b"\xe3" * 100], ids=["empty", "garbage", "foreign"])
def test_a_damaged_or_foreign_file_is_compiled_past(tmp_path, damage):
    _, folder = _make(tmp_path)
    for f in os.listdir(folder):
        with open(os.path.join(folder, f), "wb") as out:
            out.write(damage)
    n, _ = _make(tmp_path)   # the classes are still the standard decorator's (asserted inside)
    assert n > 0


def test_an_unwritable_cache_costs_only_the_compiling(tmp_path):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    assert _make(blocked)[0] > 0   # $XDG_CACHE_HOME is a file: nothing can be stored, all still works


def test_no_thread_sees_a_class_half_made_while_its_code_files_are_read(monkeypatch, tmp_path):
    """The explorer loads two traces in threads: one may make a class while the other makes an
    instance of it. The class's methods are taken off (its stand-ins removed) only once the files
    its making reads (its own, its bases') are read: a read lets the other thread run, and found
    the class without its __init__ ("LoadedTrace() takes no arguments")."""
    import threading
    import time

    from kerneldiff.core import lazy_dataclass as ld

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    real = ld._read
    monkeypatch.setattr(ld, "_read", lambda path: (time.sleep(0.05), real(path))[1])

    @lazy
    class Alone:   # no made-later base whose stand-in would send the look-up to the lock
        """doc"""
        x: int = 0
        y: int = 1

    @lazy
    class Base:
        """doc"""
        x: int = 0

    @lazy
    class Child(Base):
        y: int = 1

    errors: list[BaseException] = []

    for cls in (Alone, Child):
        def use():
            try:
                assert cls(3, 4).y == 4
            except BaseException as e:   # noqa: BLE001 - reported below
                errors.append(e)

        maker = threading.Thread(target=lambda: cls.__dataclass_fields__)
        maker.start()
        time.sleep(0.02)   # inside the making, in a file read
        users = [threading.Thread(target=use) for _ in range(4)]
        for t in users:
            t.start()
        for t in [maker, *users]:
            t.join()
    assert not errors, errors
