"""What `info` spends after the reader, stage by stage: CPU ms (`time.process_time`) of each step of
one load in a fresh process, the stages run in turn as `kerneldiff.core.analysis.readings.read` and
`info` run them, medians of several processes; with --before, another build's kerneldiff alternated
with this one run by run (a loaded machine moves both alike).

    python bench/bench_stages.py TRACE [--repeat 7] [--before /path/to/other/.venv/bin/python]

Not a test: prints a table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

# one load, each step timed; printed as "name cpu_ms" lines
STAGES = r"""
import os, sys, time
c0 = time.process_time()
out = []
def mark(name):
    global c0
    c = time.process_time(); out.append((name, (c - c0) * 1e3)); c0 = c
import gc; gc.disable()
import numpy; mark("import numpy")
path = sys.argv[1]
from kerneldiff.core.ingest import loader; mark("import loader")
info = loader.probed(path, None); mark("probe")
from kerneldiff.core.analysis.classify import Classifier
cl = Classifier.load(None); mark("classifier")
model = loader.read_reported(path, info, None, lambda *a: None, None); mark("read")
from kerneldiff.core.analysis import attribution, eager_attention, layers, phases; mark("import readings")
model.categories = list(cl.categories)
attribution.link(model); mark("link")
cl.assign(model); mark("classify")
eager_attention.mark(model, cl); mark("eager attention")
phases.assign(model, cl); mark("phases")
layers.segment(model, cl); mark("layers")
attribution.quality_warnings(model, cl); mark("quality warnings")
from kerneldiff.core.analysis import summary; mark("import summary")
s = summary.summarize(model); mark("summarize")
from kerneldiff.core.numbers import strict_json
strict_json({"summary": s}, indent=2); mark("JSON text")
for name, ms in out:
    print(f"{name}\t{ms:.3f}")
"""


def once(python: str, trace: str) -> dict[str, float]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    p = subprocess.run([python, "-c", STAGES, trace], env=env, capture_output=True, text=True, check=True)
    return {name: float(ms) for name, ms in (line.split("\t") for line in p.stdout.splitlines())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose kerneldiff is measured")
    ap.add_argument("--before", default=None, help="another build's interpreter, alternated with it")
    args = ap.parse_args(argv)
    builds = [("kerneldiff", args.python)] + ([("before", args.before)] if args.before else [])
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _ in builds}
    for _ in range(args.repeat):
        for name, python in builds:
            runs[name].append(once(python, args.trace))
    stages = list(runs["kerneldiff"][0])
    med = {name: {s: statistics.median(r[s] for r in rs) for s in stages} for name, rs in runs.items()}
    print(f"{'stage':20}" + "".join(f"{name:>12}" for name, _ in builds) + "   CPU ms, medians of "
          f"{args.repeat}")
    for s in stages:
        print(f"{s:20}" + "".join(f"{med[name][s]:12.1f}" for name, _ in builds))
    after_read = stages[stages.index("read") + 1:]
    print(f"{'after the reader':20}" + "".join(f"{sum(med[name][s] for s in after_read):12.1f}"
                                              for name, _ in builds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
