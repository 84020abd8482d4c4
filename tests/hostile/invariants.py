"""Helpers for the invariant tests (issue 26): a trace read as a JSON document, transformed the way a
user's tools could rewrite it, written back, and what `info --json` and `compare --format json` say
about it, with the fields that name the file or time the run taken out."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

from kerneldiff.core.numbers import strict_json
from kerneldiff.core.session import Session

# The real traces in ../shared/traces: the small ones run in the fast loop, the big ones (tens to
# hundreds of MB of JSON to rewrite per case) are marked slow.
QUICK_REAL = ["a100_triton_example.json.gz", "mi250_minitoy_train_rocm.json.gz", "mi300x_sglang_qwen3-8b_decode.json.gz",
              "mi300x_vllm_gptoss_decode.json.gz", "h100_qwen1.5-0.5b_hf.json.gz"]
SLOW_REAL = ["mi300x_qwen1.5-0.5b_hf.json.gz", "b200_vllm_eager.json.gz", "v100_test.json.gz", "a100_control.json.gz",
             "hta_two_ranks/sampled_rank-0.json.gz", "hta_two_ranks/sampled_rank-1.json.gz",
             "h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz", "h200_llama_eager_sdpa.json.gz"]


def real_params(quick: list[str] | None = None, slow: list[str] | None = None) -> list:
    """pytest params over the real traces, the big ones marked slow."""
    import pytest

    quick = QUICK_REAL if quick is None else quick
    slow = SLOW_REAL if slow is None else slow
    return [pytest.param(n, id=n) for n in quick] + [pytest.param(n, id=n, marks=pytest.mark.slow) for n in slow]


def synth_doc(root: Path, seed: int, style: str = "hf-generate", vendor: str = "nvidia", float_ts: bool = False,
              **cfg: Any) -> dict[str, Any]:
    """A small generated trace (kerneldiff.core.synth) as a document; integer-µs timestamps by
    default, so activities start in the same µs (ties) as in the V100 trace."""
    from kerneldiff.core.synth.pair import SynthConfig, write_trace

    root.mkdir(parents=True, exist_ok=True)
    p = root / f"synth-{seed}-{style}.json"
    write_trace(p, SynthConfig(vendor=vendor, layers=cfg.pop("layers", 2), steps=cfg.pop("steps", 4), seed=seed,
                               float_ts=float_ts, annotation_style=style, **cfg))
    return read_doc(p)


# fields that describe the file or the run, not the trace: they may differ between two files that
# hold the same trace
VOLATILE = {"path", "size", "compressed", "seconds", "load_seconds", "a_path", "b_path"}


def read_doc(path: str | Path) -> dict[str, Any]:
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = json.loads(data)
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


def write_doc(path: Path, doc: Any, **dumps: Any) -> Path:
    path.write_text(json.dumps(doc, **dumps))
    return path


def _scrub(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _scrub(x) for k, x in v.items() if k not in VOLATILE}
    if isinstance(v, list):
        return [_scrub(x) for x in v]
    return v


def info_answer(path: str | Path) -> dict[str, Any]:
    """What `kerneldiff info --json` reports of one trace (its probe and load summary)."""
    s = Session([str(path)], use_cache=False, workers=0)
    info = s.probe()[0]
    s.load(0)
    return _scrub(json.loads(strict_json({"probe": info.to_dict(), "summary": s.summary(0)})))


def compare_answer(a: str | Path, b: str | Path) -> dict[str, Any]:
    """What `kerneldiff compare A B --format json` reports."""
    s = Session([str(a), str(b)], use_cache=False, workers=0)
    s.probe()
    s.load(0)
    s.load(1)
    return _scrub(json.loads(strict_json(s.compare())))


class Reference:
    """A trace and what kerneldiff says of it: `of(doc)` answers for a transformed document, written
    under the same file name (names show in labels and warnings) and compared against the original
    (`compare ORIGINAL TRANSFORMED`), so the answers of equal traces are equal."""

    def __init__(self, root: Path, doc: dict[str, Any], compare: bool = True, **dumps: Any) -> None:
        self.root, self.compare, self._n = root, compare, 0
        (root / "ref").mkdir(parents=True, exist_ok=True)
        self.ref = write_doc(root / "ref" / "trace.json", doc, **dumps)
        self.answer = self.of(doc, **dumps)

    def path_for(self, doc: Any, text: str | bytes | None = None, **dumps: Any) -> Path:
        self._n += 1
        d = self.root / f"t{self._n}"
        d.mkdir()
        p = d / "trace.json"
        if text is not None:
            (p.write_bytes if isinstance(text, bytes) else p.write_text)(text)
            return p
        return write_doc(p, doc, **dumps)

    def answers(self, p: Path) -> dict[str, Any]:
        out = {"info": info_answer(p)}
        if self.compare:
            out["compare"] = compare_answer(self.ref, p)
        return out

    def of(self, doc: Any, text: str | bytes | None = None, **dumps: Any) -> dict[str, Any]:
        return self.answers(self.path_for(doc, text, **dumps))


def diff(x: Any, y: Any, where: str = "", out: list[str] | None = None, limit: int = 8) -> list[str]:
    """Where two answers differ (first `limit` places), for a readable failure."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y), key=str):
            if k not in x or k not in y:
                out.append(f"{where}.{k}: only in {'first' if k in x else 'second'}")
            else:
                diff(x[k], y[k], f"{where}.{k}", out, limit)
    elif isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            out.append(f"{where}: {len(x)} items against {len(y)}")
        for i, (a, b) in enumerate(zip(x, y)):
            diff(a, b, f"{where}[{i}]", out, limit)
    elif x != y:
        out.append(f"{where}: {x!r} != {y!r}")
    return out


