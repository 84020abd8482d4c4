"""Stacks of layers: the repeated blocks of a model, grouped by the container that runs them.

A decoder LLM has one stack (its decoder layers under the model's `layers` list). A detector or a
retriever runs two encoders (OWLv2: a 24-layer vision tower and a 12-layer text tower, both
`Owlv2EncoderLayer` under two `Owlv2Encoder` instances); a vision-language model runs a vision
tower before its decoder (different block classes). Each stack is the block calls under one
container call; a pass's layers are numbered stack after stack (vision 0-23, then text 24-35), so
layer index i is the same block of the same stack on every pass and on both sides of a comparison
of the same model.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from kerneldiff.core.analysis.modules import ModuleCalls, kernels_per_class, launches_in
from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.numbers import distinct

# A block class wrapped by a container covers (nearly) all of the container's kernels; a layer's
# own parts (attention, MLP) cover far less than this share of it.
CONTAINER_SHARE = 0.9
# A block of another stack must contain a token mixer: a module call of such a class (an MLP head
# called twice is not a stack of layers).
_MIXER = LazyPattern(r"attention|attn|mixer", re.IGNORECASE)
# Words that say what a module is, not which tower it is (stripped when naming a stack).
_GENERIC = {"model", "models", "transformer", "transformers", "encoder", "encoders", "decoder", "decoders",
            "pretrained", "pre", "trained", "for", "causal", "lm", "tower", "stack", "layers", "backbone",
            "block", "blocks", "module", "base"}
_WORDS = LazyPattern(r"[A-Z]+[0-9]*(?=[A-Z][a-z]|$|_)|[A-Z]?[a-z]+[0-9]*|[0-9]+|[A-Z]+[0-9]*")


def parents(calls: ModuleCalls) -> np.ndarray:
    """Each call's directly enclosing call (same thread, one level up), -1 for a top-level call."""
    out = np.full(len(calls), -1, np.int64)
    for th in distinct(calls.tid).tolist():
        sel = np.flatnonzero(calls.tid == th)          # in start order
        d = calls.depth[sel]
        for lvl in range(1, int(d.max()) + 1 if len(d) else 1):
            up = sel[d == lvl - 1]
            here = sel[d == lvl]
            # the latest call one level up that started before (it is open: depth says so)
            i = np.searchsorted(up, here, side="right") - 1
            out[here] = np.where(i >= 0, up[np.maximum(i, 0)], -1)
    return out


def _candidates(calls: ModuleCalls, launch_t: np.ndarray) -> dict[str, int]:
    """Repeated block classes (two or more instances, all at one depth) and their kernel counts."""
    counts = kernels_per_class(calls, launch_t, np.arange(len(calls)))
    out = {}
    for c, n in counts.items():
        sel = calls.of_class(c)
        inst = calls.instance[sel]
        if n <= 0 or (inst < 0).any() or len(distinct(inst)) < 2:
            continue
        if np.any(calls.depth[sel] != calls.depth[sel][0]):
            continue
        out[c] = n
    return out


