"""Architecture detection and segmentation of each step's kernels into transformer layers.

Every layer of a transformer runs exactly one token mixer: an attention block, or in SSM / hybrid
models a state-space scan. Those kernels are the *anchors*: one anchor run per layer. A layer does
not start at its anchor but at its input norm, so each boundary is moved back to the last norm
kernel before the anchor (pre-norm models; fused norm+GEMM counts as a norm). The last layer ends
where the regular layers' pattern says (the same number of norms after its anchor as the others
have), leaving the final norm, lm_head and sampling as the epilogue. Nothing here depends on the
GPU vendor or on graph replay: it reads only the GPU kernel sequence.

When a trace has no step annotations, step boundaries are inferred from the anchor spacing: the
embedding / lm_head / sampling kernels between two forward passes make that gap clearly longer.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kerneldiff.core.analysis.attribution import launch_time
from kerneldiff.core.analysis.modules import launches_in, module_calls
from kerneldiff.core.analysis.stacks import block_classes, group, parents
from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.model import LayerSpan, Step, TraceModel
from kerneldiff.core.numbers import distinct, small_unique

# Attention kernels of one layer can be several launches (split-KV + combine, 3-D unified
# attention + reduce, rotary inside; eager attention's QKᵀ, softmax and ·V with the scale, mask
# and casts between them). Anchor kernels at most this many positions apart, with no GEMM or norm
# between them, are one anchor run.
ANCHOR_MERGE_GAP = 8
# A step break (when inferring steps) is a gap between anchors this much longer than the median.
STEP_GAP_FACTOR = 1.5
# Layer sizes (kernel counts) beyond this ratio of max to min earn a warning.
UNEVEN_RATIO = 1.5


def _roles(model: TraceModel, classifier) -> np.ndarray:
    """Role string per category id ('attention', 'norm', 'ssm', 'gemm', ...)."""
    roles = []
    for c in model.categories:
        r = classifier.role(c)
        if r != "norm" and any(classifier.role(x) == "norm" for x in classifier.components(c)):
            r = "norm"  # a fused norm (e.g. RMSNorm+GEMM) still starts a layer
        roles.append(r)
    return np.array(roles + ["other"], dtype=object)  # index -1 -> "other"


def detect_architecture(model: TraceModel, roles: np.ndarray) -> str:
    k = model.kernels
    if len(k) == 0:
        return "unknown"
    present = np.zeros(len(roles), dtype=bool)
    present[k.cat] = True          # category -1 marks the trailing "other"
    r = set(roles[present].tolist())  # the roles of the categories present, not one string per kernel
    has_attn, has_ssm = "attention" in r, "ssm" in r
    if has_attn and has_ssm:
        return "hybrid"
    if has_ssm:
        return "ssm"
    if has_attn:
        return "transformer"
    return "unknown"


def _anchor_runs(r: np.ndarray, anchor_roles: tuple[str, ...]) -> np.ndarray:
    """Start positions of anchor runs in a role sequence."""
    is_anchor = np.isin(r, anchor_roles)
    pos = np.nonzero(is_anchor)[0]
    if len(pos) == 0:
        return pos
    breaker = np.isin(r, ("gemm", "norm", "moe"))
    starts = [int(pos[0])]
    last = int(pos[0])
    for p in pos[1:].tolist():
        if p - last <= ANCHOR_MERGE_GAP and not breaker[last + 1:p].any():
            last = p
            continue
        starts.append(p)
        last = p
    return np.array(starts, dtype=np.int64)


def _common_suffix(a: np.ndarray, b: np.ndarray) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[len(a) - 1 - n] == b[len(b) - 1 - n]:
        n += 1
    return n


def _segment_sequence(r: np.ndarray, anchors: np.ndarray, cats: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) positions of each layer in one step's role sequence."""
    n, m = len(r), len(anchors)
    if m == 0:
        return []
    norms = np.nonzero(r == "norm")[0]
    if len(norms) == 0 and m >= 2:
        return _segment_without_norms(anchors, cats)

    def last_norm_between(lo: int, hi: int) -> int | None:
        i = np.searchsorted(norms, hi, side="left") - 1
        return int(norms[i]) if i >= 0 and norms[i] > lo else None

    starts: list[int | None] = []
    for i in range(m):
        lo = int(anchors[i - 1]) if i > 0 else -1
        starts.append(last_norm_between(lo, int(anchors[i])))
    offsets = [int(anchors[i]) - s for i, s in enumerate(starts) if s is not None]
    d = Counter(offsets).most_common(1)[0][0] if offsets else 0
    bounds = []
    for i in range(m):
        s = starts[i]
        if s is None or int(anchors[i]) - s > 2 * max(d, 1) + 4:
            s = max(int(anchors[i]) - d, int(anchors[i - 1]) + 1 if i > 0 else 0)
        bounds.append(s)
    # end of the last layer: as many norms after its anchor as a regular layer has
    if m >= 2:
        per_layer = Counter(int(((norms > anchors[i]) & (norms < bounds[i + 1])).sum()) for i in range(m - 1))
        q = per_layer.most_common(1)[0][0]
        after = norms[norms > anchors[-1]]
        if len(after) > q:
            last_end = int(after[q])
        else:
            typical = int(np.median(np.diff(bounds)))
            last_end = min(n, bounds[-1] + typical)
    else:
        after = norms[norms > anchors[-1]]
        last_end = int(after[1]) if len(after) > 1 else n
    ends = bounds[1:] + [max(last_end, bounds[-1] + 1)]
    return list(zip(bounds, ends))


