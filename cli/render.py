"""Small helpers shared by the text reports: literal text, short names, durations."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.text import Text

from kerneldiff.core.analysis.names import short_name, visible  # noqa: F401  (short_name re-exported for the reports)
from kerneldiff.core.report import format as fmt


FALLBACK_WIDTH = 80   # when the environment's width is unusable (COLUMNS=0 printed nothing at all)
NARROWEST = 40


def console(stderr: bool = False) -> Console:
    # soft_wrap off + highlight off: trace strings are printed exactly, never re-coloured
    c = Console(stderr=stderr, highlight=False, emoji=False, markup=False)
    if c.width < NARROWEST:
        c.width = FALLBACK_WIDTH
    return c


def literal(s: object, max_len: int | None = None) -> Text:
    """Trace strings as plain Text: never markup, control characters made visible."""
    s = visible(str(s))
    if max_len is not None and len(s) > max_len:
        s = short_name(s, max_len)
    return Text(s)


us = fmt.us        # one number formatter for every report and the explorer
size = fmt.size


def isatty_err() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
