"""What the classifier's registry costs a process (issue 31: "compiled once, not in every process").

    python bench/bench_registry.py [--kd PATH/TO/kerneldiff] [--repeat 15]

For the install whose `kerneldiff` is given (default: this Python's), in fresh processes, each with
a private registry cache dir (so other installs sharing ~/.cache cannot evict its file):
  * CPU of `import kerneldiff.core.analysis.classify` (numpy, json and hashlib imported first: the
    loader has them anyway), of `Classifier.load()` with the cache warm, and of the first two names;
  * CPU and wall of `kerneldiff info <1-kernel trace> --no-cache` with the registry cache warm and
    cold (a new cache dir per run: TOML parsed, every regex compiled, gates read).
Min and median of the runs. To compare two versions, run it once with each one's `--kd` in the
same hour. It prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT.parent / "shared" / "traces" / "a100_triton_example.json.gz"

IN_PROCESS = """
import time
import numpy, json, hashlib, kerneldiff.core.numbers, kerneldiff.core.errors
c0 = time.process_time()
from kerneldiff.core.analysis.classify import Classifier
c1 = time.process_time()
clf = Classifier.load()
c2 = time.process_time()
clf.classify("triton_poi_fused_add_mul_0")
clf.classify("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)")
c3 = time.process_time()
print((c1 - c0) * 1e3, (c2 - c1) * 1e3, (c3 - c2) * 1e3)
"""


def _child_run(argv: list[str], env: dict) -> tuple[float, float, str]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), out


def _line(label: str, values: list[float], unit: str = "ms") -> str:
    return f"{label:<44} min {min(values):7.2f}  median {statistics.median(values):7.2f} {unit}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kd", default=str(Path(sys.executable).parent / "kerneldiff"))
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    if not TINY.exists():
        print(f"{TINY}: not here; nothing to measure")
        return 0
    python = str(Path(args.kd).parent / "python")
    warm = tempfile.mkdtemp(prefix="kd_bench_registry_")
    env_warm = dict(os.environ, XDG_CACHE_HOME=warm)
    _child_run([python, "-c", IN_PROCESS], env_warm)              # fills the cache and bytecode
    imp, load, first, info_warm, info_cold = [], [], [], [], []
    for _ in range(args.repeat):
        a, b, c = map(float, _child_run([python, "-c", IN_PROCESS], env_warm)[2].split())
        imp.append(a)
        load.append(b)
        first.append(c)
        info_warm.append(_child_run([args.kd, "info", str(TINY), "--no-cache"], env_warm)[:2])
        cold = dict(os.environ, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="kd_bench_registry_"))
        info_cold.append(_child_run([args.kd, "info", str(TINY), "--no-cache"], cold)[:2])
    print(f"{args.kd}, {args.repeat} runs, load average {os.getloadavg()[0]:.1f}")
    print(_line("import classify, CPU", imp))
    print(_line("Classifier.load(), cache warm, CPU", load))
    print(_line("first two names classified, CPU", first))
    print(_line("info --no-cache, registry cache warm, CPU", [c * 1e3 for _, c in info_warm]))
    print(_line("info --no-cache, registry cache cold, CPU", [c * 1e3 for _, c in info_cold]))
    print(_line("info --no-cache, registry cache warm, wall", [w * 1e3 for w, _ in info_warm]))
    print(_line("info --no-cache, registry cache cold, wall", [w * 1e3 for w, _ in info_cold]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