def _segment_without_norms(anchors: np.ndarray, cats: np.ndarray) -> list[tuple[int, int]]:
    """Eager models often decompose RMSNorm into pow/mean/rsqrt/mul, leaving no norm kernel.
    The kernels that run before the first attention and also end every inter-attention stretch
    (input norm, QKV projection, rotary…) belong to the layer: their count is the offset from
    the layer start to its anchor. The last layer is as long as a typical one."""
    n = len(cats)
    spans = np.diff(anchors)
    typical = int(np.median(spans))
    i = int(np.argmin(np.abs(spans - typical)))  # one regular stretch
    regular = cats[anchors[i]:anchors[i + 1]]
    prologue = cats[:anchors[0]]
    d = min(_common_suffix(prologue, regular), typical - 1)
    bounds = [int(a) - d for a in anchors]
    ends = bounds[1:] + [min(n, bounds[-1] + typical)]
    return list(zip(bounds, ends))


_SERIAL = LazyPattern(r"_[0-9]+$")   # Inductor numbers its kernels: the same kernel of another layer ends _9, _10


def _align_extras(first: list[tuple[int, str]], regular: list[tuple[int, str]]) -> list[int] | None:
    """Positions of `first` that a best alignment with `regular` leaves unmatched, when every kernel
    of `regular` is matched (the first layer is a regular one plus setup work); else None. Keys are
    (category, name): the same name scores 2, the same category 1 (a fused embedding+norm kernel
    stands where the other layers' norm does)."""
    n, m = len(first), len(regular)
    score = np.zeros((n + 1, m + 1), np.int64)
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            a, b = first[i], regular[j]
            s = 2 if a == b else 1 if a[0] == b[0] else 0
            best = max(score[i + 1, j], score[i, j + 1])
            score[i, j] = max(best, score[i + 1, j + 1] + s) if s else best
    i = j = 0
    extras = []
    while i < n and j < m:
        a, b = first[i], regular[j]
        s = 2 if a == b else 1 if a[0] == b[0] else 0
        if s and score[i, j] == score[i + 1, j + 1] + s:
            i, j = i + 1, j + 1
        elif score[i, j] == score[i + 1, j]:
            extras.append(i)
            i += 1
        else:
            return None      # a kernel of the regular layer has no counterpart
    if j < m:
        return None
    return extras + list(range(i, n))


