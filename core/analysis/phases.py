"""Steps and phases: which forward pass (and prefill / decode / mixed) each kernel belongs to.

A kernel belongs to the step annotation its *launch* happened in. GPUs run behind their CPUs
(often by more than a whole decode step), so a kernel's own GPU timestamp may fall inside the
next step's CPU window; the correlation id leads back to the launch, whose CPU time is exact.
"""

from __future__ import annotations

import re

import numpy as np

from kerneldiff.core.analysis import passes
from kerneldiff.core.analysis.forward_phase import mark_forward
from kerneldiff.core.analysis.attribution import launch_time
from kerneldiff.core.analysis.pass_kinds import assign_kinds
from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.model import PHASE_ID, Step, TraceModel
from kerneldiff.core.numbers import unique_inverse

# vLLM V1, newer: execute_32_context_0(sq0sk0…)_generation_32(sq32sk55086…): per part, sq = query
# tokens and sk = KV-cache tokens summed over its requests (then sums of squares, unused here)
# Annotation numbers are ASCII ([0-9], re.ASCII): `\d` would also take '²' or '٣', which int() refuses.
_VLLM_NEW = re.compile(r"^execute_([0-9]+)_context_([0-9]+)\((.*?)\)_generation_([0-9]+)\(([^)]*)\)", re.A)
_SQ_SK = LazyPattern(r"^sq([0-9]+)sk([0-9]+)", re.A)
# vLLM, older: execute_context_1(888_788544)_generation_0(0)  — requests(tokens_…)
_VLLM_OLD = re.compile(r"^execute_context_([0-9]+)\(([0-9]+)[_)].*?_generation_([0-9]+)\(([0-9]+)", re.A)
# atomic groups: if the first `context_N` has no `generation_N` after it, no later one has (linear)
_VLLM_ANY = re.compile(r"^execute_(?>.*?context_([0-9]+))(?>.*?generation_([0-9]+))", re.A | re.S)
# SGLang: step[DECODE bs=32], step[EXTEND bs=15 toks=15360], step[MIXED …]
_SGLANG = re.compile(r"^step\[(DECODE|EXTEND|PREFILL|MIXED|IDLE)\b([^\]]*)\]", re.I | re.A)
_PROFILER_STEP = re.compile(r"^ProfilerStep#([0-9]+)$", re.A)
# a user's own loop annotated with record_function("step_3") (or iter 3, iteration#3, batch-3):
# the passes of a trace that records no other evidence of them
_USER_STEP = LazyPattern(r"^(?:step|iter|iteration|batch)[ _#:.-]?([0-9]+)$", re.I | re.A)
_KV = LazyPattern(r"(bs|toks)=([0-9]+)", re.A)
# The patterns above are linear (anchored, lazy runs up to a fixed literal, atomic groups), so a
# long annotation costs time in proportion; past this length a name is not an engine's annotation.
MAX_ANNOTATION_CHARS = 1 << 16


def _phase(context: int, generation: int) -> str:
    if context > 0 and generation > 0:
        return "mixed"
    if context > 0:
        return "prefill"
    if generation > 0:
        return "decode"
    return "unknown"


def _int(text: str) -> int | None:
    # annotation numbers are data: a 5,000-digit one is refused, not converted (int() limits digits)
    return int(text) if len(text) <= 18 else None


def _sum(counts: list[int | None]) -> int | None:
    """A total of counts; unknown (None) when one of them is unreadable."""
    return None if None in counts else sum(counts)


def _phase_of(context: int | None, generation: int | None) -> str:
    return "unknown" if context is None or generation is None else _phase(context, generation)


def parse_step(name: str) -> tuple[str, str, int | None, int | None, int | None] | None:
    """(phase, source, requests, query tokens, KV tokens) for a step annotation, None if `name`
    is not one. Counts the annotation does not give are None."""
    if len(name) > MAX_ANNOTATION_CHARS:
        return None
    m = _VLLM_NEW.match(name)
    if m:
        ctx, gen = _int(m.group(2)), _int(m.group(4))
        parts = [_SQ_SK.match(m.group(3)), _SQ_SK.match(m.group(5))]
        tokens = _sum([_int(p.group(1)) for p in parts if p]) if any(parts) else None
        kv = _sum([_int(p.group(2)) for p in parts if p]) if any(parts) else None
        return _phase_of(ctx, gen), "vllm", _sum([ctx, gen]), tokens, kv
    m = _VLLM_OLD.match(name)
    if m:
        ctx, ctx_tokens, gen, gen_tokens = (_int(m.group(i)) for i in (1, 2, 3, 4))
        return _phase_of(ctx, gen), "vllm", _sum([ctx, gen]), _sum([ctx_tokens, gen]), None
    m = _VLLM_ANY.match(name)
    if m:
        ctx, gen = _int(m.group(1)), _int(m.group(2))
        return _phase_of(ctx, gen), "vllm", _sum([ctx, gen]), None, None
    m = _SGLANG.match(name)
    if m:
        kind = m.group(1).upper()
        kv = {k: _int(v) for k, v in _KV.findall(m.group(2))}
        phase = {"DECODE": "decode", "EXTEND": "prefill", "PREFILL": "prefill", "MIXED": "mixed"}.get(kind, "unknown")
        bs = kv.get("bs")
        # a decode step runs one new token per request
        return phase, "sglang", bs, kv.get("toks", bs if phase == "decode" else None), None
    if _PROFILER_STEP.match(name):
        return "unknown", "profiler_step", None, None, None
    if _USER_STEP.match(name):
        return "unknown", "user_step", None, None, None
    return None


