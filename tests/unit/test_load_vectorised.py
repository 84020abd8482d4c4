"""The loader's vectorised readings give exactly what the per-pass (per-row) code they replace gave:
each pass's distinct kernel names (phases from similar passes), the layer spans of every pass."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.core.analysis.passes import _pass_names
from kerneldiff.core.ingest.build import canonical
from kerneldiff.core.model import KERNEL_COLUMNS, Table

from conftest import real_trace


def _names_one_pass_at_a_time(model) -> list[np.ndarray]:
    k = model.kernels
    rows = np.flatnonzero(k.step >= 0)
    order = rows[np.argsort(k.step[rows], kind="stable")]
    cuts = np.searchsorted(k.step[order], np.arange(len(model.steps) + 1))
    return [np.unique(k.name[order[cuts[s]:cuts[s + 1]]]) for s in range(len(model.steps))]


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    # the callers hash each array's bytes: dtype and contents must match, not only the values
    return len(a) == len(b) and all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 6), st.integers(-1, 40)), max_size=300), st.integers(1, 8))
def test_pass_names_equal_one_unique_per_pass(rows, n_steps):
    """Steps -1 (outside passes) and names -1 (no name) included; passes without kernels give empty sets."""
    step = np.array([min(s, n_steps - 1) for s, _ in rows], np.int32)
    name = np.array([n for _, n in rows], np.int32)
    model = SimpleNamespace(kernels=SimpleNamespace(step=step, name=name), steps=[None] * n_steps)
    assert _same(_pass_names(model), _names_one_pass_at_a_time(model))


def test_pass_names_on_real_traces():
    from kerneldiff.core.orchestration import load

    for name in ("h100_llama_compiled", "mi300x_vllm_gptoss_decode", "b200_vllm_eager"):
        model = load(real_trace(f"{name}.json.gz"))
        assert _same(_pass_names(model), _names_one_pass_at_a_time(model))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 4)), min_size=2, max_size=60))
def test_canonical_equals_taking_its_order(rows):
    """A table already in canonical order is returned as it is; any other is reordered: either way
    the rows are those of taking the order (ties in ts broken by duration, ids, name)."""
    n = len(rows)
    cols = {name: np.full(n, default, dtype) for name, dtype, default in KERNEL_COLUMNS}
    cols["ts"] = np.array([r[0] for r in rows], float)
    cols["dur"] = np.array([r[1] for r in rows], float)
    cols["name"] = np.array([r[2] for r in rows], np.int32)
    out = canonical(Table(KERNEL_COLUMNS, cols))
    again = canonical(out)
    assert again is out     # in order: nothing copied
    ts, dur = out.columns["ts"], out.columns["dur"]
    assert bool(np.all(ts[1:] >= ts[:-1]))
    same_ts = ts[1:] == ts[:-1]
    assert bool(np.all(dur[1:][same_ts] <= dur[:-1][same_ts]))   # longer first at equal starts
    assert sorted(zip(ts.tolist(), dur.tolist(), out.columns["name"].tolist())) == sorted(
        (float(a), float(b), c) for a, b, c in rows)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 40)), min_size=1, max_size=80),
                min_size=1, max_size=12))
def test_name_cache_finds_what_a_dict_of_bytes_finds(batches):
    """Batches of rows (a text, and a hash that is the text's own or, for a few texts, another's:
    colliding hashes) against a dict keyed by the bytes: a row's entry is the one holding its bytes,
    never another text with its hash; the table grows past its first size (1,024 slots)."""
    from kerneldiff.core.ingest.scan import NameCache

    cache = NameCache()
    ref: dict[bytes, int] = {}          # bytes -> entry, as the cache should hold them
    hash_of = lambda t: t % 37 if t % 5 == 0 else t * 0x9E3779B97F4A7C15 % (1 << 64)   # noqa: E731
    for batch in batches:
        texts = [f"name{t}".encode() + b"x" * pad for t, pad in batch]
        buf = np.frombuffer(b"".join(texts), np.uint8)
        starts = np.cumsum([0] + [len(t) for t in texts[:-1]]).astype(np.int64)
        lens = np.array([len(t) for t in texts], np.int64)
        hashes = np.array([hash_of(t * 64 + pad) for t, pad in batch], np.uint64)
        ids, known = cache.lookup(buf, hashes, starts, lens)
        held = {int(h) for h in cache.tkeys[cache.tentry >= 0].tolist()}
        for k, text in enumerate(texts):
            assert ids[k] == ref.get(text, -1)
            assert bool(known[k]) == (int(hashes[k]) in held)
        # what _cached_ids adds: each new text once, when its hash is not held yet
        fresh, seen = [], set()
        for k, text in enumerate(texts):
            if ids[k] < 0 and not known[k] and text not in seen and int(hashes[k]) not in seen:
                seen.update((text, int(hashes[k])))
                fresh.append(k)
        base = len(cache.texts)
        cache.add(buf, [int(hashes[k]) for k in fresh], [int(starts[k]) for k in fresh],
                  [int(lens[k]) for k in fresh], [texts[k].decode() for k in fresh])
        for m, k in enumerate(fresh):
            ref[texts[k]] = base + m
    ids, _ = cache.lookup(buf, hashes, starts, lens)
    assert [cache.texts[i].encode() if i >= 0 else None for i in ids.tolist()] == [
        t if t in ref else None for t in texts]


def test_name_cache_grows_and_keeps_every_entry():
    from kerneldiff.core.ingest.scan import NameCache

    cache = NameCache()
    texts = [f"kernel_{i}".encode() for i in range(5000)]
    buf = np.frombuffer(b"".join(texts), np.uint8)
    starts = np.cumsum([0] + [len(t) for t in texts[:-1]]).astype(np.int64)
    lens = np.array([len(t) for t in texts], np.int64)
    hashes = np.array([i % 700 for i in range(5000)], np.uint64)   # 7 texts per hash: long probe runs
    first = {}
    for i in range(5000):
        first.setdefault(i % 700, i)
    keep = sorted(first.values())          # one text per hash, as _cached_ids adds them
    for lo in range(0, len(keep), 97):
        part = keep[lo:lo + 97]
        cache.add(buf, [int(hashes[k]) for k in part], [int(starts[k]) for k in part],
                  [int(lens[k]) for k in part], [texts[k].decode() for k in part])
    assert len(cache.tkeys) == 2048 and int((cache.tentry >= 0).sum()) == 700
    ids, known = cache.lookup(buf, hashes, starts, lens)
    assert known.all()
    assert [cache.texts[e] if e >= 0 else None for e in ids.tolist()] == [
        texts[i].decode() if first[i % 700] == i else None for i in range(5000)]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(*[st.integers(-1, 2**40)] * 4), max_size=50))
def test_layer_spans_through_one_array_and_back(rows):
    from kerneldiff.core.model import LayerSpan, layers_array, layers_from_array

    spans = [LayerSpan(*r) for r in rows]
    back = layers_from_array(layers_array(spans))
    assert back == spans and all(type(getattr(s, f)) is int for s in back for f in ("step", "layer", "start", "end"))


def test_a_pickled_model_keeps_its_layers_and_readings(demo_models):
    """A forked child's model comes back pickled (its layer spans packed into one array)."""
    import pickle

    from kerneldiff.core.analysis.side_readings import prepare_side

    for model in demo_models.values():
        prepare_side(model)
        back = pickle.loads(pickle.dumps(model, protocol=5))
        assert "layers" not in back.__dict__          # spans made when first read, not on unpickling
        again = pickle.loads(pickle.dumps(back, protocol=5))   # pickled again before that: still whole
        assert back.layers == model.layers and len(back.layers) > 0 and again.layers == model.layers
        assert back.__dict__.keys() == model.__dict__.keys()
        assert back.__dict__["_memo"].keys() == model.__dict__["_memo"].keys()   # the readings came along
        with pytest.raises(AttributeError):
            back.no_such_reading
