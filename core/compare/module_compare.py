"""The model's module tree, side by side: GPU time per module path on both traces.

Both sides' compared kernels each sit in one leaf (`kerneldiff.core.analysis.module_tree`); the
aligned tree is the union of both sides' paths, a node on both sides being the same module. The
paths are matched as recorded (`path`) when they meet for most of the GPU time on both sides
(identical models on two GPUs meet exactly); otherwise (module names that differ: eager against
compiled, renamed classes) both sides are re-read by their decoder layers (`layer N`, matched by
the layer's index: `layer`), with the calls below each layer's call matched by path. A node only one
side has says so (`a only`, `b only`). Where one side's leaf is another's inner node, that side's
kernels there go to the node's `(self)` child, matched with the other side's own kernels there, or,
when the other side's time there is mostly in calls below the node, to `(unsplit)` (compiled code,
whose layer is one graph, against eager modules), so on each side a node's time is its children's sum
and the root's is the side's total kernel time.

Figures are on the comparison's basis: totals when both sides hold as many passes, else per pass.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from kerneldiff.core.analysis.module_tree import SELF, side_tree

UNSPLIT = "(unsplit)"   # a side's kernels at a node whose time the other side records in calls below it
from kerneldiff.core.analysis.timeline import timeline

MIN_PATH_COVER = 0.5   # below this share of either side's kernel time on shared leaf paths: by layer


@dataclass
class ModuleSide:
    time_us: float          # summed kernel time
    span_us: float          # first kernel start to last kernel end, per pass, summed (per pass: averaged)
    kernels: float
    launches: float         # distinct runtime launch calls
    per_pass_us: list[float] = field(default_factory=list)   # kernel time in each compared pass


@dataclass
class ModuleNode:
    name: str
    path: str                        # the labels from the root, joined by " > "
    match: str                       # path | layer | a only | b only | root
    a: ModuleSide | None
    b: ModuleSide | None
    gap_us: float                    # a - b kernel time
    ratio: float | None              # a / b
    share_of_wall_gap: float | None  # gap / the wall-clock gap
    children: list["ModuleNode"] = field(default_factory=list)


@dataclass
class ModuleComparison:
    form: str                        # "path" | "layer"
    sources: dict[str, str]          # per side: modules | operators | none
    basis: str
    wall_gap_us: float
    root: ModuleNode
    notes: list[str] = field(default_factory=list)
    matched: dict[str, int] = field(default_factory=dict)   # nodes per match kind

    def to_dict(self) -> dict:
        return asdict(self)


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def _cover(pa: list, ta: np.ndarray, pb: list) -> float:
    """Share of one side's kernel time in leaves whose path the other side has too."""
    total = float(ta.sum())
    if total <= 0:
        return 1.0
    have = set(pb)
    return float(sum(t for p, t in zip(pa, ta.tolist()) if p in have)) / total