ENGINE_SOURCES = ("vllm", "sglang")


def find_steps(model: TraceModel) -> tuple[list[Step], bool]:
    """Engine step annotations (vLLM, SGLang), sorted by time; CPU ones if any, else their GPU
    mirrors. (steps, on_gpu). Annotations that overlap are one step: SGLang writes a step twice
    (`execute_…` and `step[DECODE bs=32]`), and an outer and inner copy can share a start."""
    return _annotated(model, ENGINE_SOURCES)


def profiler_steps(model: TraceModel) -> list[Step]:
    """`ProfilerStep#N` windows: containers (one generate() call can hold many passes)."""
    return _annotated(model, ("profiler_step",))[0]


def _parsed_name(model: TraceModel, name_id: int):
    """parse_step of one annotation name (an index into model.strings), once per model: layer and
    module annotations repeat their names thousands of times, and steps are looked for twice
    (engine steps, then ProfilerSteps)."""
    seen = model.memo(("parsed_step_names",), dict)
    if name_id not in seen:
        seen[name_id] = parse_step(model.strings[name_id])
    return seen[name_id]


def _annotated(model: TraceModel, sources: tuple[str, ...]) -> tuple[list[Step], bool]:
    a = model.annotations
    for gpu in (0, 1):
        rows = np.nonzero(a.gpu == gpu)[0]
        rows = rows[np.argsort(a.ts[rows], kind="stable")]
        # each distinct name parsed once, the rows of the names that are steps picked at once (a
        # decode trace's annotations are thousands of rows)
        ids = a.name[rows].astype(np.int64)
        uniq, inverse = unique_inverse(ids)
        parsed_of = [_parsed_name(model, i) for i in uniq.tolist()]
        is_step = np.array([bool(p) and p[1] in sources for p in parsed_of] + [False])
        pick = np.flatnonzero(is_step[inverse])
        starts, durs = a.ts[rows[pick]].astype(np.float64), a.dur[rows[pick]].astype(np.float64)
        found = [(t, d, model.strings[i], parsed_of[u]) for t, d, i, u in
                 zip(starts.tolist(), durs.tolist(), ids[pick].tolist(), inverse[pick].tolist())]
        steps: list[Step] = []
        for ts, dur, name, (phase, source, batch, tokens, kv) in found:
            if steps and ts < steps[-1].ts + steps[-1].dur:
                last = steps[-1]   # the same step annotated again: keep one, with what both say
                if last.phase == "unknown":
                    last.phase = phase
                last.batch = last.batch if last.batch is not None else batch
                last.tokens = last.tokens if last.tokens is not None else tokens
                last.kv_tokens = last.kv_tokens if last.kv_tokens is not None else kv
                if source == "sglang":   # vLLM never writes `step[…]`: a step SGLang also wrote is SGLang's
                    last.source = source
                continue
            steps.append(Step(len(steps), name, phase, ts, dur, source, batch, tokens, kv))
        if steps:
            return steps, bool(gpu)
    return [], False


def _gpu_mirrors(model: TraceModel, steps: list[Step]):
    """GPU-timeline copies of the CPU step annotations, matched by name and order."""
    a = model.annotations
    rows = np.nonzero(a.gpu == 1)[0]
    rows = rows[np.argsort(a.ts[rows], kind="stable")]
    picked = [r for r in rows if _parsed_name(model, int(a.name[r]))]
    if len(picked) != len(steps):
        return None, None
    picked = np.array(picked)
    return (a.ts[picked], a.ts[picked] + a.dur[picked]), True


