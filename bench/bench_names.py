"""What naming a kernel costs: the demangler on hostile names (each must stay well under a second:
its work is bounded by depth, output and input limits, and tests/unit/test_names.py counts its calls)
and the classifier per distinct name (the loader classifies each distinct kernel name once).

    python bench/bench_names.py [--repeat 5]

CPU time (time.process_time), the best of --repeat runs. It prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import time

HOSTILE = {
    "deep pointers": "_Z1f" + "P" * 100_000 + "i",
    "substitutions feeding on each other": "_Z1fI" + "PS_" * 5_000 + "E",
    "many parameters": "_Z1fIiEv" + "S_" * 8_000,
    "a very long qualified name": "_ZN" + "1a" * 8_000 + "E",
    "nothing but openings": "_Z1fI" + "I" * 50_000,
    "a huge pack expanded": "_Z1fIJ" + "S0_" * 5_000 + "EEvDpT_",
    "template parameter references": "_Z1fIiEvT_" + "S0_" * 5_000,
    "nested templates": "_Z" + "N1aI" * 3_000,
}


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        c = time.process_time()
        fn()
        times.append(time.process_time() - c)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from kerneldiff.core.analysis.classify import Classifier
    from kerneldiff.core.names.demangle import demangle

    print(f"{'demangle, hostile name':40} {'chars':>8} {'CPU ms':>8}")
    for what, name in HOSTILE.items():
        # demangle keeps its answers (lru_cache): each run asks the uncached function
        print(f"{what:40} {len(name):8,} {best(lambda: demangle.__wrapped__(name), args.repeat) * 1e3:8.1f}")

    clf = Classifier.load()
    names = [f"void at::native::vectorized_elementwise_kernel<4, at::native::Op{i}<float>, std::array<char*, 3ul> >(int)"
             for i in range(300)]

    def classify_fresh():   # a new Classifier: nothing remembered from an earlier run
        Classifier(clf.rules, {c: {"role": clf.role(c)} for c in clf.categories}).classify_names(names)

    per = best(classify_fresh, args.repeat) / len(names)
    print(f"\nclassify, {len(names)} distinct names: {per * 1e6:.1f} µs CPU per name")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
