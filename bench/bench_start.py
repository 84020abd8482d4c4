"""The explorer's first frame from process start, as a user sees it, in a real pseudo-terminal.

    python bench/bench_start.py [--repeat 5] [A B]

Starts `kerneldiff A B` (default: the bundled demo pair) in a pty of 120x36 and times from just
before the exec to the moment the terminal has received the first screen that names side A's
GPU (the metadata screen or the comparison, whichever comes first), then kills the app. Baseline in
the same run: `python -c "import textual.app"` alone (what any Textual app pays before drawing),
and a bare Textual app drawing one line. Warm install: one run first fills the bytecode caches.
It prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import sys
import termios
import time

BARE_APP = """
from textual.app import App
from textual.widgets import Static
class A(App):
    def compose(self):
        yield Static("bare textual app ready")
A().run()
"""


def time_to(argv: list[str], marker: bytes, timeout: float = 30.0) -> float:
    """Seconds from fork to `marker` appearing in the pty's output."""
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.environ.update(TERM="xterm-256color", COLUMNS="120", LINES="36")
        os.execvp(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    seen = b""
    took = float("nan")
    try:
        while time.perf_counter() - t0 < timeout:
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
            if marker in seen:
                took = time.perf_counter() - t0
                break
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return took


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args(argv)
    from kerneldiff.core.demo import DEMO_A, DEMO_B
    from kerneldiff.core.ingest.probe import probe

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
