"""Property tests: whatever events or bytes a trace holds, `load` returns a sound model or raises TraceError.

Inputs are random event lists and random mutations (of fields and of bytes) of a small valid trace
from the hostile corpus. A model is sound when its durations are finite and >= 0, every kernel
sits in at most one layer span, per-category totals add up to the kernel total, Python stacks
terminate, and comparing the model with itself is neutral (ratio 1, no findings).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import tempfile
from pathlib import Path

import numpy as np

from kerneldiff.core.analysis.cut_work import cut_mask
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kerneldiff.core.analysis.attribution import python_stack
from kerneldiff.core.compare.engine import compare
from kerneldiff.core.errors import TraceError
from kerneldiff.core.orchestration import load
from kerneldiff.core.model import PHASE_ID
from kerneldiff.core.analysis.summary import summarize
from hostile_corpus import LAYER_KERNELS, MARKUP, STEP_NAMES, good_doc, good_events

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_DIR = tempfile.TemporaryDirectory(prefix="kerneldiff-props-")
GOOD = json.dumps(good_doc(layers=2, steps=2)).encode()


@pytest.fixture(scope="module")
def clf():
    from kerneldiff.core.analysis.classify import Classifier

    return Classifier.load()


def _write(data: bytes, gz: bool = False) -> Path:
    p = Path(_DIR.name) / ("t.json.gz" if gz else "t.json")
    p.write_bytes(gzip.compress(data, compresslevel=1) if gz else data)
    return p


def check_model(m, clf) -> None:
    """Invariants of any loaded model."""
    k = m.kernels
    assert len({len(v) for v in k.columns.values()}) <= 1, "kernel columns differ in length"
    assert np.isfinite(k.ts).all() and np.isfinite(k.dur).all()
    assert (k.dur >= 0).all()
    assert (np.diff(k.ts) >= 0).all(), "kernels are sorted by start time"
    # each kernel in at most one layer span; spans of one step never overlap; ids match the column
    owner = np.full(len(k), -1)
    for i, span in enumerate(m.layers):
        rows = np.nonzero((k.step == span.step) & (k.layer == span.layer))[0]
        assert len(rows) > 0 and rows.min() >= span.start and rows.max() < span.end
        assert (owner[rows] == -1).all(), "a kernel belongs to two layers"
        owner[rows] = i
    assert ((k.layer >= 0) == (owner >= 0)).all(), "layer column and layer spans disagree"
    if m.num_layers == 0:
        assert (k.layer == -1).all()
    else:
        assert (k.layer < m.num_layers).all(), "a layer id beyond layers per step"
    assert ((k.step >= -1) & (k.step < max(len(m.steps), 1))).all()
    # per-category totals add up to the kernel total
    ops = summarize(m).operations
    assert sum(o.count for o in ops) == len(k)
    assert math.isclose(sum(o.total_us for o in ops), m.gpu_time_us, rel_tol=1e-9, abs_tol=1e-6)
    # Python stacks terminate (parent ids may form cycles)
    for r in range(min(len(k), 20)):
        assert len(python_stack(m, r)) <= 64
    # comparing a model with itself is neutral
    c = compare(m, m, classifier=clf)
    kept = ~cut_mask(m)   # work launched before the window is left out of comparisons, and said so
    assert c.a.kernels == int(kept.sum()) and (c.a.excluded is None) == bool(kept.all())
    if m.kernels.dur[kept].sum() > 0:
        assert c.ratio == pytest.approx(1.0)
    assert c.gap_us == 0
    assert c.fusions == []
    assert all(o.gap_us == 0 and o.only_in is None for o in c.operations)
    assert all(r.gap_us == 0 for r in c.layers)
    json.dumps(c.to_dict(), allow_nan=False)
    for phase in m.phases_present():   # the phase filters see subsets of the same invariants
        cp = compare(m, m, phase=phase, classifier=clf)
        assert cp.gap_us == 0 and cp.fusions == []
        assert cp.a.kernels == int(((m.kernels.phase == PHASE_ID[phase]) & kept).sum())
    # `info --json` prints the summary: strict JSON, whatever the trace held
    json.dumps(dataclasses.asdict(summarize(m)), allow_nan=False, default=str)


def load_or_error(path: Path, clf):
    """The contract: a sound model or a one-line TraceError naming the file; nothing else."""
    try:
        m = load(path, classifier=clf)
    except TraceError as e:
        assert str(path) in str(e) and "\n" not in str(e)
        return None
    check_model(m, clf)
    return m


# --- random event lists ---------------------------------------------------------------------

KERNEL_NAMES = sorted({k for k, _ in LAYER_KERNELS}) + ["lm_head_gemm", MARKUP, "\x1b[2Jk", ""]
small_int = st.integers(-2, 40)
number = st.one_of(
    st.floats(min_value=-1e3, max_value=1e5, allow_nan=False), st.integers(-10, 10**5),
    st.sampled_from([0, -0.0, 1e18, 1e300, 2**63, 2**64 + 1, -(2**63) - 1]),
    st.integers(0, 10**5).map(str), st.just("x"), st.none(), st.booleans(), st.just([1]))
args = st.fixed_dictionaries({}, optional={
    "correlation": st.one_of(small_int, small_int.map(str), st.none()),
    "External id": st.one_of(small_int, st.just("e")),
    "Python id": small_int, "Python parent id": small_int,
    "device": st.one_of(st.integers(0, 2), st.just("gpu")), "stream": st.one_of(st.integers(0, 9), st.none()),
    "name": st.text(max_size=5)})
event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "X", "X", "M", "i", "B", None, 7]),
     "cat": st.sampled_from(["kernel", "kernel", "gpu_memcpy", "gpu_memset", "cpu_op", "cuda_runtime",
                             "hip_runtime", "python_function", "user_annotation", "gpu_user_annotation",
                             "Kernel", "other", None, 3])},
    optional={"name": st.one_of(st.sampled_from(KERNEL_NAMES + list(STEP_NAMES) + ["ProfilerStep#1",
                                                                                    "step[DECODE bs=4]"]),
                                st.text(max_size=8), st.integers()),
              "ts": number, "dur": number, "pid": st.one_of(st.integers(0, 3), st.just("Spans")),
              "tid": st.one_of(st.integers(0, 9), st.text(max_size=3)),
              "args": st.one_of(args, st.none(), st.just([]), st.just("a"))})
events = st.lists(st.one_of(event, event, event, st.none(), st.integers(), st.text(max_size=3)), max_size=60)


@SETTINGS
@given(evs=events, array=st.booleans(), gz=st.booleans())
def test_random_event_lists(clf, evs, array, gz):
    doc = evs if array else {"deviceProperties": [{"name": "GPU"}], "traceEvents": evs}
    load_or_error(_write(json.dumps(doc).encode(), gz), clf)


# --- mutations of a valid trace -------------------------------------------------------------

FIELDS = ["ph", "cat", "name", "ts", "dur", "pid", "tid", "args", "args.correlation", "args.External id",
          "args.Python id", "args.Python parent id", "args.device", "args.stream"]
json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6)


@st.composite
def field_mutations(draw):
    doc = json.loads(GOOD)
    evs = doc["traceEvents"]
    for _ in range(draw(st.integers(1, 8))):
        e = evs[draw(st.integers(0, len(evs) - 1))]
        key = draw(st.sampled_from(FIELDS))
        target = e
        if key.startswith("args."):
            if not isinstance(e.get("args"), dict):
                continue
            target, key = e["args"], key[5:]
        if draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = draw(json_value)
    return doc


@SETTINGS
@given(doc=field_mutations(), gz=st.booleans())
def test_field_mutations_of_a_valid_trace(clf, doc, gz):
    # json.dumps writes NaN / Infinity literals for non-finite floats: not JSON, must not crash us
    load_or_error(_write(json.dumps(doc).encode(), gz), clf)


JSON_BYTES = b' {}[]:,"\\0123456789.eE-+truefalsnul\x1b\t\n'


@st.composite
def byte_mutations(draw, alphabet: bytes | None):
    data = bytearray(GOOD)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        i = draw(st.integers(0, len(data) - 1))
        if alphabet is None:
            b = draw(st.integers(0, 255))
        else:
            b = alphabet[draw(st.integers(0, len(alphabet) - 1))]
        if op == "flip":
            data[i] = b
        elif op == "insert":
            data.insert(i, b)
        elif op == "delete":
            del data[i:i + draw(st.integers(1, 50))]
        else:
            del data[i:]
        if not data:
            break
    return bytes(data)


@SETTINGS
@given(data=byte_mutations(JSON_BYTES), gz=st.booleans())
def test_byte_mutations_of_a_valid_trace(clf, data, gz):
    load_or_error(_write(data, gz), clf)


@SETTINGS
@given(data=byte_mutations(None))
def test_arbitrary_byte_mutations_of_a_valid_trace(clf, data):
    load_or_error(_write(data), clf)


# --- examples the properties found ----------------------------------------------------------

@pytest.mark.parametrize("per_step,expected", [((1, 2), 2), ((2, 2, 3), 2), ((3, 2, 2, 1), 2)])
def test_passes_with_an_odd_layer_count(clf, per_step, expected):
    """The layer count is the most common one (the larger on a tie); layers beyond it in odd passes
    stay outside layers instead of becoming a "layer N" that few passes have."""
    doc = {**good_doc(steps=0), "traceEvents": good_events(layers=per_step, steps=len(per_step))}
    m = load_or_error(_write(json.dumps(doc).encode()), clf)
    assert m is not None and m.num_layers == expected
    assert sorted({int(x) for x in m.kernels.layer if x >= 0}) == list(range(expected))
    extra = sum(max(0, n - expected) for n in per_step) * len(LAYER_KERNELS)
    assert (f"{extra} kernels of layers beyond" in " ".join(m.warnings)) == (extra > 0)
    # the spans left are the (pass, layer) pairs the layer column holds, and none beyond the count
    k = m.kernels
    held = {(int(s), int(l)) for s, l in zip(k.step, k.layer) if l >= 0}
    assert sorted((span.step, span.layer) for span in m.layers) == sorted(held)
    assert len(m.layers) == sum(min(n, expected) for n in per_step)