def _inside(calls: ModuleCalls, outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """Per call in `inner`: whether it starts inside one of the `outer` calls on its thread."""
    ok = np.zeros(len(inner), bool)
    for th in distinct(calls.tid[inner]).tolist():
        o = outer[calls.tid[outer] == th]
        o = o[np.argsort(calls.ts[o], kind="stable")]
        sel = np.flatnonzero(calls.tid[inner] == th)
        ok[sel] = launches_in(calls.ts[o], calls.end[o], calls.ts[inner[sel]]) >= 0
    return ok


def _unwrap(calls: ModuleCalls, cands: dict[str, int], c: str) -> str:
    """A container of repeated blocks (`Owlv2Encoder` around its `Owlv2EncoderLayer`s) covers the
    same kernels as its blocks: the blocks are the layers."""
    while True:
        outer = calls.of_class(c)
        inner_cls = None
        for y, n in cands.items():
            if y == c or n < CONTAINER_SHARE * cands[c]:
                continue
            rows = calls.of_class(y)
            if len(rows) < 2 * len(outer) or calls.depth[rows[0]] <= calls.depth[outer[0]]:
                continue
            if _inside(calls, outer, rows).all():
                inner_cls = y if inner_cls is None or n > cands[inner_cls] else inner_cls
        if inner_cls is None:
            return c
        c = inner_cls


def block_classes(calls: ModuleCalls, launch_t: np.ndarray) -> list[str]:
    """The layer classes: the repeated block holding a token mixer (an attention or mixer module;
    any block when none does) that launches the most kernels, unwrapped from its container; then
    blocks of other stacks: repeated classes outside those blocks and not containing them, whose
    calls hold a token mixer."""
    cands = _candidates(calls, launch_t)
    if not cands:
        return []
    mixers = np.flatnonzero(np.isin(calls.cls_id, [i for i, c in enumerate(calls.classes) if _MIXER.search(c)]))

    def mixes(c: str) -> bool:
        rows = calls.of_class(c)
        own = mixers[calls.depth[mixers] > calls.depth[rows[0]]]
        return bool(len(own)) and bool(_inside(calls, rows, own).any())

    # the blocks that hold a token mixer, when some do (a detector's heads launch more kernels than
    # a text layer, and are no layer)
    pool = {c: n for c, n in cands.items() if mixes(c)} or cands
    best = max(pool, key=lambda c: (pool[c], -len(calls.of_class(c)), c))
    chosen = [_unwrap(calls, cands, best)]
    for c in sorted(cands, key=lambda c: -cands[c]):
        if c in chosen:
            continue
        rows = calls.of_class(c)
        taken = np.concatenate([calls.of_class(x) for x in chosen])
        if _inside(calls, taken, rows).any() or _inside(calls, rows, taken).any():
            continue
        if c != _unwrap(calls, cands, c) or not mixes(c):
            continue
        chosen.append(c)
    return chosen


def _words(cls: str) -> list[str]:
    return _WORDS.findall(cls)


def stack_name(calls: ModuleCalls, parent: np.ndarray, container: int, prefix: set[str]) -> str:
    """What a stack is, from its container's class and its ancestors' (`Owlv2Encoder` inside
    `Owlv2VisionTransformer` -> "vision"): the first word that is neither the model's name nor a
    generic one."""
    i = container
    while i >= 0:
        for w in _words(calls.classes[int(calls.cls_id[i])]):
            if w.lower() not in _GENERIC and w not in prefix:
                return w.lower()
        i = int(parent[i])
    return ""


def model_prefix(calls: ModuleCalls) -> set[str]:
    """The model's own name (`Owlv2`, `Llama`): the first word most of its classes share."""
    firsts = Counter(w[0] for w in map(_words, calls.classes) if w)
    if not firsts:
        return set()
    w, n = firsts.most_common(1)[0]
    return {w} if n >= 2 else set()


def group(calls: ModuleCalls, rows: np.ndarray, parent: np.ndarray) -> tuple[np.ndarray, list[dict]]:
    """Each block call's stack (index into the returned stacks, in order of first call), and the
    stacks as {name, module, container}: a stack is the blocks under one container instance."""
    cont = parent[rows]
    labels = [calls.label(int(c)) if c >= 0 else "" for c in cont.tolist()]
    order: dict[str, int] = {}
    first_row: dict[str, int] = {}
    for lab, r in zip(labels, cont.tolist()):
        if lab not in order:
            order[lab] = len(order)
            first_row[lab] = r
    sid = np.array([order[l] for l in labels], np.int64)
    prefix = model_prefix(calls)
    stacks = []
    names = Counter()
    for lab, i in order.items():
        blocks = sorted({calls.classes[int(calls.cls_id[r])] for r in rows[sid == i].tolist()})
        name = stack_name(calls, parent, first_row[lab], prefix) if first_row[lab] >= 0 else ""
        if not name:
            joined = " ".join(blocks).lower()
            name = "decoder" if "decoder" in joined else "encoder" if "encoder" in joined else "layers"
        names[name] += 1
        stacks.append({"name": name, "module": ", ".join(blocks), "container": lab})
    seen = Counter()
    for s in stacks:   # two stacks that name alike are told apart by their order
        if names[s["name"]] > 1:
            seen[s["name"]] += 1
            s["name"] = f"{s['name']}{seen[s['name']]}"
    return sid, stacks


def stack_of_layer(stacks: list[dict], layer: int) -> tuple[dict | None, int]:
    """The stack holding global layer index `layer`, and the layer's index within it."""
    for s in stacks:
        if s["first_layer"] <= layer < s["first_layer"] + s["layers"]:
            return s, layer - s["first_layer"]
    return None, layer


def layer_label(stacks: list[dict], layer: int) -> str:
    """`7` with one stack; `vision 7` / `text 7` with several."""
    if len(stacks) < 2:
        return str(layer)
    s, i = stack_of_layer(stacks, layer)
    return f"{s['name']} {i}" if s is not None else str(layer)
