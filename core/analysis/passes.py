"""Forward passes and their phases, from what the trace itself records.

A pass is, in order of evidence:
1. an engine step annotation (vLLM `execute_…`, SGLang `step[…]`; two annotations of one step,
   as SGLang writes them, are one step) — see phases.py;
2. one call of the top-level model module (`nn.Module: LlamaForCausalLM_0`, with_stack traces);
3. without stacks, a forward's entry on the CPU: the token embedding operator (`aten::embedding`),
   a compiled graph call (`## Call CompiledFxGraph …`), or a CUDA/HIP graph launch that replays a
   whole forward (many kernels); overlapping entries are one pass;
4. kernel-pattern inference (layers.py), which says so.
`ProfilerStep#N` is a container (one `generate()` call holds many passes), a pass only when
nothing inside it says otherwise; after it, a user's own step annotations (`step_N`: phases.py).

A pass's phase comes from its annotation; else from its shapes: the tokens per sequence the
embedding received (`Input Dims` of its indices: [batch, tokens]: > 1 prefill, 1 decode), or
the token count of its first GEMM against the other passes'; else from kernel durations
(a pass whose kernels run far longer than the others' is a prefill), labelled as inferred.
"""

from __future__ import annotations

import json

import numpy as np

from kerneldiff.core.analysis.attribution import launch_time
from kerneldiff.core.analysis.modules import launches_in, module_calls, top_level_model  # noqa: F401
from kerneldiff.core.lazy_dataclass import dataclass   # made on first use: engine-annotated traces find no passes
from kerneldiff.core.model import Step, TraceModel
from kerneldiff.core.numbers import distinct

EMBEDDING_OPS = ("aten::embedding",)
GEMM_OPS = ("aten::mm", "aten::addmm", "aten::linear", "aten::matmul", "aten::bmm")
GRAPH_LAUNCHES = ("cudaGraphLaunch", "hipGraphLaunch", "cuGraphLaunch")
COMPILED_GRAPH = "## Call CompiledFxGraph"
# A graph launch replays a whole forward when it runs at least this many kernels (a decode step of
# the smallest models runs hundreds) and two or more token mixers (attention / SSM): smaller
# graphs, and training graphs of models without them, are parts of a step, not passes.
GRAPH_PASS_MIN_KERNELS = 20
# compiled-graph calls whose names repeat with a period of at least this many calls are the pieces
# of one forward (a period of 2 may as well be two batch sizes' whole-forward graphs taking turns)
PIECEWISE_MIN_PIECES = 3
GRAPH_PASS_MIN_MIXERS = 2
# Kernel-duration fallback: a pass is a prefill when its GPU time is this many times the median
# pass's, or PREFILL_ODD_FACTOR times when it also runs other kernels than the usual pass (GEMM
# tile shapes and attention variants differ with the token count). A small model's prefill of
# 4 x 256 tokens measured only 2.5x its decode passes on H100, with different GEMM kernels.
PREFILL_TIME_FACTOR = 4.0
PREFILL_ODD_FACTOR = 1.5
# With this many passes, the median time between pass starts is a pass's period even when one
# interval holds a pause between two runs (see _stop_at_pauses)
PAUSE_MIN_PASSES = 4


@dataclass
class Passes:
    """Pass windows on the CPU timeline (sorted, non-overlapping) and where they came from."""

    ts: np.ndarray
    end: np.ndarray
    names: list[str]
    source: str          # "module", "embedding", "compiled-graph", "graph", "anchors"


def _strings_matching(model: TraceModel, ids: np.ndarray, pred) -> np.ndarray:
    uniq = distinct(ids)
    return np.fromiter((i for i in uniq.tolist() if pred(model.strings[int(i)])), np.int64)


