"""Which files make a run, and which rank each file is.

A run is given as a directory (its trace files), a glob, or several files joined by commas. A
file's rank comes from its `distributedInfo` (rank, world_size, backend) when every file has one
and no two share a rank; else from the engines' file names (vLLM `…_rank3.…`, SGLang `…-TP-3…`,
torchtitan `rank3_trace…`); else from the order of the names. The run says which.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

from kerneldiff.core.errors import TraceError

TRACE_SUFFIXES = (".json", ".json.gz", ".pt.trace.json", ".pt.trace.json.gz")
# the engines' rank patterns, most specific first (ASCII digits only)
NAME_PATTERNS = (
    ("vLLM", re.compile(r"_rank([0-9]+)\.", re.A)),
    ("SGLang", re.compile(r"-TP-([0-9]+)(?![0-9])", re.A)),
    ("torchtitan", re.compile(r"(?:^|/)rank([0-9]+)_trace", re.A)),
    ("rank N", re.compile(r"rank[-_]?([0-9]+)(?![0-9])", re.A | re.I)),
)


@dataclass(frozen=True)
class RankFile:
    rank: int
    path: str


def is_run(arg: str) -> bool:
    """A directory, a glob or a comma-joined list: a run of rank traces rather than one file. A
    directory named like a trace (`x.json`, a symlink to a folder) is a mistaken trace, not a run."""
    return (os.path.isdir(arg) and not arg.rstrip("/").endswith(TRACE_SUFFIXES)) or ("," in arg and not os.path.exists(arg)) or \
        (any(c in arg for c in "*?[") and not os.path.exists(arg))


def run_files(arg: str) -> list[str]:
    """The trace files a run argument names, sorted; a TraceError when it names none."""
    if os.path.isdir(arg):
        files = [os.path.join(arg, f) for f in sorted(os.listdir(arg))
                 if f.endswith(TRACE_SUFFIXES) and os.path.isfile(os.path.join(arg, f))]
        if not files:
            raise TraceError(arg, "is a directory without trace files (.json, .json.gz)")
        return files
    if "," in arg and not os.path.exists(arg):
        files = [p for p in (x.strip() for x in arg.split(",")) if p]
    else:
        files = sorted(glob.glob(arg))
        if not files:
            raise TraceError(arg, "no such file (and no file matches it as a pattern)")
    for f in files:
        if not os.path.isfile(f):
            raise TraceError(f, "no such file")
    return files


def other_files(arg: str) -> list[str]:
    """A run directory's files that are not named like traces (README, logs): skipped, and said."""
    if not os.path.isdir(arg):
        return []
    return [f for f in sorted(os.listdir(arg))
            if not f.endswith(TRACE_SUFFIXES) and os.path.isfile(os.path.join(arg, f)) and not f.startswith(".")]


def not_a_trace(problem: str) -> bool:
    """A file that reads as JSON but holds no trace (a config, metrics): in a run directory or glob
    it is skipped with a note; a trace that is broken is still an error (a rank must not vanish)."""
    return "no 'traceEvents' array" in problem or problem == "not a trace"


def run_name(arg: str) -> str:
    """A run as the reports name it: its directory or glob, as given."""
    return arg.rstrip("/") or arg


def identify(paths: list[str], distributed: list[dict]) -> tuple[list[RankFile], str]:
    """Each file's rank, in rank order, and where the ranks came from."""
    ranks = [d.get("rank") if isinstance(d, dict) else None for d in distributed]
    if all(isinstance(r, int) for r in ranks) and len(set(ranks)) == len(ranks):
        return sorted((RankFile(r, p) for r, p in zip(ranks, paths)), key=lambda x: x.rank), "distributedInfo"
    for engine, rx in NAME_PATTERNS:
        found = [rx.search(os.path.basename(p)) for p in paths]
        nums = [int(m.group(1)) if m and len(m.group(1)) <= 9 else None for m in found]
        if all(n is not None for n in nums) and len(set(nums)) == len(nums):
            return sorted((RankFile(n, p) for n, p in zip(nums, paths)), key=lambda x: x.rank), \
                f"file names ({engine})"
    return [RankFile(i, p) for i, p in enumerate(sorted(paths))], "file order"
