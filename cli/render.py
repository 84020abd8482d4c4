"""Small helpers shared by the text reports: literal text, short names, durations."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.text import Text

from core.names import short_name, visible  # noqa: F401  (short_name re-exported for the reports)


def console(stderr: bool = False) -> Console:
    # soft_wrap off + highlight off: trace strings are printed exactly, never re-coloured
    return Console(stderr=stderr, highlight=False, emoji=False, markup=False)


def literal(s: object, max_len: int | None = None) -> Text:
    """Trace strings as plain Text: never markup, control characters made visible."""
    s = visible(str(s))
    if max_len is not None and len(s) > max_len:
        s = short_name(s, max_len)
    return Text(s)


def us(x: float) -> str:
    """A duration in µs rendered with a sensible unit."""
    if x != x:
        return "-"
    a = abs(x)
    if a >= 1e6:
        return f"{x / 1e6:.2f} s"
    if a >= 1e3:
        return f"{x / 1e3:.2f} ms"
    return f"{x:.1f} µs"


def size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def isatty_err() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