# --- transformations (each returns a new document) ------------------------------------------------

def events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["traceEvents"]


def with_events(doc: dict[str, Any], evs: list[dict[str, Any]]) -> dict[str, Any]:
    return {**doc, "traceEvents": evs}


def shuffled(doc: dict[str, Any], seed: int) -> dict[str, Any]:
    evs = list(events(doc))
    random.Random(seed).shuffle(evs)
    return with_events(doc, evs)


def reversed_events(doc: dict[str, Any]) -> dict[str, Any]:
    return with_events(doc, list(reversed(events(doc))))


def keys_reordered(doc: dict[str, Any], seed: int) -> dict[str, Any]:
    """Every object's keys in another order (the document's own members too)."""
    rng = random.Random(seed)

    def re(v):
        if isinstance(v, dict):
            items = list(v.items())
            rng.shuffle(items)
            return {k: re(x) for k, x in items}
        if isinstance(v, list):
            return [re(x) for x in v]
        return v
    return re(doc)


def shifted(doc: dict[str, Any], delta: float) -> dict[str, Any]:
    """Every timestamp moved by `delta` µs (durations untouched)."""
    out = []
    for e in events(doc):
        if isinstance(e, dict) and isinstance(e.get("ts"), (int, float)) and not isinstance(e.get("ts"), bool):
            e = {**e, "ts": e["ts"] + delta}
        out.append(e)
    return with_events(doc, out)


ID_ARGS = ("correlation", "External id", "Python id", "Python parent id", "Ev Idx")


def renumbered(doc: dict[str, Any], seed: int | None = None, offset: int = 1000003) -> dict[str, Any]:
    """pids, tids, streams and every join id renamed: moved by one offset, or (with a seed) mapped
    to random values with random gaps between them. The same id is renamed the same way everywhere,
    whether written as a number or as text (some vLLM traces mix them), so joins stay joins; ids keep
    their order, since the profiler hands out External and Python ids in creation order, which tells
    an operator from the one it calls when both start and end in the same µs."""
    def fields(e):
        a = e.get("args") if isinstance(e.get("args"), dict) else {}
        return [e.get(k) for k in ("pid", "tid", "id") if k in e] + [a[k] for k in (*ID_ARGS, "stream") if k in a]

    def as_int(v):
        if isinstance(v, str) and v.isdigit():
            return int(v)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    mapping: dict[int, int] = {}
    if seed is not None:
        rng = random.Random(seed)
        seen = sorted({i for e in events(doc) if isinstance(e, dict) for v in fields(e) if (i := as_int(v)) is not None})
        at = rng.randrange(1, 1000)
        for i in seen:
            mapping[i] = at
            at += rng.randrange(1, 10**6)

    def num(v):
        i = as_int(v)
        if i is None:
            return v
        new = mapping[i] if seed is not None else i + offset
        return str(new) if isinstance(v, str) else new   # an id written as text stays text

    out = []
    for e in events(doc):
        if not isinstance(e, dict):
            out.append(e)
            continue
        e = dict(e)
        for k in ("pid", "tid", "id"):
            if k in e:
                e[k] = num(e[k])
        a = e.get("args")
        if isinstance(a, dict):
            a = dict(a)
            for k in (*ID_ARGS, "stream"):
                if k in a:
                    a[k] = num(a[k])
            e["args"] = a
        out.append(e)
    return with_events(doc, out)