def assign(model: TraceModel, classifier=None) -> None:
    """Set kernels.step and kernels.phase; record model.steps, where they came from, their kinds
    (kerneldiff.core.analysis.pass_kinds) and warnings."""
    _assign(model, classifier)
    assign_kinds(model)


def _assign(model: TraceModel, classifier=None) -> None:
    k = model.kernels
    steps, on_gpu = find_steps(model)
    if steps:
        model.pass_source = "engine step annotations (" + "/".join(sorted({s.source for s in steps})) + ")"
        model.phase_source = "annotations"
        _assign_annotated(model, steps, on_gpu)
        return
    containers = profiler_steps(model)
    mixers = None
    if classifier is not None:
        mixers = np.array([i for i, c in enumerate(model.categories) if classifier.role(c) in ("attention", "ssm")],
                          dtype=np.int64)
        if not np.isin(k.cat, mixers).any() or model.eager_attention:
            # decomposed attention (GEMM + softmax + GEMM): the softmax marks each layer's mixer
            # (with eager attention, a graph-replayed pass's softmax may not be told as attention)
            mixers = np.array(sorted(set(mixers.tolist()) | {i for i, c in enumerate(model.categories)
                                                             if c.lower() == "softmax"}), dtype=np.int64)
    found = passes.find_passes(model, mixers)
    if found is not None and len(found.ts):
        passes.assign_passes(model, found, launch_time(model), containers)
        if found.source not in ("module", "module+replay") and classifier is not None:
            # the forward's own end, from the sampling after its LM head (no stacks: no call spans it)
            from kerneldiff.core.analysis.forward_end import bound_by_compiled_call, bound_by_sampling

            bound_by_compiled_call(model, found)
            bound_by_sampling(model, np.array([i for i, c in enumerate(model.categories)
                                               if classifier.role(c) == "gemm"], dtype=np.int64))
        model.pass_source = {"module": "model module calls (nn.Module)", "embedding": "token embedding calls",
                             "compiled-graph": "compiled graph calls", "graph": "CUDA/HIP graph launches",
                             "anchors": "embedding, compiled-graph and graph-launch entries",
                             "module+replay": "model module calls (nn.Module) and graph replays outside them"
                             }[found.source]
        set_phases(model)
        return
    if containers:
        model.pass_source = "ProfilerStep annotations"
        _assign_annotated(model, containers, False)
        set_phases(model)
        return
    user, on_gpu = _annotated(model, ("user_step",))
    if len(user) >= 2:
        model.pass_source = "the user's step annotations (step_N, iter N …)"
        _assign_annotated(model, user, on_gpu)
        set_phases(model)
        return
    model.steps = [Step(0, "whole trace", "unknown", float(k.ts.min()) if len(k) else 0.0,
                        float((k.ts + k.dur).max() - k.ts.min()) if len(k) else 0.0, "whole-trace")]
    k.step = np.zeros(len(k), dtype=np.int32)
    k.phase = np.zeros(len(k), dtype=np.int8)
    model.pass_source = "whole trace (no pass evidence)"
    model.warnings.append("no forward-pass evidence (step annotations, module calls, embedding or graph "
                          "calls): the whole trace is one step")


def set_phases(model: TraceModel, allow_inferred: bool = True) -> None:
    """Phases of passes that have no annotation: from recorded shapes, else inferred from kernel
    durations (said in phase_source and a warning)."""
    got = passes.phases_from_shapes(model)
    if got is not None:
        phases, how = got
        model.phase_source = f"shapes ({how})"
        phases, filled = passes.fill_unknown(model, phases)
        if filled:
            model.phase_source += f"; {filled} passes without shapes inferred from their kernels"
    else:
        # steps a user or the profiler annotated may be training steps: prefill/decode only with mixers
        phases = passes.phases_from_durations(model, model.pass_source.startswith(("ProfilerStep", "the user's step"))) \
            if allow_inferred else None
        if phases is None:
            model.phase_source = "unknown"
            return
        model.phase_source = "inferred from kernel durations"
        model.warnings.append("phases inferred from kernel durations (no annotations or recorded shapes): "
                              "the passes far longer than the median are taken as prefill")
    for s, p in zip(model.steps, phases):
        s.phase = p
    k = model.kernels
    phase_of = np.array([PHASE_ID[s.phase] for s in model.steps], dtype=np.int8)
    k.phase = np.where(k.step >= 0, phase_of[np.maximum(k.step, 0)], PHASE_ID["unknown"]).astype(np.int8)
    mark_forward(model)


