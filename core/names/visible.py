"""A string from a trace or a file name made safe to print: the one such rule, used by every
message, report and screen (core.errors prints file names with it, so it sits below every layer)."""

from __future__ import annotations

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def visible(s: str) -> str:
    """`s` with every non-printable character (controls, ESC, bidi overrides, line separators)
    written as a visible escape, so a string from a trace or a file name cannot drive a terminal."""
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() else _NAMED.get(ch) or _escape(ord(ch)) for ch in s)


def _escape(o: int) -> str:
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"