def _merge(ts: np.ndarray, end: np.ndarray, names: list[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Overlapping windows (an embedding inside a compiled call, a graph launch inside it) -> one."""
    order = np.argsort(ts, kind="stable")
    out_ts, out_end, out_names = [], [], []
    for i in order.tolist():
        if out_ts and ts[i] <= out_end[-1]:
            out_end[-1] = max(out_end[-1], float(end[i]))
            continue
        out_ts.append(float(ts[i]))
        out_end.append(float(end[i]))
        out_names.append(names[i])
    return np.array(out_ts), np.array(out_end), out_names


def from_modules(model: TraceModel, launch_t: np.ndarray) -> Passes | None:
    calls = module_calls(model)
    if not len(calls):
        return None
    top = top_level_model(calls, launch_t)
    if top is None:
        return None
    rows = calls.of_class(top)
    rows = rows[calls.depth[rows] == 0]
    ts, end, names = _merge(calls.ts[rows], calls.end[rows],
                            [f"{top}_{i}" if i >= 0 else top for i in calls.instance[rows].tolist()])
    return Passes(ts, end, [f"{n} call {j}" for j, n in enumerate(names)], "module")


def _weight_dims(model: TraceModel, row: int):
    """The embedding table's shape (the first input's `Input Dims`), None without shapes."""
    d = _dims(model, row)
    w = d[0] if isinstance(d, list) and d else None
    return tuple(w) if isinstance(w, list) and all(isinstance(x, int) for x in w) else None


def _period(sig: list) -> int:
    """The shortest p such that the sequence repeats every p items (the last repeat may be cut off
    by the profiler's window) and holds at least two whole repeats; 1 when there is none."""
    n = len(sig)
    for p in range(1, n // 2 + 1):
        if all(sig[i] == sig[i % p] for i in range(n)):
            return p
    return 1


def forward_entries(model: TraceModel, emb: np.ndarray, mixer_cats: np.ndarray | None) -> np.ndarray:
    """The embedding calls that begin a forward, of all `emb` (cpu_op rows).

    A forward may look up several tables: an encoder's word, position and token-type embeddings,
    GPT-2's wte and wpe, a vision tower's positions and a text tower's tokens. Calls with no token
    mixer (attention, SSM, the softmax of decomposed attention) launched between them are one
    group (one model's embedding block); the groups then repeat with a period (a vision block,
    then a text block, per forward of a two-tower model), told apart by the tables' shapes where
    shapes were recorded and by how many tables each block reads; each period is one forward.
    So the count does not depend on with_stack: a model module call covers the same calls."""
    c = model.cpu_ops
    emb = emb[np.argsort(c.ts[emb], kind="stable")]
    if len(emb) < 2:
        return emb
    k = model.kernels
    new_group = np.ones(len(emb), bool)
    if mixer_cats is not None and len(mixer_cats) and len(k):
        t = launch_time(model)
        mt = np.sort(t[np.isin(k.cat, mixer_cats) & ~np.isnan(t)])
        if len(mt):
            before = np.searchsorted(mt, c.ts[emb], side="left")   # mixers launched before each call
            new_group[1:] = before[1:] > before[:-1]
    starts = np.flatnonzero(new_group)
    bounds = np.append(starts, len(emb))
    sig = [(int(b - a), tuple(_weight_dims(model, int(r)) for r in emb[a:b]))
           for a, b in zip(bounds[:-1], bounds[1:])]
    p = _period(sig)
    return emb[starts[::p]]


def _mixer_launches(model: TraceModel, mixer_cats: np.ndarray | None) -> np.ndarray:
    """Launch times of the token-mixer kernels (attention, SSM), sorted; empty when none is known."""
    k = model.kernels
    if mixer_cats is None or not len(mixer_cats) or not len(k):
        return np.zeros(0)
    t = launch_time(model)
    return np.sort(t[np.isin(k.cat, mixer_cats) & ~np.isnan(t)])


def _one_piecewise_forward(model: TraceModel, ts: np.ndarray, end: np.ndarray,
                           mixer_cats: np.ndarray | None) -> bool:
    """Whether compiled-graph calls (time order) are the pieces of one piecewise forward, which no
    repeat period shows when the trace holds one forward: vLLM cuts the graph at each attention,
    so no piece launches a token mixer and one is launched between every two pieces; a graph
    that replays a whole forward launches its own."""
    mt = _mixer_launches(model, mixer_cats)
    if len(ts) < PIECEWISE_MIN_PIECES or not len(mt):
        return False
    inside = np.searchsorted(mt, end, side="right") - np.searchsorted(mt, ts, side="left")
    between = np.searchsorted(mt, ts[1:], side="left") - np.searchsorted(mt, end[:-1], side="right")
    return bool((inside == 0).all() and (between > 0).all())


def _one_per_mixer_run(model: TraceModel, ts: np.ndarray, end: np.ndarray, names: list[str],
                       mixer_cats: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Entries with no token mixer launched between them begin one forward: a forward runs its
    attention before the next begins, so a compiled call and the embedding lookup after it (vLLM's
    input preparation inside its forward: the B200 trace) are one pass, not two. The run keeps its
    first entry. Unchanged where the trace launches no known mixer."""
    mt = _mixer_launches(model, mixer_cats)
    if len(ts) < 2 or not len(mt):
        return ts, end, names
    between = np.searchsorted(mt, ts[1:], side="left") - np.searchsorted(mt, ts[:-1], side="left")
    keep = np.r_[True, between > 0]
    return ts[keep], np.maximum.reduceat(end, np.flatnonzero(keep)), [n for n, kp in zip(names, keep) if kp]


def from_anchors(model: TraceModel, mixer_cats: np.ndarray | None = None) -> Passes | None:
    """Forward entries on the CPU for traces without module events."""
    c, a, L, k = model.cpu_ops, model.annotations, model.launches, model.kernels
    ts, end, names, kinds = [], [], [], set()
    emb = np.flatnonzero(np.isin(c.name, _strings_matching(model, c.name, lambda s: s in EMBEDDING_OPS)))
    if len(emb):
        emb = forward_entries(model, emb, mixer_cats)
        ts.append(c.ts[emb]), end.append(c.ts[emb] + c.dur[emb])
        names += ["aten::embedding"] * len(emb)
        kinds.add("embedding")
    cpu_ann = np.flatnonzero(a.gpu == 0)
    comp = cpu_ann[np.isin(a.name[cpu_ann], _strings_matching(model, a.name[cpu_ann],
                                                              lambda s: s.startswith(COMPILED_GRAPH)))]
    if len(comp):
        comp = comp[np.argsort(a.ts[comp], kind="stable")]
        # a compiled call inside another (a nested graph) is part of that call
        ends = a.ts[comp] + a.dur[comp]
        comp = comp[np.r_[True, ends[1:] > np.maximum.accumulate(ends)[:-1]]]
        # piecewise compilation (vLLM): one forward calls a first, many middle and a last graph, cut
        # at the attention between them; the calls' graph names then repeat with a period of
        # PIECEWISE_MIN_PIECES or more calls, and each period is one forward
        p = _period(a.name[comp].tolist())
        if p < PIECEWISE_MIN_PIECES and _one_piecewise_forward(model, a.ts[comp], a.ts[comp] + a.dur[comp], mixer_cats):
            p = len(comp)
        if p >= PIECEWISE_MIN_PIECES:
            first = comp[::p]
            last = comp[np.minimum(np.arange(len(first)) * p + p - 1, len(comp) - 1)]
            ts.append(a.ts[first]), end.append(a.ts[last] + a.dur[last])
            names += [model.strings[int(i)] for i in a.name[first].tolist()]
            kinds.add("compiled-graph")
            comp = comp[:0]
    if len(comp):
        ts.append(a.ts[comp]), end.append(a.ts[comp] + a.dur[comp])
        names += [model.strings[int(i)] for i in a.name[comp].tolist()]
        kinds.add("compiled-graph")
    graphs = np.flatnonzero(np.isin(L.name, _strings_matching(model, L.name, lambda s: s in GRAPH_LAUNCHES)))
    if len(graphs) and len(k):
        linked = k.launch >= 0
        per = np.bincount(k.launch[linked], minlength=len(L))
        keep = per[graphs] >= GRAPH_PASS_MIN_KERNELS
        if mixer_cats is not None:
            mixers = np.bincount(k.launch[linked], weights=np.isin(k.cat[linked], mixer_cats), minlength=len(L))
            keep &= mixers[graphs] >= GRAPH_PASS_MIN_MIXERS
        graphs = graphs[keep]
        if len(graphs):
            ts.append(L.ts[graphs]), end.append(L.ts[graphs] + L.dur[graphs])
            names += [model.strings[int(i)] for i in L.name[graphs].tolist()]
            kinds.add("graph")
    if not ts:
        return None
    t0, t1, nm = _merge(np.concatenate(ts), np.concatenate(end), names)
    t0, t1, nm = _one_per_mixer_run(model, t0, t1, nm, mixer_cats)
    source = kinds.pop() if len(kinds) == 1 else "anchors"
    return Passes(t0, t1, [f"pass {j} ({n})" for j, n in enumerate(nm)], source)


def assign_passes(model: TraceModel, passes: Passes, launch_t: np.ndarray,
                  containers: list[Step] | None = None) -> None:
    """model.steps and kernels.step from pass entries: a kernel belongs to the last pass that
    started at or before its launch — within that pass's container (ProfilerStep) when the trace
    has them, so work after a generate() call is not charged to its last pass."""
    k = model.kernels
    starts = passes.ts
    if len(model.launches) == 0 and np.isnan(launch_t).any():
        # no runtime events: a graph replay's kernels name no operator; a kernel starts after its
        # launch, so its GPU start places it (work launched before the window aside)
        from kerneldiff.core.analysis.cut_work import before_window

        loose = np.isnan(launch_t) & ~before_window(model)
        launch_t = launch_t.copy()
        launch_t[loose] = k.ts[loose]
    idx = np.searchsorted(starts, launch_t, side="right") - 1
    ok = (idx >= 0) & ~np.isnan(launch_t)
    if containers:
        c_ts = np.array([s.ts for s in containers])
        c_end = np.array([s.ts + s.dur for s in containers])
        kc = launches_in(c_ts, c_end, np.where(np.isnan(launch_t), -np.inf, launch_t))
        pc = launches_in(c_ts, c_end, starts)
        ok &= (kc >= 0) & (kc == pc[np.maximum(idx, 0)])
    step = np.where(ok, idx, -1).astype(np.int32)
    _stop_at_pauses(step, passes, launch_t, k.ts + k.dur)
    k.step = step
    # a pass's extent: its entry to its last kernel launch (never past the next pass's entry)
    last = np.full(len(starts), -np.inf)
    sel = step >= 0
    np.maximum.at(last, step[sel], launch_t[sel])
    nxt = np.append(starts[1:], np.inf)
    ends = np.minimum(np.maximum(passes.end, last), nxt)
    # the entry spans the forward where it is the model's module call or a graph replay's launch
    spans = passes.source in ("module", "module+replay")
    model.steps = [Step(j, passes.names[j], "unknown", float(starts[j]), float(ends[j] - starts[j]), passes.source,
                        call_end=float(passes.end[j]) if spans else None)
                   for j in range(len(starts))]


def _pause_limits(passes: Passes) -> np.ndarray | None:
    """Per pass, the longest pause its trailing work may hold (see `_stop_at_pauses`): the pass's
    own entry when that entry spans the forward (a module or compiled-graph call), and the median
    time from one pass's start to the next when there are enough passes for a pause to be the odd
    one out. None when neither tells (one or two passes known by a short entry only)."""
    n = len(passes.ts)
    entry = passes.end - passes.ts if passes.source in ("module", "module+replay", "compiled-graph") \
        else np.zeros(n)
    period = float(np.median(np.diff(passes.ts))) if n >= PAUSE_MIN_PASSES else 0.0
    limit = np.maximum(entry, period)
    return limit if (limit > 0).all() else None


def _stop_at_pauses(step: np.ndarray, passes: Passes, launch_t: np.ndarray, gpu_end: np.ndarray) -> None:
    """A pass's work goes on after its entry ends (sampling, the next input), but not across a
    pause: two generate() calls recorded together put the first run's last pass, the pause and the
    second run's set-up before one pass entry. The pass stops at the first launch after its entry
    that comes longer than its limit (`_pause_limits`) after both the previous launch and the end
    of the GPU work launched so far (a host that waits for the GPU is not pausing); kernels from
    there to the next pass belong to no pass. Limits are times of the trace itself, so scaling the
    trace's clock scales them."""
    limit = _pause_limits(passes)
    if limit is None:
        return
    rows = np.flatnonzero(step >= 0)
    if len(rows) < 2:
        return
    rows = rows[np.argsort(launch_t[rows], kind="stable")]   # pass order too: passes follow launches
    st, lt = step[rows], launch_t[rows]
    busy = np.maximum.accumulate(gpu_end[rows])
    since = np.maximum(np.r_[-np.inf, np.maximum(lt[:-1], busy[:-1])], passes.end[st])
    new = np.r_[True, st[1:] != st[:-1]]
    since[new] = passes.end[st[new]]
    pause = (lt > passes.end[st]) & (lt - since > limit[st])
    if not pause.any():
        return
    cut = np.full(len(passes.ts), np.inf)
    np.minimum.at(cut, st[pause], lt[pause])
    drop = lt >= cut[st]
    step[rows[drop]] = -1


# --- phases ------------------------------------------------------------------------------------

def _dims(model: TraceModel, row: int):
    d = int(model.cpu_ops.dims[row])
    if d < 0:
        return None
    try:
        return json.loads(model.strings[d])
    except ValueError:
        return None


def _rows_named(model: TraceModel, op_ids: np.ndarray) -> np.ndarray:
    """The cpu_op rows whose name is one of `op_ids`, in row order (found once, not once per pass:
    a real trace's 48 passes each searched all its cpu_ops)."""
    if len(op_ids) == 0:
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.isin(model.cpu_ops.name, op_ids))


def _first_op_in(model: TraceModel, rows: np.ndarray, step: Step) -> int:
    """The earliest of `rows` (the first in row order on a tie) that starts inside the step; -1 if none."""
    ts = model.cpu_ops.ts[rows]
    rows = rows[(ts >= step.ts) & (ts <= step.ts + step.dur)]
    return int(rows[np.argmin(model.cpu_ops.ts[rows])]) if len(rows) else -1


def phases_from_shapes(model: TraceModel) -> tuple[list[str], str] | None:
    """Phase per pass from recorded shapes, and which op told it; None when shapes do not tell."""
    c = model.cpu_ops
    if len(c) == 0 or not (c.dims >= 0).any():
        return None
    emb_rows = _rows_named(model, _strings_matching(model, c.name, lambda s: s in EMBEDDING_OPS))
    phases: list[str | None] = []
    for s in model.steps:
        r = _first_op_in(model, emb_rows, s) if len(emb_rows) else -1
        dims = _dims(model, r) if r >= 0 else None
        idx = dims[1] if isinstance(dims, list) and len(dims) > 1 else None
        if isinstance(idx, list) and len(idx) == 2 and all(isinstance(x, int) for x in idx):
            phases.append("prefill" if idx[1] > 1 else "decode")
        else:
            phases.append(None)
    if all(p is not None for p in phases):
        return phases, "embedding input dims"   # type: ignore[return-value]
    # token counts of each pass's first GEMM: the prompt's passes have many more
    gemm_rows = _rows_named(model, _strings_matching(model, c.name, lambda s: s in GEMM_OPS))
    tokens = []
    for s, p in zip(model.steps, phases):
        r = _first_op_in(model, gemm_rows, s) if len(gemm_rows) else -1
        dims = _dims(model, r) if r >= 0 else None
        x = dims[0] if isinstance(dims, list) and dims else None
        tokens.append(int(np.prod(x[:-1])) if isinstance(x, list) and len(x) >= 2
                      and all(isinstance(v, int) for v in x) else None)
    known = [t for t in tokens if t is not None]
    if len(known) < 2 or min(known) == max(known):
        return None if all(p is None for p in phases) else _fill(phases)
    low = min(known)
    out = [p if p is not None else (None if t is None else ("prefill" if t > low else "decode"))
           for p, t in zip(phases, tokens)]
    return _fill(out)[0], "GEMM input dims"


def _fill(phases: list[str | None]) -> tuple[list[str], str]:
    return [p or "unknown" for p in phases], "embedding input dims"


def _pass_names(model: TraceModel) -> list[np.ndarray]:
    """Each pass's distinct kernel names (sorted ids)."""
    k = model.kernels
    ok = k.step >= 0
    # every distinct (pass, name) pair in one sort, rather than one np.unique per pass (512 passes
    # of a decode run: ~1,000 calls between the two callers)
    names = k.name[ok].astype(np.int64)
    lo = min(int(names.min()), 0) if len(names) else 0     # -1: a kernel without a name
    width = (int(names.max()) - lo + 1) if len(names) else 1
    pairs = np.unique(k.step[ok].astype(np.int64) * width + (names - lo))
    step, name = pairs // width, (pairs % width + lo).astype(k.name.dtype)
    cuts = np.searchsorted(step, np.arange(len(model.steps) + 1))
    return [name[cuts[s]:cuts[s + 1]] for s in range(len(model.steps))]


def _pass_profile(model: TraceModel, names: list[np.ndarray] | None = None) -> tuple[np.ndarray, list[int]]:
    """Each pass's GPU time and a signature of the set of kernel names it runs (`names`: the
    passes' names, when the caller has them)."""
    k = model.kernels
    ok = k.step >= 0
    per = np.bincount(k.step[ok], weights=k.dur[ok], minlength=len(model.steps))
    return per, [hash(n.tobytes()) for n in (_pass_names(model) if names is None else names)]


# an unknown pass takes the phase of the known pass whose kernel-name set it shares this much of
# (Jaccard): a graph replay runs the kernels of the pass it recorded, give or take the first and
# last replays' extra copies and syncs; a prefill and a decode pass share far less (other GEMM tiles,
# other attention kernels)
SIMILAR_PASS = 0.8


def fill_unknown(model: TraceModel, phases: list[str]) -> tuple[list[str], int]:
    """Passes the shapes say nothing about (a decode step replayed from a CUDA graph runs no
    operator) take the phase of a known pass running the same kernels, else of the known pass whose
    kernel set is most like theirs (at least SIMILAR_PASS alike); else, beside known prefills, a pass
    much shorter than every prefill is a decode. Returns (phases, filled)."""
    unknown = [i for i, p in enumerate(phases) if p == "unknown"]
    known = [i for i, p in enumerate(phases) if p != "unknown"]
    if not unknown or not known:
        return phases, 0
    names = _pass_names(model)
    per, sig = _pass_profile(model, names)
    by_sig = {sig[i]: phases[i] for i in known}
    out, filled = list(phases), 0
    known_phases = {phases[i] for i in known}
    shortest_prefill = min((per[i] for i in known if phases[i] == "prefill"), default=0.0)
    alike: dict[bytes, str | None] = {}   # name set -> the phase its most similar known pass gives
    for i in unknown:
        guess = by_sig.get(sig[i])
        if guess is None and len(names[i]):
            key = names[i].tobytes()    # replays of one graph run one name set: searched once
            if key not in alike:
                best, best_j = 0.0, -1
                for j in known:
                    inter = len(np.intersect1d(names[i], names[j], assume_unique=True))
                    sim = inter / (len(names[i]) + len(names[j]) - inter)
                    if sim > best:
                        best, best_j = sim, j
                alike[key] = phases[best_j] if best >= SIMILAR_PASS else None
            guess = alike[key]
        if (guess is None and "prefill" in known_phases and known_phases <= {"prefill", "decode"}
                and per[i] * PREFILL_ODD_FACTOR < shortest_prefill):
            guess = "decode"
        if guess is not None:
            out[i], filled = guess, filled + 1
    return out, filled


def phases_from_durations(model: TraceModel, require_mixers: bool = False) -> list[str] | None:
    """Inferred: with several passes, those whose GPU time is far above the median are prefills.
    require_mixers (steps that are only ProfilerStep windows): only for models with attention or
    SSM kernels, since a training step has no prefill or decode."""
    if len(model.steps) < 3:
        return None
    if require_mixers:
        mixers = [i for i, c in enumerate(model.categories) if c.startswith(("Attention", "SSM", "Mamba"))]
        if not np.isin(model.kernels.cat, mixers).any():
            return None
    per, sigs = _pass_profile(model)
    med = float(np.median(per))
    if med <= 0:
        return None
    # each pass's set of kernel names; the most common set is the usual (decode) pass
    sig = dict(enumerate(sigs))
    usual = max(set(sig.values()), key=list(sig.values()).count)
    odd = np.array([sig[s] != usual for s in range(len(model.steps))])
    big = (per > PREFILL_TIME_FACTOR * med) | (odd & (per > PREFILL_ODD_FACTOR * med))
    if not big.any() or big.all():
        return None
    return ["prefill" if b else "decode" for b in big.tolist()]


def _unmarked_first_pass(model: TraceModel, found: Passes, t: np.ndarray, mixer_cats: np.ndarray | None) -> Passes:
    """Without CPU operators an eager forward has no entry (its embedding call is an operator):
    only compiled-graph calls and graph launches are seen, and an eager prefill before them would
    vanish. Work launched before the first entry that runs the token mixers of a forward (at least
    GRAPH_PASS_MIN_MIXERS) is that forward: a pass from its first launch."""
    if mixer_cats is None or not len(mixer_cats) or not len(found.ts):
        return found
    k = model.kernels
    before = ~np.isnan(t) & (t < found.ts[0])
    if int(np.isin(k.cat[before], mixer_cats).sum()) < GRAPH_PASS_MIN_MIXERS:
        return found
    t0 = float(t[before].min())
    names = ["pass 0 (no recorded entry)"] + [f"pass {j + 1}{n[n.find(' ('):]}" if " (" in n else n
                                               for j, n in enumerate(found.names)]
    return Passes(np.r_[t0, found.ts], np.r_[t0, found.end], names, found.source)


def find_passes(model: TraceModel, mixer_cats: np.ndarray | None = None) -> Passes | None:
    """The best recorded evidence of forward passes (module calls, then CPU entries).
    mixer_cats: category ids of token mixers (attention, SSM), to tell a forward's graph.

    Module calls and entries combine: a forward replayed from a CUDA graph (static KV cache +
    `reduce-overhead`: every decode step after the eager prefill) runs no Python, so no module
    call marks it; its graph launch, outside every module call, is a pass of its own."""
    t = launch_time(model)
    mods = from_modules(model, t)
    anchors = from_anchors(model, mixer_cats)
    if mods is None and anchors is not None and len(model.cpu_ops) == 0:
        anchors = _unmarked_first_pass(model, anchors, t, mixer_cats)
    if mods is None or anchors is None:
        return mods or anchors
    inside = launches_in(mods.ts, mods.end, anchors.ts) >= 0
    if inside.all():
        return mods
    extra = ~inside
    ts = np.concatenate([mods.ts, anchors.ts[extra]])
    end = np.concatenate([mods.end, anchors.end[extra]])
    names = mods.names + [n for n, x in zip(anchors.names, extra.tolist()) if x]
    order = np.argsort(ts, kind="stable")
    return Passes(ts[order], end[order], [names[i] for i in order.tolist()], "module+replay")


def pass_tokens(model: TraceModel) -> list[int | None]:
    """Query tokens of each pass: its annotation's count, else what its first embedding call received
    (`Input Dims` of the indices, batch × tokens per sequence); None where neither says."""
    def make() -> list[int | None]:
        c = model.cpu_ops
        emb_ids = _strings_matching(model, c.name, lambda s: s in EMBEDDING_OPS) if len(c) else np.zeros(0, np.int64)
        emb_rows = _rows_named(model, emb_ids)
        out: list[int | None] = []
        for s in model.steps:
            if s.tokens is not None:
                out.append(s.tokens)
                continue
            r = _first_op_in(model, emb_rows, s) if len(emb_rows) else -1
            dims = _dims(model, r) if r >= 0 else None
            idx = dims[1] if isinstance(dims, list) and len(dims) > 1 else None
            ok = isinstance(idx, list) and idx and all(isinstance(x, int) and x >= 0 for x in idx)
            out.append(int(np.prod(idx)) if ok else None)
        return out
    return model.memo(("pass_tokens",), make)
