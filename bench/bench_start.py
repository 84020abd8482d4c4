"""The explorer's first frame, and its comparison, from process start, as a user sees them, in a
real pseudo-terminal.

    python bench/bench_start.py [--repeat 5] [A B]
    python bench/bench_start.py --comparison [--repeat 5] [A B]   # default pair: the real H100/H200 eager
    python bench/bench_start.py --comparison --kerneldiff /work/main/.venv/bin/kerneldiff   # + a build to compare
    python bench/bench_start.py --cold-first-frame [--kerneldiff OTHER] A B   # a pair never opened

Starts `kerneldiff A B` (default: the bundled demo pair) in a pty of 120x36 and times from just
before the exec to the moment the terminal has received the first screen that names side A's
GPU (the metadata screen or the comparison, whichever comes first), then kills the app. Baseline in
the same run: `python -c "import textual.app"` alone (what any Textual app pays before drawing),
and a bare Textual app drawing one line. Warm install: one run first fills the bytecode caches.

With --cold-first-frame it times to the first frame of a pair never opened (each run with an empty
model cache: the start screen, while the traces load behind it), the builds alternated.

With --comparison it times to the comparison's header (`wall A/B`) instead, in three rows: *cold*,
each run with an empty cache (the traces read from their JSON), *models cached*, each run after
one that stored both models (`$XDG_CACHE_HOME/kerneldiff/models`) with the stored comparison
deleted, and *models + comparison cached*, after one that stored both models and their comparison
(kerneldiff.core.comparison_cache). Each build (this checkout's, and each --kerneldiff given, such
as the main checkout's for the "before" figures) has a private XDG_CACHE_HOME that keeps what
kerneldiff keeps across runs by design (the compiled classifier registry); the builds and rows are
alternated run by run. It prints figures, wall clock and the process's CPU (user + system, its
workers included); it is not a test.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import shutil
import signal
import statistics
import struct
import sys
import tempfile
import termios
import time
from pathlib import Path

BARE_APP = """
from textual.app import App
from textual.widgets import Static
class A(App):
    def compose(self):
        yield Static("bare textual app ready")
A().run()
"""


REAL_PAIR = ("h100_llama_eager_sdpa", "h200_llama_eager_sdpa")
TRACES = Path(__file__).resolve().parent.parent.parent / "shared" / "traces"
COMPARISON = b"A/B "     # the comparison header's ratio label (`wall A/B `, `wall/pass A/B `)


def time_to(argv: list[str], marker: bytes, timeout: float = 30.0, env: dict | None = None,
            cpu: list | None = None, linger: float = 0.0) -> float:
    """Seconds from fork to `marker` appearing in the pty's output (`cpu`: gets the process's CPU
    seconds up to its kill, the workers it reaped included; `linger`: seconds the process runs on
    after the marker before it is killed, as a user looking at it would let it)."""
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.update(TERM="xterm-256color", COLUMNS="120", LINES="36", **(env or {}))
        os.execvp(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    seen = b""
    took = end = float("nan")
    try:
        while time.perf_counter() - t0 < timeout and not time.perf_counter() >= end:
            r, _, _ = select.select([fd], [], [], 0.05)
            if not r:
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if took != took and marker in seen:
                took = time.perf_counter() - t0
                end = time.perf_counter() + linger
    finally:
        os.kill(pid, signal.SIGKILL)
        _, _, use = os.wait4(pid, 0)
        os.close(fd)
        if cpu is not None:
            cpu.append(use.ru_utime + use.ru_stime)
    return took


ROWS = ("cold (no cache)", "models cached", "models + comparison")


def comparison(paths: list[str], repeat: int, builds: list[tuple[str, list[str]]]) -> None:
    """Start to comparison for each build, cold, with the models cached and with their comparison
    stored too, alternated run by run."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)   # else every run recompiles what it imports
    with tempfile.TemporaryDirectory() as tmp:
        figures: dict[tuple[str, str], tuple[list, list]] = {}
        for name, kd in builds:
            # warm: bytecode, page cache, the registry
            time_to([*kd, *paths], COMPARISON, env={"XDG_CACHE_HOME": f"{tmp}/{name}"}, linger=1.0)
            for row in ROWS:
                figures[name, row] = ([], [])
        for _ in range(repeat):
            for name, kd in builds:
                env = {"XDG_CACHE_HOME": f"{tmp}/{name}"}
                models = Path(tmp, name, "kerneldiff", "models")
                for row in ROWS:
                    if row.startswith("cold"):
                        shutil.rmtree(models, ignore_errors=True)
                    else:
                        # stores both models and, once it is shown, the comparison
                        time_to([*kd, *paths], COMPARISON, env=env, linger=1.0)
                        if row == "models cached":
                            for p in models.glob("*.kdr"):
                                p.unlink()
                    wall, cpu = figures[name, row]
                    wall.append(time_to([*kd, *paths], COMPARISON, env=env, cpu=cpu))
    print(f"start to comparison shown, pty 120x36, {' vs '.join(Path(p).name for p in paths)}; "
          f"median / min / max of {repeat}")
    for (name, row), (wall, cpu) in figures.items():
        print(f"{name:8} {row:22} wall {statistics.median(wall):5.2f} / {min(wall):5.2f} / {max(wall):5.2f} s   "
              f"cpu {statistics.median(cpu):5.2f} / {min(cpu):5.2f} / {max(cpu):5.2f} s", flush=True)


