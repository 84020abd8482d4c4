"""`dataclass` whose methods are made when the class is first used, not when its module is imported.

The standard decorator writes each class's `__init__`, `__repr__` and `__eq__` as source text and
compiles it (~3 million instructions, ~1 ms, a class), at import. A bare `info` of a small trace
imports modules holding ~30 dataclasses and uses ten of them: making the others' methods was ~45
million instructions (~7% of the whole command) for nothing. Here the class is left as its body wrote
it, with stand-ins for what the decorator would add; the first look-up of any of them (making an
instance, `dataclasses.fields`, `replace`, `asdict`, `is_dataclass`, repr, ==) runs the standard
decorator on the class, which then is exactly what `@dataclasses.dataclass` would have made.

Half of the decorator's work is compiling that text. The compiled code, keyed by the text, is kept
for the next process in the cache dir (marshal, as a .pyc keeps code), one small file per class
(a process reads only the classes it makes: one file of every class took ~3 ms to read) and a
folder per Python build. A dense trace's `info` makes 13 classes: 5.1 ms compiling, ~1.5 ms from
the files. A text not in its file is compiled as the decorator compiles it, so a class is the same
whatever the files hold.
"""

import builtins
import dataclasses
import marshal
import os
import re
import sys
from _thread import RLock, get_ident
from types import CodeType

# what the standard decorator adds to a class (the ordering methods, __hash__ and the frozen
# __setattr__/__delattr__ only with their options), looked up through the class's type slots or
# by name: each is a stand-in until then
_ADDED = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__", "__le__",
          "__gt__", "__ge__", "__match_args__", "__dataclass_fields__", "__dataclass_params__")
_lock = RLock()   # re-entered: a class's base made while the class is


class _StandIn:
    """Stand-in for one attribute the decorator will add: the first look-up makes them all."""

    __slots__ = ("name", "make")

    def __init__(self, name: str, make) -> None:
        self.name = name
        self.make = make

    def __get__(self, obj, owner=None):
        cls = self.make()
        return getattr(cls, self.name) if obj is None else getattr(obj, self.name)


def dataclass(cls=None, /, **options):
    """`dataclasses.dataclass`, its work done on the class's first use (slots=True, which makes a
    new class, is done at once)."""
    def wrap(cls):
        if options.get("slots"):
            return dataclasses.dataclass(cls, **options)
        own = set(cls.__dict__)
        # the class as the decorator must find it: __hash__ (None when the body defines __eq__) is
        # the body's own; only names the body did not define get a stand-in
        stand_ins = [name for name in _ADDED if name not in own]

        def make():
            with _lock:
                if isinstance(cls.__dict__.get("__dataclass_fields__"), _StandIn):   # not made yet
                    # what reads files (lets other threads run) comes before the stand-ins go:
                    # a thread making an instance meanwhile must find them (they wait on the lock),
                    # never the class without its __init__. So the bases not made yet are made
                    # first, and this class's code file is read.
                    for base in cls.__mro__[1:]:
                        if isinstance(base.__dict__.get("__dataclass_fields__"), _StandIn):
                            base.__dataclass_fields__
                    code = _compiled_code(cls)
                    for name in stand_ins:
                        if isinstance(cls.__dict__.get(name), _StandIn):
                            delattr(cls, name)
                    with code:
                        dataclasses.dataclass(cls, **options)
            return cls

        for name in stand_ins:
            setattr(cls, name, _StandIn(name, make))
        return cls

    return wrap if cls is None else wrap(cls)


# --- the decorator's compiled methods, kept between processes ----------------------------------------

_ABSENT = object()
_making: list = []   # the classes being made (a base inside its subclass), innermost last
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def code_dir() -> str:
    """The folder of this interpreter's files (its version and build)."""
    from zlib import crc32

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    build = f"{sys.implementation.cache_tag}-{crc32(sys.version.encode()):08x}"
    return os.path.join(base, "kerneldiff", "code", build)


def _exec(source, globals=None, locals=None, /):
    """`exec` as `dataclasses` calls it: a text of the class being made is compiled once per cache."""
    top = _making[-1] if _making else None
    if top is None or top.thread != get_ident() or not isinstance(source, str):
        return builtins.exec(source, globals, locals)   # not ours (another thread's dataclass)
    code = top.code.get(source)
    if code is None:
        # what exec(str) compiles: "<string>", no future flags (dataclasses.py has none)
        code = top.code[source] = compile(source, "<string>", "exec", flags=0, dont_inherit=True)
        top.added = True
    return builtins.exec(code, globals, locals)


class _compiled_code:
    """While `cls` is made, `dataclasses` compiles through `_exec` (it finds `exec` in its own
    globals before the builtins), from and into the class's file (read when this is made, written
    when the making ends: the class is whole then)."""

    def __init__(self, cls) -> None:
        name = _UNSAFE.sub("_", f"{cls.__module__}.{cls.__qualname__}")
        self.path = os.path.join(code_dir(), f"{name}.marshal")
        self.thread = get_ident()
        self.code, self.added = _read(self.path), False   # here, before the class is taken apart

    def __enter__(self):
        self.before = dataclasses.__dict__.get("exec", _ABSENT)   # _exec itself when a base is made inside
        _making.append(self)
        dataclasses.exec = _exec

    def __exit__(self, *exc):
        _making.pop()
        if self.before is _ABSENT:
            del dataclasses.exec
        else:
            dataclasses.exec = self.before
        if self.added and exc[0] is None:
            _write(self.path, self.code)


def _read(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            code = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(code, dict):
        return {}
    return {k: v for k, v in code.items() if isinstance(k, str) and type(v) is CodeType}


def _write(path: str, code: dict) -> None:
    """Best effort, atomic: a read-only cache costs the next process the compiling, nothing else."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            marshal.dump(code, f)
        os.replace(tmp, path)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass
