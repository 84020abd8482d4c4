"""Argument types and groups shared by `kerneldiff aie` and the explorer's launcher, kept apart from
both so that opening the explorer does not import the AIE report (Rich tables, the AIE analysis);
and the parser every command uses, whose refusals are one line like every other refusal."""

from __future__ import annotations

import argparse

from kerneldiff.core.numbers import number


class UsageError(Exception):
    """A flag's value is refused after parsing (a KEY=VALUE item, a --peaks file): one line, exit 2.
    The message names the flag (or the file and key) and the problem."""


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, its width found as shutil.get_terminal_size finds it but without
    importing shutil (and the bz2 and lzma it imports: ~2 ms of every command, as argparse makes a
    formatter for each argument added)."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            width = _columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def _columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else stdout's terminal, else 80."""
    import os
    import sys

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class Parser(argparse.ArgumentParser):
    """argparse that refuses a flag in one line (`kerneldiff aie: argument --rows: must be …`), exit 2,
    instead of the usage text followed by the error. Subcommand parsers inherit the class."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        from kerneldiff.core.session import visible

        self.exit(2, f"{self.prog}: {visible(' '.join(message.split()))}\n")


def flag_number(*, integer: bool = False, lo: float | None = None, hi: float | None = None, lo_excl: bool = False):
    """An argparse type: a finite int or float within its bounds (kerneldiff.core.numbers.number)."""
    def parse(s: str):
        try:
            return number(s, integer=integer, lo=lo, hi=hi, lo_excl=lo_excl)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse


# Integer flags are bounded so that every count derived from them stays exact in the 64-bit
# integers the JSON writer takes (rows × cols cores < 2**62): a typo of twenty digits is refused,
# not carried into a crash. 2**31 cores or iterations, 2**40 per GEMM dimension are far beyond any
# AIE array or GEMM.
MAX_COUNT = 2**31
MAX_DIM = 2**40

_positive_int = flag_number(integer=True, lo=1, hi=MAX_COUNT)
_dim = flag_number(integer=True, lo=1, hi=MAX_DIM)
_count = flag_number(integer=True, lo=0, hi=MAX_COUNT)
_positive_float = flag_number(lo=0, lo_excl=True)   # finite: "inf" and "1e400" are refused with "nan"
_fraction = flag_number(lo=0, hi=1)
# timestamps are cycles at this clock: 1 kHz to 1 THz, so that no time they convert to overflows
_clock_mhz = flag_number(lo=1e-3, hi=1e6)


def add_shape_arguments(group) -> None:
    """--M --K --N --rows --cols: the GEMM an AIE trace ran (shared with the explorer launcher)."""
    for dim in ("--M", "--K", "--N"):
        group.add_argument(dim, type=_dim)
    group.add_argument("--rows", type=_positive_int, help="AIE rows the GEMM is spread over")
    group.add_argument("--cols", type=_positive_int, help="AIE columns the GEMM is spread over")
