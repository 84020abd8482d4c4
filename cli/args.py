"""Argument types and groups shared by `kerneldiff aie` and the explorer's launcher, kept apart from
both so that opening the explorer does not import the AIE report (Rich tables, the AIE analysis)."""

from __future__ import annotations

import argparse


def _number(kind: type, what: str, ok, bound: str):
    """An argparse type: `kind` (int or float) that satisfies `ok`, else '<bound>'."""
    def parse(s: str):
        try:
            v = kind(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {what}: {s!r}") from None
        if not ok(v):
            raise argparse.ArgumentTypeError(f"must be {bound}: {s}")
        return v
    return parse


_positive_int = _number(int, "an integer", lambda v: v > 0, "positive")
_count = _number(int, "an integer", lambda v: v >= 0, ">= 0")
_positive_float = _number(float, "a number", lambda v: v > 0, "positive")


def add_shape_arguments(group) -> None:
    """--M --K --N --rows --cols: the GEMM an AIE trace ran (shared with the explorer launcher)."""
    for dim in ("--M", "--K", "--N"):
        group.add_argument(dim, type=_positive_int)
    group.add_argument("--rows", type=_positive_int, help="AIE rows the GEMM is spread over")
    group.add_argument("--cols", type=_positive_int, help="AIE columns the GEMM is spread over")
