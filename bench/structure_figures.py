"""The structure in figures: modules per package of core/, cli/ and tui/, import edges between
modules (lazy imports inside functions count, `if TYPE_CHECKING:` ones do not), edges between
core's packages, and module cycles. Reads the source with `ast` (imports nothing).

    python bench/structure_figures.py
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "unit"))

import test_layering as L  # noqa: E402 - the layering test's own import reader and cycle finder


def main() -> int:
    for folder in ("core", "cli", "tui"):
        modules = {L._module(p) for p in L._files(folder)}
        per = Counter(m.split(".")[2] if m.count(".") >= 3 or L._is_package(m) and m.count(".") >= 2
                      else "(top)" for m in modules)
        print(f"{folder}/: {len(modules)} modules  " + ", ".join(f"{k} {v}" for k, v in sorted(per.items())))
    graph = L._graph()
    edges = sum(len(t) for t in graph.values())
    packages: dict[str, set[str]] = defaultdict(set)
    for me, targets in graph.items():
        for t in targets:
            if L._subpackage(t) != L._subpackage(me):
                packages[L._subpackage(me)].add(L._subpackage(t))
    plain = {m: {t for t in ts if not L._is_package(t)} for m, ts in graph.items() if not L._is_package(m)}
    print(f"core import edges: {edges} between modules, {sum(map(len, packages.values()))} between packages; "
          f"module cycles {len(L._cycles(plain))}")
    for folder in ("cli", "tui"):
        g = L._front_end_graph(folder)
        core = {(p, mod) for p in L._files(folder) for mod, _ in L._imports(p) if mod.startswith(L.CORE)}
        reached = {L._target(mod, None, L._core_modules()) for _, mod in core}
        print(f"{folder}/: {sum(map(len, g.values()))} edges inside, cycles {len(L._cycles(g))}, "
              f"core modules imported {len(reached)}, through: "
              + ", ".join(sorted({L._subpackage(m) for m in reached})))
    print(f"FRONT_END_MAY_USE entries {len(L.FRONT_END_MAY_USE)}; LAYER_TODO {len(L.LAYER_TODO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
