"""The import rules, read from the source with `ast` (nothing is imported, lazy imports inside
functions count, imports under `if TYPE_CHECKING:` do not):

* the front ends (tui/, cli/) reach core only through `Session` and the types it returns, the
  report and error modules, and the display helpers listed in FRONT_END_MAY_USE (each entry with
  its reason);
* core never imports Textual, Rich or a front end;
* core is layered (LAYERS): every subpackage and top-level module of core has a layer, and imports
  only from lower layers; packages on one layer stand side by side and import none of each other;
* inside a package the modules have an order (PACKAGE_ORDER, lowest first, the order to read
  them in): a module imports only modules listed before it;
* no import cycle among core's subpackages, nor among its modules.

A new package or module fails the test until it is placed in LAYERS or PACKAGE_ORDER.

Today's breaches are listed by name in the *_TODO sets below; fixing one means deleting its line
(the test fails on a listed breach that is gone, so the lists only shrink).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = "kerneldiff.core"

# What a front end may import from core: a module (all of it) or (module, names).
FRONT_END_MAY_USE: dict[str, frozenset[str] | None] = {
    # the one way in: the session protocol, its kinds, and every result type and helper the front
    # ends take (kerneldiff.core.session re-exports them, each with its reason)
    "kerneldiff.core.session": None,
    "kerneldiff.core.errors": None,
    # writing results out, and the numbers every front end shows the same way
    "kerneldiff.core.report": None,
    "kerneldiff.core.numbers": None,
}

# Front-end imports that break the rule today: (file, imported name). None left; keep it so.
FRONT_END_TODO: set[tuple[str, str]] = set()

# Module cycles inside core today (each as its sorted members): none left; keep it so.
CYCLES_TODO: set[tuple[str, ...]] = set()
# Subpackage cycles inside core today: none left; keep it so.
PACKAGE_CYCLES_TODO: set[tuple[str, ...]] = set()

# Core's layers, lowest first: each subpackage or top-level module of core (`__init__` is the
# package kerneldiff.core itself) imports only from the layers below its own.
LAYERS: list[set[str]] = [
    # regular expressions compiled, dataclasses made, on first use; msgspec imported without typing_extensions
    {"lazy_pattern", "lazy_dataclass", "msgspec_import"},
    # import nothing of core: kernel names (demangled, shortened, made safe to print), interned
    # strings, number formats, phase names, the demo traces' paths, how a kernel crosses from a
    # session to the front ends (KernelRef)
    {"names", "strings", "numbers", "phase_names", "demo", "kernel_ref"},
    {"errors"},           # the one error type (its messages show paths through names.visible)
    {"fileio", "gzip_stream", "model"},    # files opened safely, gzip inflated; the columnar trace model
    {"processes"},        # every process kerneldiff starts (workers, a forked child, a pool), one policy
    {"cache_keys"},       # where caches live, and their keys: a file as it is now, the code
    {"aie", "synth"},     # AIE (NPU) traces, read and analysed on their own; the synthetic trace generator
    {"ingest"},           # a trace file into a model (its probe asks aie.detect whether a trace is AIE's)
    {"analysis"},         # readings of one model: names, classes, passes, phases, layers, timeline, work
    {"compare"},          # two models side by side: the Comparison
    {"report"},           # a Comparison (and a run's tables) written out: CSV tables, Markdown, HTML, Perfetto
    {"gate"},             # the CI gate's verdict over series of runs, with its report
    {"comparison_cache"},   # comparisons kept on disk beside the models, read back without them
    {"orchestration"},    # how a Session's work is carried out: processes, warm-up, comparisons kept
    {"compare_ahead"},    # a pair loaded and compared in a forked child while the explorer starts
    {"trace_session"},    # Session: one GPU trace or a pair, from file paths to results
    {"ranks"},            # runs of many ranks: RunSession loads each rank through Session
    {"session"},          # the one way in for the front ends: the protocol, open_session, the result types
    {"__init__"},         # kerneldiff.core re-exports Session and friends
]

# Imports against LAYERS today, as (module, imported module) below kerneldiff.core: none left (the
# loader returns the trace's columns; analysis.readings computes the readings). Keep it so.
LAYER_TODO: set[tuple[str, str]] = set()

# Inside each package, its modules lowest first (a nested package's modules as `sub.module`): a
# module imports only modules listed before it, so the list is also the order to read them in.
# __init__ files are left out (a package's __init__ re-exporting its modules is not a layer).
PACKAGE_ORDER: dict[str, list[str]] = {
    "ingest": [
        "longstrings",      # strings too long to hold, cut while reading
        "document",         # the document's top level walked as JSON: where traceEvents is, what follows
        "probe",            # instant metadata from the head and tail
        "schema",           # the event fields read, written once (the decoders' structs and lists)
        "decode", "scan",   # a slice of events decoded: msgspec; the compiled scanner
        "columns",          # decoded events into numpy columns
        "slices",           # the events array cut into slices at event boundaries
        "source",           # the bytes of a trace (gzip inflated in a thread), slice after slice
        "read_result",      # what a read produced: columns of runs, counts, metadata
        "shm",              # shared-memory segments for the workers, untracked
        "workers",          # worker processes for big files
        "build",            # columns into one model
        "cache",            # loaded models kept on disk
        "loader",           # the load: probe, read, build, the cache, progress and cancellation
    ],
    "analysis": [
        "stats",                                 # durations of a group of kernels: the one Stats
        "linear_regex", "rule_matcher",          # the registry's regex engine and rule matcher
        "inductor_names", "registry", "classify",   # Inductor kernel names, the registry, the classifier
        "peaks", "links",                        # hardware peaks; links between devices
        "modules",                               # nn.Module calls: the model's own structure
        "stacks",                                # the layer blocks and the stacks (towers) they form
        "pass_kinds",                            # steady, warm-up, capture and compile passes
        "cut_work", "attribution",               # kernel -> launch -> cpu_op joins
        "passes", "forward_phase",               # forward passes; a model that never generates
        "pass_extent",                           # a pass's kernels launched inside its forward call
        "forward_end",                           # a forward's end where no recorded call spans it
        "phases", "layers",                      # the passes' phases, the layers in them
        "devices", "timeline",                   # per-device readings; busy and idle time, streams
        "trace_totals", "pass_lanes",            # one trace's totals; one pass on its own time axis
        "summary",                               # per-trace summaries
        "comm_params", "comm_shapes", "comm_places", "collective_pairs", "collectives",   # collectives, their sizes
                                                 # and their pairs across ranks
        "nesting", "module_tree", "host_hotspots",   # calls nested by their spans; kernels per module
                                                 # path; host self time and launch-bound idle by host op
        "host_time",                             # host time behind launch-bound idle
        "eager_attention",                       # bmm -> softmax -> bmm booked as attention
        "flops", "layer_groups",                 # work (FLOPs, bytes) per kernel; kernels by layer and pass
        "readings",                              # the pipeline: every reading of a trace's columns
        "kernel_roof",                           # one kernel under the roofline
        "side_readings",                         # one side's readings for a comparison
    ],
    "compare": [
        "work_result", "side_timeline", "host_result", "fusion_params", "result",   # the JSON-ready result types
        "recording", "pass_basis",               # recording options; the window the headline measures
        "split", "layer_significance",           # a ledger row's launches/slower split; layer t-tests
        "same_work",                             # whether a same-name kernel pair ran the same shapes
        "align",                                 # kernel alignment inside a layer
        "op_fusion", "swap", "fusion_model", "fusion",   # fusion findings and their savings
        "ledger", "throughput", "comparability",  # the gap ledger, throughput, like with like
        "ledger_fusions",                        # fused operations in a ledger row of their own
        "engine",                                # compare(a, b) -> Comparison
        "one_sided", "row_kernels", "pass_pairs",   # readings beside the comparison
        "host_compare", "module_compare",        # host hotspots and the module tree, both sides
        "module_pairs",                          # a module's kernel pairs
    ],
    "report": ["format", "labels", "headline", "table_names", "work_tables", "tables", "module_table", "run_tables",
               "markdown", "html", "perfetto", "run_report", "gate_report"],
    "gate": ["spec", "fingerprint", "series", "noise", "repeats", "result", "verdict", "rank_floor", "runs"],
    "names": ["visible", "parts", "demangle", "generic", "display", "gpus"],
    "ranks": ["identify", "summary", "cluster", "run", "session"],
    "synth": ["names", "trace", "pair", "ranks"],
    "aie": ["detect", "analysis", "session", "synth"],
    "processes": ["forkserver", "fork_child", "pool", "progress_board"],
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return "kerneldiff." + ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


@cache   # each file is parsed once for all the checks below
def _imports(path: Path) -> tuple[tuple[str, str | None], ...]:
    """(module, name or None) for every import in the file, relative ones resolved."""
    me = _module(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out: list[tuple[str, str | None]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for c in child.orelse:
                    visit(c)
                continue
            if isinstance(child, ast.Import):
                out.extend((a.name, None) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - child.level + 1]
                    mod = ".".join(base + ([child.module] if child.module else []))
                else:
                    mod = child.module or ""
                out.extend((mod, a.name) for a in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return tuple(out)


def _files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _core_modules() -> set[str]:
    return {_module(p) for p in _files("core")}


def _target(mod: str, name: str | None, modules: set[str]) -> str:
    """The core module an import reaches: `from pkg import sub` reaches pkg.sub when it is one."""
    if name and f"{mod}.{name}" in modules:
        return f"{mod}.{name}"
    return mod


def _allowed(mod: str, name: str | None, allow: str, names: frozenset[str] | None) -> bool:
    if names is None:
        return mod == allow or mod.startswith(allow + ".")
    return mod == allow and name in names


def _front_end_breaches() -> set[tuple[str, str]]:
    modules = _core_modules()
    bad = set()
    for folder in ("tui", "cli"):
        for path in _files(folder):
            for mod, name in _imports(path):
                if not (mod == CORE or mod.startswith(CORE + ".")):
                    continue
                target = _target(mod, name, modules)
                whole = name is None or target != mod      # a module imported, not a name from one
                label = target if whole else f"{mod}.{name}"
                if not any(_allowed(target, None if whole else name, allow, names)
                           for allow, names in FRONT_END_MAY_USE.items()):
                    bad.add((str(path.relative_to(ROOT)), label))
    return bad


def test_front_ends_reach_core_only_through_session_results_and_display_helpers():
    bad = _front_end_breaches()
    new = sorted(bad - FRONT_END_TODO)
    assert not new, "front end imports core beyond Session and its results:\n" + "\n".join(map(str, new))
    fixed = sorted(FRONT_END_TODO - bad)
    assert not fixed, "fixed: delete from FRONT_END_TODO:\n" + "\n".join(map(str, fixed))


def test_core_never_imports_the_ui():
    bad = []
    for path in _files("core"):
        for mod, _ in _imports(path):
            top = mod.split(".")[0]
            if top in ("textual", "rich") or mod.startswith(("kerneldiff.tui", "kerneldiff.cli")):
                bad.append(f"{path.relative_to(ROOT)} imports {mod}")
    assert not bad, bad


def _graph() -> dict[str, set[str]]:
    modules = _core_modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for path in _files("core"):
        me = _module(path)
        graph[me]
        for mod, name in _imports(path):
            target = _target(mod, name, modules)
            if target in modules and target != me:
                graph[me].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """Strongly connected components of more than one node (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = set()
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        n = stack.pop()
                        on.discard(n)
                        comp.append(n)
                        if n == node:
                            break
                    if len(comp) > 1:
                        found.add(tuple(sorted(comp)))
    return found


def _short(cycle: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(m.removeprefix(CORE + ".") for m in cycle)


def test_no_import_cycle_between_core_modules():
    """A package's __init__ re-exporting its modules is not a cycle with them: __init__ files are
    left out of the module graph (their imports are counted for the package graph below)."""
    graph = {m: {t for t in ts if not _is_package(t)} for m, ts in _graph().items() if not _is_package(m)}
    cycles = {_short(c) for c in _cycles(graph)}
    new = sorted(cycles - CYCLES_TODO)
    assert not new, new
    assert not sorted(CYCLES_TODO - cycles), "fixed: delete from CYCLES_TODO"


def _is_package(mod: str) -> bool:
    rel = mod.removeprefix(CORE).lstrip(".").replace(".", "/")
    return (ROOT / "core" / rel / "__init__.py").exists()


def _subpackage(mod: str) -> str:
    rest = mod.removeprefix(CORE).lstrip(".")
    return rest.split(".")[0] or "__init__"


def test_no_import_cycle_between_core_subpackages():
    packages: dict[str, set[str]] = defaultdict(set)
    for me, targets in _graph().items():
        if me == CORE:      # core/__init__ re-exports Session and friends: above everything
            continue
        for t in targets:
            if t != CORE and _subpackage(t) != _subpackage(me):
                packages[_subpackage(me)].add(_subpackage(t))
    cycles = _cycles(packages)
    new = sorted(cycles - PACKAGE_CYCLES_TODO)
    assert not new, new
    assert not sorted(PACKAGE_CYCLES_TODO - cycles), "fixed: delete from PACKAGE_CYCLES_TODO"


def test_the_checker_sees_a_planted_cycle_and_a_lazy_import():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {("a", "b", "c")}
    src = ROOT / "core" / "session.py"
    assert any(m.startswith(CORE) for m, _ in _imports(src))


def _reads_session_models(path: Path) -> list[int]:
    """Lines where `<…>session.models` is read (a front end reaching past the session into a model)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Attribute) and node.attr == "models":
            v = node.value
            name = v.attr if isinstance(v, ast.Attribute) else v.id if isinstance(v, ast.Name) else ""
            if name.endswith("session"):
                out.append(node.lineno)
    return out


def test_front_ends_read_no_model_through_the_session(tmp_path):
    """The explorer and the CLI ask the session (overview, loaded, label, run, absent_phase…), never
    its models."""
    bad = [f"{p.relative_to(ROOT)}:{n}" for folder in ("tui", "cli") for p in _files(folder)
           for n in _reads_session_models(p)]
    assert not bad, bad
    planted = tmp_path / "planted.py"
    planted.write_text("m = self.session.models[0]\nn = session.models\nk = self.models\n")
    assert sorted(_reads_session_models(planted)) == [1, 2]


def _layer_of() -> dict[str, int]:
    return {name: i for i, names in enumerate(LAYERS) for name in names}


def _rel(mod: str) -> str:
    return mod.removeprefix(CORE + ".")


def test_every_package_and_top_level_module_of_core_has_a_layer():
    found = {_subpackage(m) for m in _core_modules()}
    placed = set(_layer_of())
    assert sum(map(len, LAYERS)) == len(placed), "a name is on two layers"
    assert not sorted(found - placed), f"place these in LAYERS: {sorted(found - placed)}"
    assert not sorted(placed - found), f"gone: delete from LAYERS: {sorted(placed - found)}"


def _layer_breaches(graph: dict[str, set[str]], layer: dict[str, int]) -> set[tuple[str, str]]:
    """(module, imported module) pairs where a package imports from its own layer or above."""
    bad = set()
    for me, targets in graph.items():
        for t in targets:
            a, b = _subpackage(me), _subpackage(t)
            if a != b and b != "__init__" and layer.get(a, -1) <= layer.get(b, -1):
                bad.add((_rel(me), _rel(t)))
    return bad


def test_core_imports_only_from_lower_layers():
    bad = _layer_breaches(_graph(), _layer_of())
    new = sorted(bad - LAYER_TODO)
    assert not new, "imports from the same layer or above (see LAYERS):\n" + "\n".join(map(str, new))
    assert not sorted(LAYER_TODO - bad), "fixed: delete from LAYER_TODO:\n" + "\n".join(map(str, sorted(LAYER_TODO - bad)))


def _inner(mod: str) -> str:
    """A module's name inside its top package: `kerneldiff.core.ingest.probe` -> `probe`."""
    return _rel(mod).partition(".")[2]


def _order_breaches(graph: dict[str, set[str]], order: dict[str, list[str]]) -> list[str]:
    """Imports inside a package of a module not listed before the importer, and modules not listed."""
    bad = []
    for me, targets in sorted(graph.items()):
        package = _subpackage(me)
        if _is_package(me) or package not in order:
            continue
        names = order[package]
        if _inner(me) not in names:
            bad.append(f"{_rel(me)}: place it in PACKAGE_ORDER[{package!r}]")
            continue
        for t in sorted(targets):
            if _subpackage(t) != package or _is_package(t):
                continue
            if _inner(t) not in names or names.index(_inner(t)) > names.index(_inner(me)):
                bad.append(f"{_rel(me)} imports {_rel(t)}, listed after it in PACKAGE_ORDER[{package!r}]")
    return bad


def test_modules_inside_a_package_import_only_those_listed_before_them():
    graph = _graph()
    modules_of: dict[str, set[str]] = defaultdict(set)
    for m in graph:
        if not _is_package(m) and "." in _rel(m):
            modules_of[_subpackage(m)].add(_inner(m))
    several = {p for p, ms in modules_of.items() if len(ms) > 1}
    assert not sorted(several - set(PACKAGE_ORDER)), f"give these packages a PACKAGE_ORDER: {sorted(several - set(PACKAGE_ORDER))}"
    for package, names in PACKAGE_ORDER.items():
        assert len(set(names)) == len(names), f"PACKAGE_ORDER[{package!r}] lists a module twice"
        gone = sorted(set(names) - modules_of[package])
        assert not gone, f"gone: delete from PACKAGE_ORDER[{package!r}]: {gone}"
    bad = _order_breaches(graph, PACKAGE_ORDER)
    assert not bad, "\n".join(bad)


def test_the_layer_checks_see_a_planted_breach():
    core = CORE + "."
    graph = {core + "model": {core + "analysis.passes"}, core + "analysis.passes": {core + "model"},
             core + "ingest.probe": {core + "ingest.loader", core + "errors"}, core + "ingest.loader": set()}
    layer = {"errors": 0, "model": 1, "ingest": 2, "analysis": 3}
    assert _layer_breaches(graph, layer) == {("model", "analysis.passes")}
    assert _order_breaches(graph, {"ingest": ["probe", "loader"]}) == \
        ["ingest.probe imports ingest.loader, listed after it in PACKAGE_ORDER['ingest']"]
    assert _order_breaches(graph, {"ingest": ["loader"]}) == ["ingest.probe: place it in PACKAGE_ORDER['ingest']"]


# --- the front ends ----------------------------------------------------------------------------

def _front_end_graph(folder: str) -> dict[str, set[str]]:
    """One front end's module graph (every import, lazy ones too); a package's __init__ re-exporting
    its modules is not a cycle with them, so packages are left out as in core's module graph."""
    modules = {_module(p) for p in _files(folder)}
    packages = {_module(p) for p in _files(folder) if p.name == "__init__.py"}
    graph: dict[str, set[str]] = defaultdict(set)
    for path in _files(folder):
        me = _module(path)
        if me in packages:
            continue
        graph[me]
        for mod, name in _imports(path):
            target = _target(mod, name, modules)
            if target in modules and target != me and target not in packages:
                graph[me].add(target)
    return graph


def test_no_import_cycle_between_front_end_modules():
    found = {folder: sorted(_cycles(_front_end_graph(folder))) for folder in ("cli", "tui")}
    assert all(_front_end_graph(folder) for folder in found), "no front-end module read"
    assert found == {"cli": [], "tui": []}, found


def test_the_front_end_checker_sees_the_compare_and_runs_report_edge():
    """The graph holds what the source imports: `compare` runs `runs_report` for runs of ranks, and
    both take the shared options and output from `output` (a planted edge back would be a cycle)."""
    graph = _front_end_graph("cli")
    assert "kerneldiff.cli.runs_report" in graph["kerneldiff.cli.compare"]
    assert "kerneldiff.cli.output" in graph["kerneldiff.cli.runs_report"]
    planted = {k: set(v) for k, v in graph.items()}
    planted["kerneldiff.cli.runs_report"].add("kerneldiff.cli.compare")
    assert ("kerneldiff.cli.compare", "kerneldiff.cli.runs_report") in _cycles(planted)
