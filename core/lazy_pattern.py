"""A regular expression compiled on first use: a short command imports ~60 module-level patterns
and uses ~15 of them, and compiling the rest at import is start-up time paid for nothing."""

from __future__ import annotations

import re


class LazyPattern:
    """re.compile(text, flags), compiled at the first read of one of its attributes (match, search,
    finditer, pattern, ...). Each attribute read is then kept on the instance, so later reads find
    it in the instance's dict, as cheap as on a compiled pattern; `isinstance(p, re.Pattern)` is
    False, so pass `p.search`-style calls, never the object to `re.*` functions."""

    def __init__(self, text: str | bytes, flags: int = 0) -> None:
        self._text = text
        self._flags = flags

    def __getattr__(self, name: str):
        if name.startswith("_"):   # not set yet (copy, pickle) or private: never a pattern's
            raise AttributeError(name)
        value = getattr(re.compile(self._text, self._flags), name)
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        return f"LazyPattern({self._text!r}, {self._flags})"
