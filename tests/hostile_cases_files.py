"""Hostile corpus, round two: files that are not regular, the cache, the probe's limits, terminal safety of file names.

Cases use the builders of hostile_corpus; the corpus's harness (test_hostile.py) runs each through
`kerneldiff info` and `kerneldiff compare`. What needs another harness (a FIFO with a guard, the
`aie` command, a tampered cache, an environment variable, file names with control characters)
is in tests/hostile/test_files.py, which builds its files with the helpers here."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

from hostile_corpus import Case, dumps, good_events, kernel, metadata, trace_bytes

DEEP = 1_000_000                     # nesting the probe must survive in a few MB of memory
BLANK_MEMBER_MIB = 16


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _symlink(target: str):
    def make(path: Path) -> None:
        os.symlink(target, path)
    return make


def _self_loop(path: Path) -> None:
    os.symlink(path.name, path)      # a link to itself: ELOOP, not ENOENT


def deep_args_head(depth: int = DEEP) -> bytes:
    """The first event's args nested `depth` levels deep: all the probe reads is that nesting."""
    deep = (b'{"ph": "X", "cat": "kernel", "name": "deep", "ts": 5, "dur": 2, "args": '
            + b'{"a": ' * depth + b"1" + b"}" * depth + b"}")
    return trace_bytes([deep] + [dumps(e) for e in good_events()])


def deep_list_metadata(depth: int = DEEP) -> bytes:
    """A metadata value of `depth` nested lists before traceEvents (the probe's head)."""
    return (dumps(metadata())[:-1] + b', "deep": ' + b"[" * depth + b"]" * depth + b', "traceEvents": '
            + dumps(good_events()) + b"}")


def write_blank_gzip(path: Path, head: bytes, tail: bytes, gib: float) -> None:
    """`head`, then `gib` GiB of blanks, then `tail`, as gzip members: ~1 MB per GiB on disk."""
    blank = gzip.compress(b" " * (BLANK_MEMBER_MIB << 20), compresslevel=9, mtime=0)
    with open(path, "wb") as f:
        f.write(gzip.compress(head, mtime=0))
        for _ in range(int(gib * 1024) // BLANK_MEMBER_MIB):
            f.write(blank)
        f.write(gzip.compress(tail, mtime=0))


def write_blank_gzip_trace(path: Path, gib: float) -> None:
    """`gib` GiB of blanks between two events (legal JSON), metadata at the end (as HF traces do):
    the probe looks for metadata in the tail of a small gzip, which once meant inflating it all."""
    head = b'{"traceEvents": [' + dumps(kernel()) + b","
    tail = dumps(kernel(ts=200.0)) + b"], " + dumps(metadata())[1:]
    write_blank_gzip(path, head, tail, gib)


def _blank_gzip_trace(path: Path) -> None:
    write_blank_gzip_trace(path, 0.5)   # the probe's bound shows at any size; the load stays short


def _empty_first_member(path: Path) -> None:
    """`cat empty.gz trace.gz`: a multi-member gzip is one stream (gzip(1), the README)."""
    path.write_bytes(gzip.compress(b"", mtime=0) + gzip.compress(b"  \n", mtime=0)
                     + gzip.compress(dumps({**metadata(), "traceEvents": good_events()}), mtime=0))


def aie_events_bytes() -> bytes:
    from kerneldiff.core.aie.synth import AiePlan, make_aie_events

    events, _ = make_aie_events(AiePlan(iterations=2, warmup=1))
    return json.dumps(events).encode()


def aie_with_null_args() -> bytes:
    """An AIE trace whose first event is a process_name with "args": null."""
    events = json.loads(aie_events_bytes())
    return json.dumps([{"ph": "M", "name": "process_name", "pid": 99, "args": None}] + events).encode()


def write_aie_blank_gzip(path: Path, gib: float = 3) -> None:
    """A valid AIE event array with `gib` GiB of blanks before its end: ~3 MB on disk."""
    events = aie_events_bytes()
    last = json.dumps(json.loads(events)[-1]).encode()    # repeated once after the blanks
    write_blank_gzip(path, events[:-1] + b",", b"\n" + last + b"]", gib)


def cases() -> list[Case]:
    n = len([e for e in good_events() if e.get("cat") == "kernel"])
    return [
        # --- not a regular file: refused from its stat, before any read ---
        Case("r2f_fifo", "a FIFO with no writer (open() would block forever)", "error", make=_fifo,
             problem="FIFO"),
        Case("r2f_dev_zero", "a symlink to /dev/zero (reads never end)", "error",
             make=_symlink("/dev/zero"), problem="character device"),
        Case("r2f_dev_urandom", "a symlink to /dev/urandom", "error",
             make=_symlink("/dev/urandom"), problem="character device"),
        Case("r2f_proc_cpuinfo", "a symlink to /proc/cpuinfo (size 0, yet it has content)", "error",
             make=_symlink("/proc/cpuinfo"), problem="pseudo-file"),
        Case("r2f_symlink_loop", "a symlink to itself", "error", make=_self_loop, problem="symlink loop"),
        Case("r2f_dangling_symlink", "a symlink to nothing", "error", make=_symlink("nowhere/absent.json"),
             problem="dangling symlink"),
        Case("r2f_dir_symlink", "a symlink to a directory", "error", make=_symlink("/"), problem="directory"),
        # --- the probe's limits ---
        Case("r2f_deep_args_head", f"the first event's args nested {DEEP:,} deep (the probe's head)", "any",
             deep_args_head(), problem="nested|deep|malformed", big=True),
        Case("r2f_deep_metadata_head", f"a metadata value of {DEEP:,} nested lists before traceEvents", "any",
             deep_list_metadata(), problem="nested|deep", big=True),
        Case("r2f_aie_null_args", "an AIE trace with a process_name whose args are null", "error",
             aie_with_null_args(), problem="AIE", info="load"),
        Case("r2f_blank_gzip_tail_meta", "512 MiB of blanks between two events, metadata after them, 0.5 MB of gzip",
             "any", make=_blank_gzip_trace, suffix=".json.gz", problem="too large|memory|limit", big=True),
        Case("r2f_empty_first_member", "an empty and a blank gzip member before the trace", "load",
             make=_empty_first_member, suffix=".json.gz", kernels=n),
    ]