IGNORABLE = [
    {"ph": "i", "name": "an instant marker", "ts": 0, "pid": 1, "tid": 1, "s": "t"},
    {"ph": "C", "name": "a counter", "ts": 0, "pid": 1, "args": {"value": 3}},
    {"ph": "M", "name": "process_labels", "pid": 424242, "args": {"labels": "ignore me"}},
    {"ph": "s", "name": "a flow", "id": 99999991, "ts": 0, "pid": 1, "tid": 1, "cat": "misc_flow"},
    {"ph": "f", "name": "a flow", "id": 99999991, "ts": 0, "pid": 1, "tid": 1, "cat": "misc_flow", "bp": "e"},
]


def with_ignorable(doc: dict[str, Any], seed: int) -> dict[str, Any]:
    """Events no analysis reads (instants, counters, flows, labels) put among the others, at a
    time inside the trace."""
    evs = list(events(doc))
    rng = random.Random(seed)
    t = next((e["ts"] for e in evs if isinstance(e, dict) and isinstance(e.get("ts"), (int, float))), 0)
    for extra in IGNORABLE:
        e = dict(extra)
        if "ts" in e:
            e["ts"] = t
        evs.insert(rng.randrange(len(evs) + 1), e)
    return with_events(doc, evs)


def _escaped_str(s: str) -> str:
    """A JSON string whose first character is written as a \\u escape (equal to the plain one)."""
    if not s:
        return '""'
    return '"\\u%04x' % ord(s[0]) + json.dumps(s[1:])[1:] if ord(s[0]) < 0x10000 else json.dumps(s)