def _first_layer_extras(model: TraceModel, rows: np.ndarray, spans: list[tuple[int, int]]) -> np.ndarray | None:
    """An inferred first layer starts at the decoder layer's first operation, like the others, but
    its span can also hold the model's setup that a compiler scheduled inside it (the compiled
    Llama: the rotary position setup between q_proj and k_proj). Those kernels, absent from every
    regular layer, are left outside layers (positions into `rows`), so the first layer holds the
    same work as the others and aligns with a module-read layer 0 on the other side."""
    if len(spans) < 3:
        return None
    k = model.kernels

    def keys(a: int, b: int) -> list[tuple[int, str]]:
        return [(int(c), _SERIAL.sub("", model.strings[int(nm)]) if nm >= 0 else "")
                for c, nm in zip(k.cat[rows[a:b]].tolist(), k.name[rows[a:b]].tolist())]

    middle = [tuple(keys(a, b)) for a, b in spans[1:-1]]
    regular, count = Counter(middle).most_common(1)[0]
    if count < max(2, len(middle) // 2) or spans[0][1] - spans[0][0] <= len(regular):
        return None
    extras = _align_extras(keys(*spans[0]), list(regular))
    if not extras:
        return None
    return spans[0][0] + np.array(extras, np.int64)


def _infer_steps(model: TraceModel, rows: np.ndarray, anchors: np.ndarray) -> list[np.ndarray]:
    """Split the single whole-trace step into forward passes at unusually long anchor gaps."""
    if len(anchors) < 4:
        return [rows]
    gaps = np.diff(anchors)
    med = float(np.median(gaps))
    breaks = np.nonzero(gaps > STEP_GAP_FACTOR * med)[0]
    if len(breaks) == 0:
        return [rows]
    pieces, prev = [], 0
    for b in breaks.tolist():
        # cut halfway between the last anchor of one pass and the first of the next
        cut = int(anchors[b] + (anchors[b + 1] - anchors[b]) // 2)
        pieces.append(rows[prev:cut])
        prev = cut
    pieces.append(rows[prev:])
    return pieces


def _spans(step: np.ndarray, layer: np.ndarray) -> list[LayerSpan]:
    """(step, layer) -> first and last kernel row, for every layer that has kernels."""
    rows = np.flatnonzero(layer >= 0)
    if not len(rows):
        return []
    key = step[rows].astype(np.int64) * (int(layer.max()) + 1) + layer[rows]
    uniq, first = np.unique(key, return_index=True)
    last = np.unique(key[::-1], return_index=True)[1]
    last = len(key) - 1 - last
    width = int(layer.max()) + 1
    return list(map(LayerSpan, (uniq // width).tolist(), (uniq % width).tolist(), rows[first].tolist(),
                    (rows[last] + 1).tolist()))


def from_modules(model: TraceModel) -> bool:
    """Layers from the layer module calls the trace recorded (with_stack): a kernel is in the layer
    whose call launched it. A model of several stacks (vision and text towers) numbers its layers
    stack after stack (`analysis.stacks`). Returns False when the trace has no such calls."""
    k = model.kernels
    calls = module_calls(model)
    if not len(calls) or len(model.steps) == 0:
        return False
    t = launch_time(model)
    classes = block_classes(calls, t)
    if not classes:
        return False
    rows = np.concatenate([calls.of_class(c) for c in classes])
    order = np.argsort(calls.ts[rows], kind="stable")
    rows = rows[order]
    ts, end = calls.ts[rows], calls.end[rows]
    inside = launches_in(ts, end, np.where(np.isnan(t), -np.inf, t))
    sid, stacks = group(calls, rows, parents(calls))
    # layer index = the stack's first index + the call's position among its stack's calls in its pass
    step_starts = np.array([s.ts for s in model.steps])
    call_step = np.searchsorted(step_starts, ts, side="right") - 1
    pos = np.zeros(len(rows), np.int64)
    per_stack = np.zeros((len(stacks), len(model.steps)), np.int64)
    for s in distinct(call_step).tolist():
        for j in range(len(stacks)):
            sel = np.flatnonzero((call_step == s) & (sid == j))
            pos[sel] = np.arange(len(sel))
            if s >= 0:
                per_stack[j, s] = len(sel)
    first = 0
    for j, st in enumerate(stacks):
        nz = per_stack[j][per_stack[j] > 0]
        freq = Counter(nz.tolist())
        st["layers"] = max(freq, key=lambda c: (freq[c], c)) if freq else 0
        st["first_layer"] = first
        first += st["layers"]
    offset = np.array([st["first_layer"] for st in stacks], np.int64)[sid]
    # with several stacks, a pass's extra block of one stack would take the next stack's numbers
    beyond = (pos >= np.array([st["layers"] for st in stacks], np.int64)[sid]) if len(stacks) > 1 else np.zeros(len(rows), bool)
    glob = np.where(beyond, -1, offset + pos)
    lay = np.where(inside >= 0, glob[np.maximum(inside, 0)], -1).astype(np.int32)
    # a kernel of a layer call belongs to that layer only inside the same pass
    same = (inside >= 0) & (k.step >= 0) & (call_step[np.maximum(inside, 0)] == k.step)
    k.layer = np.where(same, lay, -1).astype(np.int32)
    counts = np.bincount(call_step[call_step >= 0], minlength=len(model.steps))
    nonzero = counts[counts > 0]
    if not len(nonzero):
        return False
    if len(stacks) == 1:
        freq = Counter(nonzero.tolist())
        model.num_layers = max(freq, key=lambda c: (freq[c], c))
        stacks[0]["layers"] = model.num_layers
        model.layer_source = f"decoder-layer module calls ({classes[0]})"
    else:
        model.num_layers = first
        model.layer_source = (f"layer module calls in {len(stacks)} stacks: "
                              + ", ".join(f"{st['name']} {st['layers']} ({st['module']} in {st['container']})"
                                          for st in stacks))
        if beyond.any():
            model.warnings.append(f"{int(beyond.sum())} layer calls beyond their stack's usual count are left "
                                  "outside layers")
    model.stacks = stacks
    model.layers = _spans(k.step, k.layer)
    odd = int((nonzero != model.num_layers).sum())
    if odd:
        model.warnings.append(f"{odd} of {len(nonzero)} passes have a layer count other than {model.num_layers}")
    return True


def segment(model: TraceModel, classifier) -> None:
    k = model.kernels
    roles = _roles(model, classifier)
    model.architecture = detect_architecture(model, roles)
    k.layer = np.full(len(k), -1, dtype=np.int32)
    model.layers = []
    model.stacks = []
    if len(k) == 0:
        return
    if from_modules(model):
        if model.architecture == "unknown":
            model.architecture = "transformer"   # repeated decoder blocks, attention in any form
        _cross_check(model, classifier, roles)
        _replayed_passes(model, classifier, roles)
        return
    anchor_roles = {"transformer": ("attention",), "ssm": ("ssm",), "hybrid": ("attention", "ssm")}.get(
        model.architecture)
    soft = None
    if anchor_roles is None:
        soft = _softmax_anchors(model, roles)
    if soft is not None:
        model.architecture = "transformer"
        anchor_roles = ("attention",)
        model.warnings.append("attention computed as GEMM + softmax + GEMM: layers anchored on the softmax "
                              "kernels (inferred)")
    if anchor_roles is None:
        model.warnings.append("layers not detected: no attention or SSM kernels recognised")
        return
    _segment_by_anchors(model, classifier, roles, anchor_roles, soft)
    if model.num_layers:
        model.stacks = [{"name": "layers", "module": None, "container": None, "layers": model.num_layers,
                         "first_layer": 0}]
    if model.num_layers and not model.layer_source:
        model.layer_source = ("attention/SSM kernel anchors (softmax between two GEMMs: decomposed attention, "
                              "inferred)" if soft is not None else
                              "attention/SSM kernel anchors (inferred from kernel sequence)")
        # a kernel sequence does not say which tower a layer belongs to: one sequence, its stacks unknown
        model.layer_source += "; stacks unknown (a kernel sequence does not name them: read as one)"


def _replayed_passes(model: TraceModel, classifier, roles: np.ndarray) -> None:
    """Passes without layer calls (a CUDA/HIP graph replays them: no Python runs) take their
    layers from the kernel sequence; the passes the modules describe keep theirs."""
    k = model.kernels
    with_layers = np.zeros(len(model.steps), bool)
    with_layers[distinct(k.step[(k.layer >= 0) & (k.step >= 0)])] = True
    bare = ~with_layers & (np.bincount(k.step[k.step >= 0], minlength=len(model.steps)) > 0)
    if not bare.any():
        return
    anchor_roles = {"transformer": ("attention",), "ssm": ("ssm",), "hybrid": ("attention", "ssm")}.get(
        detect_architecture(model, roles))
    soft = None
    if anchor_roles is None:
        soft = _softmax_anchors(model, roles)
        anchor_roles = ("attention",) if soft is not None else None
    if anchor_roles is None:
        return
    keep_layer, keep_spans, keep_n, keep_warn = k.layer.copy(), list(model.layers), model.num_layers, list(model.warnings)
    _segment_by_anchors(model, classifier, roles, anchor_roles, soft)
    from_kernels = np.isin(k.step, np.flatnonzero(bare))
    k.layer = np.where(from_kernels, k.layer, keep_layer).astype(np.int32)
    model.layers = keep_spans + [s for s in model.layers if bare[s.step]]
    anchors_n, model.num_layers, model.warnings = model.num_layers, keep_n, keep_warn
    model.layer_source += f"; {int(bare.sum())} replayed passes from the kernel sequence"
    if anchors_n and anchors_n != keep_n:
        model.warnings.append(f"layer counts disagree: the modules say {keep_n}, the kernels of the "
                              f"{int(bare.sum())} replayed passes {anchors_n}")


def _softmax_anchors(model: TraceModel, roles: np.ndarray) -> np.ndarray | None:
    """Decomposed attention (HF "eager", GPT-2 style): a softmax between two batched GEMMs in every
    layer. Those softmax kernels (only those: sampling's softmax after lm_head is not attention)
    play the attention kernels' part as anchors. Returns the per-kernel anchor mask, or None when
    the trace has no such pattern (two or more per pass on average)."""
    k = model.kernels
    soft = np.isin(k.cat, [i for i, c in enumerate(model.categories) if c.lower() == "softmax"])
    if soft.sum() < 2:
        return None
    gemm = (roles == "gemm")[k.cat]
    # a GEMM within the 5 kernels before (scale, mask, an upcast to float32 for the softmax sit
    # between: HF transformers 5's eager attention has four) and within the 3 after (a cast back)
    before = np.zeros(len(k), bool)
    after = np.zeros(len(k), bool)
    for d in (1, 2, 3, 4, 5):
        before[d:] |= gemm[:-d]
        if d <= 3:
            after[:-d] |= gemm[d:]
    anchor = soft & before & after
    passes = max(len(distinct(k.step[k.step >= 0])), 1)
    if anchor.sum() < 2 * passes:
        return None
    return anchor


def _cross_check(model: TraceModel, classifier, roles: np.ndarray) -> None:
    """Modules say the layers; when attention kernels exist, they should say the same count."""
    k = model.kernels
    attn = (roles == "attention")[k.cat]
    if not attn.any() or not model.num_layers:
        return
    ok = (k.layer >= 0) & attn
    per_layer = distinct(k.step[ok] * 100000 + k.layer[ok])
    layers_with_attn = len(per_layer)
    total_layers = sum(1 for _ in model.layers)
    if total_layers and layers_with_attn < 0.9 * total_layers:
        model.warnings.append(f"{total_layers - layers_with_attn} of {total_layers} module layers launched no "
                              "recognised attention kernel: check the layer reading")


def _segment_by_anchors(model: TraceModel, classifier, roles: np.ndarray, anchor_roles,
                        extra_anchors: np.ndarray | None = None) -> None:
    k = model.kernels
    if model.architecture == "hybrid":
        model.warnings.append("hybrid model (attention + SSM layers): layers are anchored on both mixers")
    # Segment the device that does most of the work; other devices' kernels stay outside layers.
    lo, span = int(k.device.min()), int(k.device.max()) - int(k.device.min()) + 1
    if span == 1:   # one device (the usual case): it is the main one, whatever its time
        main_dev = k.device[0]
    else:
        if span < 1 << 62:   # np.unique's, without its sort (a few device ids)
            devs, inv = small_unique(k.device - lo, span)
            devs = devs + lo
        else:
            devs, inv = np.unique(k.device, return_inverse=True)
        main_dev = devs[np.argmax(np.bincount(inv, weights=k.dur))]
    on_dev = k.device == main_dev
    # each row's role, made for the rows a segmentation reads (one string per kernel of the whole
    # trace: ~2 ms of a dense decode trace, whose steps mostly repeat a segmentation already made)
    is_extra = None
    if extra_anchors is not None:   # per-kernel anchors (softmax of decomposed attention)
        is_extra = np.zeros(len(k), bool)
        is_extra[extra_anchors] = True

    def roles_at(rows: np.ndarray) -> np.ndarray:
        r = roles[k.cat[rows]]
        if is_extra is not None:
            r[is_extra[rows]] = "attention"
        return r

    if len(model.steps) == 1 and model.steps[0].source == "whole-trace":
        rows = np.nonzero(on_dev)[0]
        anchors = _anchor_runs(roles_at(rows), anchor_roles)
        pieces = _infer_steps(model, rows, anchors)
        if len(pieces) > 1:
            model.steps = []
            for i, piece in enumerate(pieces):
                ts0 = float(k.ts[piece[0]]) if len(piece) else 0.0
                ts1 = float((k.ts[piece] + k.dur[piece]).max()) if len(piece) else 0.0
                model.steps.append(Step(i, f"inferred pass {i}", "unknown", ts0, ts1 - ts0, "inferred"))
                k.step[piece] = i
            model.warnings.append(f"forward passes inferred from kernel patterns: {len(pieces)} passes")
            model.pass_source = "inferred from kernel patterns (gaps between attention runs)"
            from kerneldiff.core.analysis.phases import set_phases

            set_phases(model)

    counts = []
    # per phase, each layer size (kernel count) and how many layers have it, in first-seen order
    # (what Counter of every layer's size would hold: ~21,000 sizes of a dense decode trace, a few
    # distinct, counted once per distinct sequence)
    by_phase: dict[str, Counter] = {}
    step_of = k.step
    order = np.argsort(step_of, kind="stable")  # rows grouped by step, time order kept
    bounds = np.searchsorted(step_of[order], np.arange(len(model.steps) + 1))
    # Steps with the same kernel-category sequence (every decode pass of a run, typically) have
    # the same segmentation: compute it once per distinct sequence.
    # per distinct sequence: its spans (first rows, last rows, layer numbers, sizes) and each row's layer
    memo: dict[bytes, tuple[np.ndarray, np.ndarray, list[int], Counter, np.ndarray]] = {}
    # one span per layer of every pass (~21,000 on a dense decode trace) as rows (step, layer, start,
    # end): LayerSpan objects are made when `model.layers` is first read (a comparison reads none).
    # Per step with layers: the step, where its rows start in `sel`, and its sequence's first and
    # last positions, gathered into rows once after the loop (not four small arrays per step)
    span_steps: list[int] = []
    span_at: list[int] = []
    span_first: list[np.ndarray] = []
    span_last: list[np.ndarray] = []
    # the steps' rows on the device, in step order, each step's a slice of `sel` (no per-step
    # indexing of the whole trace's columns: ~280 steps of a dense decode trace)
    inner = order[bounds[0]:bounds[-1]]
    sel = inner[on_dev[inner]]
    at = np.searchsorted(step_of[sel], np.arange(len(model.steps) + 1)).tolist()
    sel_cats = k.cat[sel]
    lays: list[np.ndarray] = []   # each step's layer per row, in `sel`'s order
    for s in range(len(model.steps)):
        a0, a1 = at[s], at[s + 1]
        if a0 == a1:
            counts.append(0)
            continue
        cats = sel_cats[a0:a1]
        hit = memo.get(cats.tobytes())
        if hit is None:
            rows = sel[a0:a1]
            r = roles_at(rows)
            spans = _segment_sequence(r, _anchor_runs(r, anchor_roles), cats)
            lay = np.full(len(rows), -1, dtype=np.int32)
            for li, (a, b) in enumerate(spans):
                lay[a:b] = li
            extra = _first_layer_extras(model, rows, spans)
            if extra is not None:
                lay[extra] = -1
            hit = memo[cats.tobytes()] = (np.array([a for a, _ in spans], np.int64),
                                          np.array([b - 1 for _, b in spans], np.int64),
                                          list(range(len(spans))), Counter(b - a for a, b in spans), lay)
        first, last, numbers, sizes, lay = hit
        counts.append(len(numbers))
        lays.append(lay)
        if numbers:
            span_steps.append(s)
            span_at.append(a0)
            span_first.append(first)
            span_last.append(last)
        if sizes:
            by_phase.setdefault(model.steps[s].phase, Counter()).update(sizes)
    if lays:
        k.layer[sel] = np.concatenate(lays)
    nonzero = [c for c in counts if c]
    if not nonzero:
        model.warnings.append("layers not detected in any step")
        return
    spans = np.empty((sum(nonzero), 4), np.int64)
    per_step = np.array(nonzero, np.int64)
    spans[:, 0] = np.repeat(np.array(span_steps, np.int64), per_step)
    spans[:, 1] = np.arange(len(spans)) - np.repeat(np.cumsum(per_step) - per_step, per_step)   # 0.. per step
    at_rows = np.repeat(np.array(span_at, np.int64), per_step)
    spans[:, 2] = sel[np.concatenate(span_first) + at_rows]
    spans[:, 3] = sel[np.concatenate(span_last) + at_rows] + 1
    # the most common count; on a tie the larger one, so fewer kernels fall outside layers
    freq = Counter(nonzero)
    model.num_layers = max(freq, key=lambda c: (freq[c], c))
    odd = sum(1 for c in nonzero if c != model.num_layers)
    if odd:
        model.warnings.append(f"{odd} of {len(nonzero)} steps have a layer count other than {model.num_layers}")
    extra = k.layer >= model.num_layers
    if extra.any():
        # A "layer 81" of an 80-layer model exists in a few passes only and would be compared as if it
        # were a real layer: its kernels stay outside layers, like the epilogue.
        k.layer[extra] = -1
        spans = spans[spans[:, 1] < model.num_layers]
        model.warnings.append(f"{int(extra.sum())} kernels of layers beyond {model.num_layers} "
                              f"(in steps with more layers) are left outside layers")
    model.set_layer_rows(spans)
    for phase, ns in sorted(by_phase.items()):
        if max(ns) > UNEVEN_RATIO * max(min(ns), 1):
            where = f" in {phase}" if len(by_phase) > 1 else ""
            model.warnings.append(f"uneven layer sizes{where}: {min(ns)} to {max(ns)} kernels per layer")
    typical = {phase: ns.most_common(1)[0][0] for phase, ns in by_phase.items()}
    if len(typical) > 1 and max(typical.values()) > UNEVEN_RATIO * max(min(typical.values()), 1):
        # not a misreading: the phases ran differently (eager prefill, compiled or graph-replayed decode)
        model.warnings.append("layers hold " + ", ".join(f"{n} kernels in {p}" for p, n in sorted(typical.items()))
                           + ": the phases ran differently (eager against compiled or graph-replayed, say)")