def cold_first_frame(paths: list[str], repeat: int, builds: list[tuple[str, list[str]]]) -> None:
    """The first frame of a pair never opened (the start screen naming A's GPU while the traces
    load behind it), each run with an empty model cache, builds alternated run by run."""
    from kerneldiff.core.ingest.probe import probe

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    marker = probe(paths[0]).gpu.split()[0].encode()
    figures: dict[str, list[float]] = {name: [] for name, _ in builds}
    with tempfile.TemporaryDirectory() as tmp:
        for name, kd in builds:   # warm: bytecode, page cache, the registry
            time_to([*kd, *paths], marker, env={"XDG_CACHE_HOME": f"{tmp}/{name}"})
        for _ in range(repeat):
            for name, kd in builds:
                shutil.rmtree(Path(tmp, name, "kerneldiff", "models"), ignore_errors=True)
                figures[name].append(time_to([*kd, *paths], marker, env={"XDG_CACHE_HOME": f"{tmp}/{name}"}))
    print(f"first frame of a pair never opened, pty 120x36, {' vs '.join(Path(p).name for p in paths)}; "
          f"median / min / max of {repeat}")
    for name, xs in figures.items():
        print(f"{name:8} {statistics.median(xs) * 1000:6.0f} / {min(xs) * 1000:6.0f} / {max(xs) * 1000:6.0f} ms",
              flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--comparison", action="store_true", help="time to the comparison shown, cold and cached")
    ap.add_argument("--cold-first-frame", action="store_true",
                    help="time to the first frame of a pair never opened (an empty model cache each run)")
    ap.add_argument("--kerneldiff", action="append", default=[], metavar="PATH",
                    help="with --comparison or --cold-first-frame: another build's kerneldiff to time beside "
                         "this one, alternated "
                         "(e.g. the main checkout's, for the figures before a change); repeatable")
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args(argv)
    if args.comparison or args.cold_first_frame:
        builds = [("this", [sys.executable, "-m", "kerneldiff.cli"])]
        builds += [(f"build{i + 1}" if len(args.kerneldiff) > 1 else "other", [path])
                   for i, path in enumerate(args.kerneldiff)]
        paths = args.paths or [str(TRACES / f"{n}.json.gz") for n in REAL_PAIR]
        (comparison if args.comparison else cold_first_frame)(paths, args.repeat, builds)
        return 0
    from kerneldiff.core.demo import DEMO_A, DEMO_B
    from kerneldiff.core.ingest.probe import probe

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)   # else every run recompiles what changed since

    paths = args.paths or [str(DEMO_A), str(DEMO_B)]
    marker = probe(paths[0]).gpu.split()[0].encode()   # the first word of A's GPU name
    kd = [sys.executable, "-m", "kerneldiff.cli", *paths]
    rows = {
        "kerneldiff A B (first frame)": (kd, marker),
        "baseline: bare Textual app": ([sys.executable, "-c", BARE_APP], b"bare textual app ready"),
    }
    for argv_, m in rows.values():
        time_to(argv_, m)   # warm: bytecode caches, page cache
    print(f"first frame from process start, pty 120x36, median / max of {args.repeat}")
    for name, (argv_, m) in rows.items():
        xs = sorted(time_to(argv_, m) for _ in range(args.repeat))
        print(f"{name:34} {statistics.median(xs) * 1000:6.0f} ms  {xs[-1] * 1000:6.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
