"""`dataclass` whose methods are made when the class is first used, not when its module is imported.

The standard decorator writes each class's `__init__`, `__repr__` and `__eq__` as source text and
compiles it (~3 million instructions, ~1 ms, a class), at import. A bare `info` of a small trace
imports modules holding ~30 dataclasses and uses ten of them: making the others' methods was ~45
million instructions (~7% of the whole command) for nothing. Here the class is left as its body wrote
it, with stand-ins for what the decorator would add; the first look-up of any of them (making an
instance, `dataclasses.fields`, `replace`, `asdict`, `is_dataclass`, repr, ==) runs the standard
decorator on the class, which then is exactly what `@dataclasses.dataclass` would have made.
"""

import dataclasses
from _thread import RLock

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
                    for name in stand_ins:
                        if isinstance(cls.__dict__.get(name), _StandIn):
                            delattr(cls, name)
                    dataclasses.dataclass(cls, **options)
            return cls

        for name in stand_ins:
            setattr(cls, name, _StandIn(name, make))
        return cls

    return wrap if cls is None else wrap(cls)