def _leaf_stats(tree, model, form: str):
    """Per leaf: kernel time per pass bucket (the compared passes, then one for kernels in none),
    kernels, launches, and per-pass first start and last end."""
    paths, leaf = (tree.paths, tree.leaf) if form == "path" else (tree.layer_paths, tree.layer_leaf)
    k = model.kernels
    rows = tree.rows
    nb = tree.n_passes + 1
    bucket = np.where(tree.passes >= 0, tree.passes, tree.n_passes)
    cell = leaf * nb + bucket
    size = len(paths) * nb
    dur = np.maximum(k.dur[rows], 0.0)
    time = np.bincount(cell, weights=dur, minlength=size).reshape(len(paths), nb)
    count = np.bincount(leaf, minlength=len(paths)).astype(float)
    start = np.full(size, np.inf)
    end = np.full(size, -np.inf)
    np.minimum.at(start, cell, k.ts[rows])
    np.maximum.at(end, cell, k.ts[rows] + dur)
    li = k.launch[rows]
    ok = li >= 0
    # distinct (leaf, launch call) pairs: a graph launch's kernels may fall in several layers
    pairs = np.sort(leaf[ok] * (len(model.launches) + 1) + li[ok])
    pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]] if len(pairs) else pairs
    launches = np.bincount(pairs // (len(model.launches) + 1), minlength=len(paths)).astype(float)
    return paths, time, count, launches, start.reshape(len(paths), nb), end.reshape(len(paths), nb)


def _under(paths, time) -> tuple[dict, dict]:
    """Per node of one side: its time, and the time of its own `(self)` leaf."""
    under: dict[tuple, float] = {}
    own: dict[tuple, float] = {}
    for p, t in zip(paths, time.sum(1).tolist()):
        for d in range(len(p) + 1):
            under[p[:d]] = under.get(p[:d], 0.0) + t
        if p and p[-1] == SELF:
            own[p[:-1]] = t
    return under, own


def _placed(paths, other) -> list[tuple]:
    """Each leaf of one side at its node of the aligned tree. `other`: the other side's leaves and
    times."""
    inner = {q[:i] for q in other[0] for i in range(1, len(q))}
    o_under, o_own = _under(other[0], other[1])
    # this side's kernels at a node the other side splits further: the node's own kernels, as the
    # other side's own `(self)` ones, unless the other side's are mostly in calls below it
    # (compiled code against eager modules): then they are this side's `(unsplit)` whole
    return [p + (SELF if o_own.get(p, 0.0) >= 0.5 * o_under.get(p, 0.0) else UNSPLIT,) if p in inner else p
            for p in paths]


def _nodes(paths, time, count, launches, start, end, other) -> dict:
    """Every node (each leaf's prefixes) of one side: [time per bucket, kernels, launches, start, end].
    `other`: the other side's leaves and times."""
    out: dict[tuple, list] = {}
    for i, p in enumerate(_placed(paths, other)):
        for d in range(len(p) + 1):
            key = p[:d]
            acc = out.get(key)
            if acc is None:
                out[key] = [time[i].copy(), count[i], launches[i], start[i].copy(), end[i].copy()]
            else:
                acc[0] += time[i]
                acc[1] += count[i]
                acc[2] += launches[i]
                np.minimum(acc[3], start[i], out=acc[3])
                np.maximum(acc[4], end[i], out=acc[4])
    return out


def _side(acc, div: int) -> ModuleSide:
    t, n, la, s, e = acc
    spans = np.where(e > s, e - s, 0.0)
    return ModuleSide(time_us=float(t.sum()) / div, span_us=float(spans.sum()) / div, kernels=float(n) / div,
                      launches=float(la) / div, per_pass_us=t[:-1].tolist())


def _aligned(ta, tb, a, b):
    """(form, both sides' `_leaf_stats` in it, the note saying why by layer or None): by path, or
    by decoder layer where the paths meet for too little of the kernel time."""
    la, lb = _leaf_stats(ta, a, "path"), _leaf_stats(tb, b, "path")
    cover = min(_cover(la[0], la[1].sum(1), lb[0]), _cover(lb[0], lb[1].sum(1), la[0]))
    if cover < MIN_PATH_COVER and ta.layer_paths and tb.layer_paths and \
            any(p[0].startswith("layer ") for p in ta.layer_paths) and any(p[0].startswith("layer ") for p in tb.layer_paths):
        return "layer", _leaf_stats(ta, a, "layer"), _leaf_stats(tb, b, "layer"), \
            (f"the module paths meet for {cover:.0%} of the kernel time: aligned by decoder layer "
             f"(`layer N` by the layer's index), the calls below each layer by path")
    return "path", la, lb, None


def node_rows(a, b, path: str, phase: str = "all") -> tuple[np.ndarray, np.ndarray]:
    """The compared kernel rows of each side in the node `path` of the aligned tree (its `path`:
    labels from the root joined by " > "; "" the root: every compared kernel)."""
    ta, tb = side_tree(a, phase), side_tree(b, phase)
    form, la, lb, _ = _aligned(ta, tb, a, b)
    out = []
    for t, mine, other in ((ta, la, lb), (tb, lb, la)):
        joined = [" > ".join(p) for p in _placed(mine[0], other[:2])]
        hit = np.array([not path or j == path or j.startswith(path + " > ") for j in joined], bool)
        leaf = t.leaf if form == "path" else t.layer_leaf
        out.append(t.rows[hit[leaf]] if len(leaf) else t.rows[:0])
    return out[0], out[1]


def compare_modules(a, b, phase: str = "all") -> ModuleComparison:
    """The module trees of models a and b in `phase`, aligned."""
    ta, tb = side_tree(a, phase), side_tree(b, phase)
    per_pass = ta.n_passes != tb.n_passes and len(ta.rows) > 0 and len(tb.rows) > 0
    da, db = (ta.n_passes, tb.n_passes) if per_pass else (1, 1)
    notes = []
    for key, t, m in (("A", ta, a), ("B", tb, b)):
        if t.source == "operators":
            notes.append(f"{key} records no module events (no with_stack): its tree is the operator tree "
                         f"(cpu_ops nested by their CPU spans)")
        elif t.source == "none":
            notes.append(f"{key} records neither module events nor CPU operators: every kernel is 'outside'")
    form, la, lb, note = _aligned(ta, tb, a, b)
    notes += [note] if note else []
    na, nb = _nodes(*la, lb[:2]), _nodes(*lb, la[:2])
    wa, wb = timeline(a, phase, keep_cut=False).whole, timeline(b, phase, keep_cut=False).whole
    wall_gap = wa.span_us / da - wb.span_us / db
    matched: dict[str, int] = {}

    def build(key: tuple) -> ModuleNode:
        sa = _side(na[key], da) if na.get(key) is not None else None
        sb = _side(nb[key], db) if nb.get(key) is not None else None
        if key == ():
            match = "root"
        elif sa is None or sb is None:
            match = "a only" if sb is None else "b only"
        elif form == "layer" and len(key) == 1:
            match = "layer"
        else:
            match = "path"
        matched[match] = matched.get(match, 0) + 1
        ta_us, tb_us = (sa.time_us if sa else 0.0), (sb.time_us if sb else 0.0)
        gap = ta_us - tb_us
        node = ModuleNode(name=key[-1] if key else "total", path=" > ".join(key), match=match, a=sa, b=sb,
                          gap_us=gap, ratio=_ratio(ta_us, tb_us) if sa and sb else None,
                          share_of_wall_gap=gap / wall_gap if wall_gap else None)
        kids = children.get(key, [])
        node.children = sorted((build(c) for c in kids), key=lambda n: (-abs(n.gap_us), n.name))
        return node

    children: dict[tuple, list] = {}
    for key in set(na) | set(nb):
        if key:
            children.setdefault(key[:-1], []).append(key)
    root = build(())
    return ModuleComparison(form=form, sources={"a": ta.source, "b": tb.source},
                            basis="per_pass" if per_pass else "total", wall_gap_us=wall_gap, root=root,
                            notes=notes, matched=matched)


def walk(node: ModuleNode, depth: int = 0):
    """(depth, node) for the node and every node below it, in the tree's order."""
    yield depth, node
    for c in node.children:
        yield from walk(c, depth + 1)


def top_rows(mc: ModuleComparison, limit: int = 25, max_depth: int = 4) -> list[tuple[int, ModuleNode]]:
    """The tree's rows a report shows: the `limit` nodes (down to `max_depth`) with the largest |gap|,
    with the nodes above them, in the tree's order (children by |gap|)."""
    rows = [(d, n, i) for i, (d, n) in enumerate(walk(mc.root)) if d <= max_depth]
    keep: set[int] = set()
    stack: list[int] = []     # the open ancestors' positions while walking
    parents: dict[int, list[int]] = {}
    for d, n, i in rows:
        del stack[d:]
        parents[i] = list(stack)
        stack.append(i)
    for d, n, i in sorted(rows, key=lambda r: (-abs(r[1].gap_us), r[0], r[2])):
        if len(keep) >= limit:
            break
        keep.add(i)
        keep.update(parents[i])
    return [(d, n) for d, n, i in rows if i in keep]


def ledger_parts(hot) -> list[dict]:
    """The `idle: launch-bound` ledger row split by host operation (a `host_compare.HostHotspots`'s
    idle_by_op, each side's parts summing to the row)."""
    return [{"name": r.name, "kind": r.kind, "a_us": r.a_us, "b_us": r.b_us, "gap_us": r.gap_us}
            for r in hot.idle_by_op]