def escaped_json(v: Any, keys: bool = True, values: bool = False, top_only: bool = False, depth: int = 0) -> str:
    """`v` as JSON text with keys (and/or string values) escaped (`\\u0064eviceProperties`); with
    top_only, only the top-level object's own keys."""
    if isinstance(v, dict):
        ek = keys and (not top_only or depth == 0)
        return "{" + ",".join((_escaped_str(k) if ek else json.dumps(k)) + ":" +
                              escaped_json(x, keys, values, top_only, depth + 1) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(escaped_json(x, keys, values, top_only, depth + 1) for x in v) + "]"
    if isinstance(v, str):
        return _escaped_str(v) if values else json.dumps(v)
    return json.dumps(v)


def meta_last(doc: dict[str, Any]) -> dict[str, Any]:
    """The same members with traceEvents first and the metadata after it (as HF traces have it)."""
    return {"traceEvents": doc["traceEvents"], **{k: v for k, v in doc.items() if k != "traceEvents"}}


def scaled(doc: dict[str, Any], k: int, origin_us: int | None = None) -> dict[str, Any]:
    """Every time about the first event's start, and every duration, multiplied by an integer k, in
    whole ns (traces write µs with ns digits: scaling the float µs would add sub-ns noise that
    opens 1 ns gaps between back-to-back kernels). With `origin_us`, the first event is moved there:
    a trace whose clock reads ~5e12 µs is at a double's resolution (~1 ns), where any rewrite of
    its times moves some by 1 ns; near the origin every ns is exact."""
    evs = events(doc)
    t0 = min((_ns(e["ts"]) for e in evs if isinstance(e, dict) and _num(e.get("ts"))), default=0)
    new0 = t0 if origin_us is None else origin_us * 1000
    out = []
    for e in evs:
        if isinstance(e, dict):
            e = dict(e)
            if _num(e.get("ts")):
                e["ts"] = _us(new0 + (_ns(e["ts"]) - t0) * k)
            if _num(e.get("dur")):
                e["dur"] = _us(_ns(e["dur"]) * k)
        out.append(e)
    return with_events(doc, out)


def _ns(us: float) -> int:
    return round(us * 1000) if isinstance(us, float) else us * 1000


def _us(ns: int) -> int | float:
    return ns // 1000 if ns % 1000 == 0 else ns / 1000


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def times(answer: Any, where: str = "") -> dict[str, float]:
    """Every time in an answer (keys ending in _us), by where it is."""
    out: dict[str, float] = {}
    if isinstance(answer, dict):
        for key, v in answer.items():
            w = f"{where}.{key}"
            if str(key).endswith("_us") and _num(v):
                out[w] = float(v)
            else:
                out.update(times(v, w))
    elif isinstance(answer, list):
        for i, v in enumerate(answer):
            out.update(times(v, f"{where}[{i}]"))
    return out


def number_text(v: Any, style: str) -> str:
    """A JSON number in another spelling of the same value: "exp" (1.5e3, 2.5E-1), "zeros"
    (trailing zeros, 100.0 for 100)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return json.dumps(v)
    if style == "exp":
        return repr(float(v)).replace("e+", "e") if isinstance(v, float) and "e" in repr(v) else \
            (f"{v!r}E0" if isinstance(v, float) else f"{v}e0")
    if style == "zeros":
        return (repr(float(v)) if isinstance(v, int) and abs(v) < 2**53 else repr(v)) + \
            ("000" if isinstance(v, float) and "e" not in repr(v) and "inf" not in repr(v) else "")
    return json.dumps(v)


def renumbered_text(v: Any, style: str, keys: tuple[str, ...] = ("ts", "dur")) -> str:
    """`v` as JSON text with the numbers of `keys` (at any depth) spelled in `style`."""
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k) + ":" + (number_text(x, style) if k in keys else renumbered_text(x, style, keys))
                              for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(renumbered_text(x, style, keys) for x in v) + "]"
    return json.dumps(v)


SHAPE_ARGS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")


def without(doc: dict[str, Any], what: str) -> dict[str, Any]:
    """The trace with one kind of information gone: "python" (Python function events: the stacks),
    "shapes" (operator input shapes and types), "correlation" (the ids that join a kernel to its
    launch, and the flow events that carry them), "external" (External ids: kernel to operator)."""
    out = []
    for e in events(doc):
        if not isinstance(e, dict):
            out.append(e)
            continue
        if what == "python" and e.get("cat") in ("python_function", "python function"):
            continue
        if what == "correlation" and e.get("ph") in ("s", "f") and e.get("cat") in ("ac2g", "async_cpu_to_gpu"):
            continue
        a = e.get("args")
        drop = {"shapes": SHAPE_ARGS, "correlation": ("correlation",), "external": ("External id",)}.get(what, ())
        if isinstance(a, dict) and any(k in a for k in drop):
            e = {**e, "args": {k: v for k, v in a.items() if k not in drop}}
        out.append(e)
    doc = with_events(doc, out)
    if what == "python":
        doc = {k: v for k, v in doc.items() if k != "with_stack"}
    if what == "shapes":
        doc = {k: v for k, v in doc.items() if k != "record_shapes"}
    return doc


GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")


def _by_stream(evs: list) -> dict[Any, list[int]]:
    by: dict[Any, list[int]] = {}
    for i, e in enumerate(evs):
        if isinstance(e, dict) and e.get("cat") in GPU_CATS and isinstance(e.get("args"), dict) and "stream" in e["args"]:
            by.setdefault(e["args"]["stream"], []).append(i)
    return by


def busiest_stream(doc: dict[str, Any]) -> Any:
    by = _by_stream(events(doc))
    return max(by, key=lambda s: (len(by[s]), str(s))) if by else None


def stream_split(doc: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Every other kernel (in time order) of the stream with the most kernels moved to a new stream,
    at the same times. Returns (document, kernels moved)."""
    evs = events(doc)
    by = _by_stream(evs)
    if not by:
        return doc, 0
    busiest = busiest_stream(doc)
    numeric = [s for s in by if isinstance(s, int)] or [int(s) for s in by if str(s).isdigit()] or [0]
    new = max(numeric) + 1000
    new = str(new) if isinstance(busiest, str) else new
    moved = sorted(by[busiest], key=lambda i: evs[i]["ts"])[1::2]
    out = list(evs)
    for i in moved:
        e = dict(evs[i])
        e["args"] = {**e["args"], "stream": new}
        if e.get("tid") == busiest:
            e["tid"] = new
        elif isinstance(e.get("tid"), str) and str(busiest) in e["tid"]:
            e["tid"] = e["tid"].replace(str(busiest), str(new))
        out[i] = e
    return with_events(doc, out), len(moved)


def _corr(e: dict) -> Any:
    a = e.get("args")
    return a.get("correlation") if isinstance(a, dict) else None


def without_pass(doc: dict[str, Any], model, j: int) -> dict[str, Any]:
    """The trace with pass j taken out: the CPU events inside its window (its entry, operators,
    Python frames, launch calls) and the GPU activities those launches started (by correlation)."""
    st = model.steps[j]
    lo, hi = st.ts, st.ts + st.dur
    corr = {int(c) for c in model.kernels.corr[model.kernels.step == j].tolist() if c >= 0}
    out = []
    for e in events(doc):
        if isinstance(e, dict):
            c = _corr(e)
            try:
                c = int(c) if c is not None else None
            except (TypeError, ValueError):
                c = None
            if c is not None and c in corr:
                continue
            if e.get("cat") not in GPU_CATS and e.get("ph") == "X" and _num(e.get("ts")) \
                    and lo <= e["ts"] and e["ts"] + (e.get("dur") or 0) <= hi:
                continue
        out.append(e)
    return with_events(doc, out)


def repeated(doc: dict[str, Any], pause_us: float, id_offset: int = 10**9) -> dict[str, Any]:
    """The trace, then the same events again after a pause (two runs recorded in one trace): the
    second copy shifted to start `pause_us` after the first ends, its ids moved by `id_offset` (a
    second run has ids of its own). Metadata events are not repeated."""
    evs = events(doc)
    timed = [e for e in evs if isinstance(e, dict) and _num(e.get("ts")) and e.get("ph") != "M"]
    t0 = min(e["ts"] for e in timed)
    t1 = max(e["ts"] + (e.get("dur") if _num(e.get("dur")) else 0) for e in timed)
    shift = _us(_ns(t1) - _ns(t0) + _ns(pause_us))
    second = []
    for e in timed:
        e = {**e, "ts": _us(_ns(e["ts"]) + _ns(shift))}
        a = e.get("args")
        if isinstance(a, dict):
            e["args"] = {k: (v + id_offset if k in ID_ARGS and isinstance(v, int) and not isinstance(v, bool) else v)
                         for k, v in a.items()}
        if isinstance(e.get("id"), int):
            e["id"] += id_offset
        second.append(e)
    return with_events(doc, evs + second)


def with_setup(doc: dict[str, Any], kernels: int = 3) -> dict[str, Any]:
    """A run's set-up before its first pass, as generate() has it (cache allocation, masks): a few
    kernels launched 1 ms before the trace's first event, copies of its first kernel and launch call."""
    evs = events(doc)
    t0 = min(e["ts"] for e in evs if isinstance(e, dict) and _num(e.get("ts")) and e.get("ph") != "M")
    kern = next(e for e in evs if isinstance(e, dict) and e.get("cat") == "kernel" and _corr(e) is not None)
    call = next(e for e in evs if isinstance(e, dict) and e.get("cat") in ("cuda_runtime", "hip_runtime")
                and "Launch" in str(e.get("name")) and _corr(e) is not None)
    numeric = isinstance(_corr(kern), int)
    extra = []
    for i in range(kernels):
        corr = 2_000_000_000 + i
        c = corr if numeric else str(corr)
        t = t0 - 1000 + 50 * i
        extra.append({**call, "ts": t, "dur": 5, "args": {"correlation": c}})
        extra.append({**kern, "ts": t + 20, "dur": 3,
                      "args": {k: v for k, v in kern["args"].items() if k != "External id"} | {"correlation": c}})
    return with_events(doc, extra + evs)


def without_profiler_steps(doc: dict[str, Any]) -> dict[str, Any]:
    """The trace without its ProfilerStep#N windows (a profile taken without a schedule): passes
    then have no container to stop them."""
    return with_events(doc, [e for e in events(doc)
                             if not (isinstance(e, dict) and str(e.get("name", "")).startswith("ProfilerStep#"))])
