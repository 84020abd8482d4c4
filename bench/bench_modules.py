"""What the module tree and the host hotspots add to a cold compare of the real eager/compiled pair.

    python bench/bench_modules.py                  # 5 runs of each, alternated
    python bench/bench_modules.py --repeat 5 A B   # another pair

Times, whole process (CPU: user + sys of the process and its forked children; wall beside it),
`kerneldiff compare A B --format json --no-cache` without and with `--modules --hotspots`
(alternated, so load on the machine falls on both alike; the median of each, and their ratio).
Then, in one process (median of as many runs), each reading alone after the comparison (both
sides' module paths and the aligned tree; both sides' host self times and the launch-bound idle's
attribution; the JSON they add) against that process's own cold compare (interpreter, imports,
both loads, comparison, JSON): the added work measured where it runs, the steadier figure on a
shared machine, where two whole processes differ by ±15 % run to run. Both readings are computed
only when asked; the target is <= 10 % on the cold compare. It prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces"
PAIR = (TRACES / "h100_llama_eager_sdpa.json.gz", TRACES / "h100_llama_compiled.json.gz")

IN_PROCESS = """
import resource, sys, time

def cpu():   # this process and its forked children (the side loaded beside it)
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

from kerneldiff.cli.module_report import json_document
from kerneldiff.core.numbers import strict_json
from kerneldiff.core.session import Session
s = Session(sys.argv[1:3], use_cache=False, fork_pair=True)
s.load_all()
cmp = s.compare()
t0 = cpu(); plain = strict_json(cmp); t1 = cpu()
mc = s.modules(); t2 = cpu()
hot = s.host_hotspots(); t3 = cpu()
doc = strict_json(json_document(cmp, mc, hot)); t4 = cpu()
# the cold compare: interpreter, imports, both loads, the comparison and its JSON
print(f"{t1:.4f} {t2 - t1:.4f} {t3 - t2:.4f} {(t4 - t3) - (t1 - t0):.4f}")
"""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one command, its forked children included: on a shared machine the
    CPU time is the steadier figure."""
    t, c = time.perf_counter(), _cpu()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t, _cpu() - c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", nargs="?", default=str(PAIR[0]))
    ap.add_argument("b", nargs="?", default=str(PAIR[1]))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    for p in (args.a, args.b):
        if not Path(p).exists():
            print(f"bench_modules: {p}: not found (../shared/traces absent?)", file=sys.stderr)
            return 2
    exe = [sys.executable, "-m", "kerneldiff.cli"]
    base = [*exe, "compare", args.a, args.b, "--format", "json", "--no-cache"]
    plain, extra = [], []
    for _ in range(args.repeat):
        plain.append(run(base))
        extra.append(run([*base, "--modules", "--hotspots"]))
    print(f"pair: {Path(args.a).name} vs {Path(args.b).name}, {args.repeat} runs each, alternated")
    for i, what in ((0, "wall"), (1, "CPU")):
        mp, me = statistics.median(x[i] for x in plain), statistics.median(x[i] for x in extra)
        print(f"{what:4s} cold compare --format json       median {mp:6.2f} s  "
              f"(runs: {', '.join(f'{x[i]:.2f}' for x in plain)})")
        print(f"{what:4s}   + --modules --hotspots         median {me:6.2f} s  "
              f"(runs: {', '.join(f'{x[i]:.2f}' for x in extra)})")
        print(f"{what:4s}   added                          {me - mp:+6.2f} s  (ratio {me / mp:.3f}, {(me - mp) / mp:+.1%})")
    # the added work measured where it runs, against the same process's cold compare: steadier than
    # the difference of two whole processes on a loaded machine
    parts = []
    for _ in range(args.repeat):
        out = subprocess.run([sys.executable, "-c", IN_PROCESS, args.a, args.b], check=True, capture_output=True,
                             text=True).stdout.split()
        parts.append(tuple(map(float, out)))
    med = [statistics.median(p[i] for p in parts) for i in range(4)]
    added = [sum(p[1:]) for p in parts]
    ratio = statistics.median(a / p[0] for a, p in zip(added, parts))
    print(f"in one process, CPU (median of {args.repeat}): cold compare --format json {med[0]:.3f} s; added: "
          f"module tree {med[1]:.3f} s, host hotspots {med[2]:.3f} s, their JSON {med[3]:.3f} s; "
          f"added / cold compare {ratio:.3f} ({ratio:+.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
