"""The command line's shared parts, defined once: the parser every command uses (its refusals are one
line like every other refusal), the argument types, the options several commands take (--phase,
--registry, --no-cache, --all-passes, --device, --rank, --jobs, --scheduler) and the AIE shape
group `kerneldiff aie` and the explorer's launcher share. Kept apart from the commands so that
opening the explorer does not import a report (Rich tables, the AIE analysis)."""

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

positive_int = flag_number(integer=True, lo=1, hi=MAX_COUNT)
gemm_dim = flag_number(integer=True, lo=1, hi=MAX_DIM)
count = flag_number(integer=True, lo=0, hi=MAX_COUNT)
positive_float = flag_number(lo=0, lo_excl=True)   # finite: "inf" and "1e400" are refused with "nan"
fraction = flag_number(lo=0, hi=1)
# timestamps are cycles at this clock: 1 kHz to 1 THz, so that no time they convert to overflows
clock_mhz = flag_number(lo=1e-3, hi=1e6)


def add_shape_arguments(group) -> None:
    """--M --K --N --rows --cols: the GEMM an AIE trace ran (shared with the explorer launcher)."""
    for dim in ("--M", "--K", "--N"):
        group.add_argument(dim, type=gemm_dim)
    group.add_argument("--rows", type=positive_int, help="AIE rows the GEMM is spread over")
    group.add_argument("--cols", type=positive_int, help="AIE columns the GEMM is spread over")


# --- options several commands share: each flag defined once, so it reads and checks the same in
# every command that takes it (a command passes its own help where the flag means more there) ---

_INDEX = flag_number(integer=True, lo=0, hi=2**62)    # a device or rank number


def add_phase(p) -> None:
    """--phase (compare, gate, the explorer): the phase the figures are read over."""
    from kerneldiff.core.session import PHASE_FILTERS

    p.add_argument("--phase", default="all", choices=PHASE_FILTERS)


def add_loading(p) -> None:
    """--registry --no-cache (every command that loads GPU traces, and the explorer)."""
    p.add_argument("--registry", help="extra classifier rules (TOML), tried before the shipped ones")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the index cache")


def add_all_passes(p, help: str) -> None:
    """--all-passes (compare, gate, the explorer): every pass, not the steady ones only."""
    p.add_argument("--all-passes", action="store_true", help=help)


def add_device(p, help: str) -> None:
    """--device (compare, info): one GPU of a file that holds several."""
    p.add_argument("--device", type=_INDEX, default=None, help=help)


def add_rank(p, help: str, metavar: str | None = None) -> None:
    """--rank (compare, gate, the explorer): one rank of each run instead of each run's slowest."""
    p.add_argument("--rank", type=_INDEX, default=None, metavar=metavar, help=help)


def add_runs(p, jobs_help: str, metavar: str | None = None) -> None:
    """--jobs --scheduler (compare, gate): how the ranks of a run are summarised."""
    p.add_argument("--jobs", type=flag_number(integer=True, lo=1, hi=1024), default=None, metavar=metavar,
                   help=jobs_help)
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="runs: summarise the ranks on a Dask cluster: tcp://HOST:PORT of its scheduler, or 'local' "
                        "for a LocalCluster here (default: $KERNELDIFF_SCHEDULER, else local processes; needs "
                        "kerneldiff[cluster])")
