"""Worker processes start under a UI that has captured stderr. Textual replaces sys.stderr with a
capture whose fileno() is -1; multiprocessing's resource tracker, which the fork server starts
first, passes that descriptor on and failed, so every big load in the explorer fell back to one
process. Each case runs in a fresh interpreter: the tracker is started once per process."""

from __future__ import annotations

import subprocess
import sys

from kerneldiff.core.demo import DEMO_A

SCRIPT = r"""
import sys, threading
from kerneldiff.core.ingest import loader, workers
from kerneldiff.core.processes import forkserver

class Capture:   # what Textual puts in sys.stderr while an app runs
    def write(self, text): return len(text)
    def flush(self): pass
    def fileno(self): return -1

path = sys.argv[1]
stop = threading.Event()
threading.Thread(target=stop.wait, daemon=True).start()   # a UI's threads: no plain fork
capture = Capture()
sys.stderr = capture
try:
    read = workers.read_parallel(path, 2, lambda done, total: None, slot=256 * 1024 + 2)
except workers.ParallelFallback as e:
    print(f"fell back to one process: {e}", file=sys.__stderr__)
    sys.exit(3)
finally:
    stop.set()
assert sys.stderr is capture, "the UI's stderr was not put back"
alone = loader._read_sequential(path, lambda done, total: None, True)
print(len(read.chunks), read.events, alone.events)
"""


def test_workers_start_when_stderr_is_a_capture_without_a_descriptor():
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(DEMO_A)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    runs, events, alone = map(int, r.stdout.split())
    assert runs > 2          # the file went out in several runs, to the workers
    assert events == alone > 0


def test_a_pair_loaded_side_by_side_reads_each_trace_in_this_process(tmp_path):
    """The explorer loads both traces at once: each in this process, and no fork server started
    for workers that would serve one load at a time; one trace, or the CLI's pair loaded in turn,
    leaves it to the reader (worker processes past the size threshold)."""
    from kerneldiff.core.processes.forkserver import PARALLEL_MIN_PLAIN, cpus
    from kerneldiff.core.session import Session

    big = tmp_path / "big.json"
    big.write_bytes(DEMO_A.read_bytes())
    with open(big, "r+b") as f:   # sparse: past the size that asks for workers
        f.truncate(PARALLEL_MIN_PLAIN + 1)
    explorer = Session([str(big), str(big)], side_by_side=True, use_cache=False)
    explorer.probe()
    assert explorer.load_workers() == 1 and not explorer.needs_workers()
    for s in (Session([str(big), str(big)], use_cache=False), Session([str(big)], side_by_side=True, use_cache=False)):
        s.probe()
        assert s.load_workers() is None
        assert s.needs_workers() == (cpus() > 1)
    assert Session([str(big), str(big)], side_by_side=True, workers=2).load_workers() == 2