def _in_steps(model: TraceModel, starts: np.ndarray, ends: np.ndarray, t: np.ndarray,
              moved: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the last step begun at or before each kernel's time `t`, whether that step's end covers it),
    for `t` from `launch_time`: a kernel with a launch row has that row's time, so its step is found
    once per launch row (a graph replay's hundreds of kernels share one launch: ~5 ms of binary
    searches for 257k kernels of a dense decode trace, against 284 launches); the others, and those
    whose time was `moved` from that, one by one."""
    k = model.kernels
    linked = (k.launch >= 0) & ~moved
    lt = np.asarray(model.launches.ts, dtype=np.float64)   # what launch_time wrote into t
    il = np.searchsorted(starts, lt, side="right") - 1
    okl = (il >= 0) & (lt <= ends[np.maximum(il, 0)])
    if linked.all():
        return il[k.launch], okl[k.launch]
    idx = np.empty(len(t), dtype=il.dtype)
    ok = np.empty(len(t), dtype=bool)
    li = k.launch[linked]
    idx[linked], ok[linked] = il[li], okl[li]
    rest = ~linked
    tr = t[rest]
    ir = np.searchsorted(starts, tr, side="right") - 1
    idx[rest], ok[rest] = ir, (ir >= 0) & (tr <= ends[np.maximum(ir, 0)])
    return idx, ok


def _assign_annotated(model: TraceModel, steps: list[Step], on_gpu: bool) -> None:
    k = model.kernels
    model.steps = steps
    starts = np.array([s.ts for s in steps])
    ends = np.array([s.ts + s.dur for s in steps])
    if on_gpu:
        t = k.ts.copy()
        model.warnings.append("step annotations found only on the GPU timeline: kernels assigned by GPU time")
    else:
        t = launch_time(model)
    by_gpu = not on_gpu and len(k) > 0 and bool(np.isnan(t).all())
    loose = np.zeros(len(k), dtype=bool)
    if not on_gpu and len(model.launches) == 0 and not by_gpu and np.isnan(t).any():
        # no runtime events: kernels without an operator (graph replays, library launches) have no
        # launch time; placed by their GPU start like a whole trace without links, work launched
        # before the window (told by correlation order) aside
        from kerneldiff.core.analysis.cut_work import before_window

        loose = np.isnan(t) & ~before_window(model)
        t = t.copy()
        t[loose] = k.ts[loose]
    if by_gpu:
        # no runtime events and no operator links (older Kineto without them): a kernel starts
        # after its launch, so it belongs to the last step begun before its start; a step's
        # kernels then run on past its CPU end, up to the next step's start
        t = k.ts.copy()
        ends = np.append(starts[1:], np.inf)
        model.warnings.append("no kernel links to a CPU launch or operator (runtime events not recorded): kernels "
                              "are placed in steps by their GPU start, and work launched before the profiler's "
                              "window cannot be told apart")
    if on_gpu or by_gpu:
        idx = np.searchsorted(starts, t, side="right") - 1
        ok = (idx >= 0) & (t <= ends[np.maximum(idx, 0)])
    else:
        idx, ok = _in_steps(model, starts, ends, t, loose)
    if loose.any():   # placed by GPU start: a step's kernels run on past its CPU end, to the next step
        nxt = np.append(starts[1:], np.inf)
        ok[loose] = (idx[loose] >= 0) & (t[loose] < nxt[np.maximum(idx[loose], 0)])
    step = np.where(ok, idx, -1).astype(np.int32)
    unlinked = np.isnan(t)
    if unlinked.any() and not on_gpu:
        # Kernels with no recorded launch (often launched before profiling started) belong to a
        # step only if its GPU-timeline mirror covers them; otherwise they stay outside all steps.
        gpu_steps, _ = _gpu_mirrors(model, steps)
        if gpu_steps is not None:
            g_start, g_end = gpu_steps
            gi = np.searchsorted(g_start, k.ts[unlinked], side="right") - 1
            g_ok = (gi >= 0) & (k.ts[unlinked] <= g_end[np.maximum(gi, 0)])
            step[unlinked] = np.where(g_ok, gi, -1)
    k.step = step
    phase_of = np.array([PHASE_ID[s.phase] for s in steps], dtype=np.int8)
    k.phase = np.where(step >= 0, phase_of[np.maximum(step, 0)], PHASE_ID["unknown"]).astype(np.int8)
    from kerneldiff.core.analysis.cut_work import before_window

    # work launched before the profiler's window is said once, by its own warning
    out = (step < 0) & ~before_window(model)
    outside = int(out.sum())
    if outside and len(k):
        share = float(k.dur[out].sum() / max(k.dur.sum(), 1e-12))
        if share > 0.05:
            model.warnings.append(f"{outside} kernels ({share:.0%} of GPU time) were launched outside any step annotation")
