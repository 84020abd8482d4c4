"""Regexes that users write (registry and peaks files) are matched by RE2, whose time is linear
in the text whatever the pattern. Python's `re` backtracks: `(a|aa)*[bc]` or `a*a*a*a*a*[bc]` on
4,000 characters runs for hours, and no syntactic check catches every such pattern. The shipped
registry keeps `re` (its patterns are tested linear on adversarial names, and `re` is ~8x
cheaper per call on short names).

A pattern is first parsed by `re`, so users get Python's syntax errors and the shipped gating
(`rule_matcher.required_literal`) reads it; RE2 then refuses what it cannot run in linear time
(lookarounds, backreferences, atomic groups, possessive repeats)."""

from __future__ import annotations

import re
from functools import lru_cache


class UnsafeRegex(ValueError):
    """A pattern RE2 cannot run (the message says which construct)."""


def _options(flags: int):
    import re2    # imported when a user's pattern is first compiled (the CLI path does not pay for it)

    opts = re2.Options()
    opts.log_errors = False          # RE2 would otherwise print its own error on stderr
    opts.case_sensitive = not flags & re.IGNORECASE
    opts.dot_nl = bool(flags & re.DOTALL)
    opts.max_mem = 64 << 20          # a pattern such as x{1000}{1000} is refused, not built
    return opts


class LinearPattern:
    """`re.Pattern`'s `search`, `match` and `fullmatch`, on RE2; `pattern` and `flags` as `re`'s."""

    __slots__ = ("pattern", "flags", "_rx")

    def __init__(self, source: str, flags: int = 0) -> None:
        flags = re.compile(source, flags).flags    # re.error: the syntax as users know it
        import re2

        try:
            self._rx = re2.compile(source, _options(flags))
        except Exception as e:    # re2's own error type is private
            raise UnsafeRegex(_why(source, e)) from None
        self.pattern = source
        self.flags = flags

    def search(self, text: str):
        return self._rx.search(text)

    def match(self, text: str):
        return self._rx.match(text)

    def fullmatch(self, text: str):
        return self._rx.fullmatch(text)


def _why(source: str, e: Exception) -> str:
    detail = e.args[0] if e.args else e
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    return (f"regex {source!r} cannot be matched in linear time ({detail}); lookarounds, "
            "backreferences, atomic groups and possessive repeats are not supported")


@lru_cache(maxsize=1024)
def compile_linear(source: str, flags: int = 0) -> LinearPattern:
    return LinearPattern(source, flags)
