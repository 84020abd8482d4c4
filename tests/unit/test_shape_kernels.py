"""The kernels behind each GEMM and attention shape (ShapeSide.kernels): their durations, TFLOP/s and a
kernel row, checked against the raw events of a generated pair and of the real Qwen pair; and whether
a side recorded shapes at all (Side.shapes_recorded)."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict

import pytest

from conftest import real_trace
from kerneldiff.core.compare.throughput import TOP_KERNELS
from kerneldiff.core.session import KernelRef, Session
from shapes_pair import ROLES, write_shapes_pair


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    a, b = write_shapes_pair(tmp_path_factory.mktemp("shapes"))
    s = Session([a, b], use_cache=False)
    s.load_all()
    return s, s.compare("all"), (a, b)


def _raw(path) -> dict[tuple[str, str], list[float]]:
    """(operator, kernel name) -> the durations of that kernel under that operator, from the events."""
    ev = json.loads(path.read_text())["traceEvents"]
    ops = {e["args"]["External id"]: e["name"] for e in ev if e.get("cat") == "cpu_op"}
    out = defaultdict(list)
    for e in ev:
        if e.get("cat") in ("kernel", "gpu_memset"):
            out[(ops[e["args"]["External id"]], e["name"])].append(float(e["dur"]))
    return out


def test_shape_kernels_are_the_raw_launches(pair):
    """The addmm and the attention op each have one shape: their kernels are every launch of the op."""
    s, c, paths = pair
    qkv = next(g for g in c.gemm_shapes if g.op == "aten::addmm")
    att = c.attention_shapes[0]
    for i, (key, path) in enumerate(zip("ab", paths)):
        raw = _raw(path)
        for shape, op in ((qkv, "aten::addmm"), (att, "aten::_flash_attention_forward")):
            side = getattr(shape, key)
            names = {n for (o, n) in raw if o == op}
            assert {k.name for k in side.kernels} == names and side.kernel_names == len(names)
            for k in side.kernels:
                durs = raw[(op, k.name)]
                assert k.count == len(durs) and k.total_us == pytest.approx(sum(durs))
                assert k.median_us == pytest.approx(statistics.median(durs))
                assert (k.min_us, k.max_us) == (pytest.approx(min(durs)), pytest.approx(max(durs)))
                assert k.mean_us == pytest.approx(k.total_us / k.count)
                assert k.share == pytest.approx(k.total_us / getattr(c, key).gpu_time_us)
                # the row is one of these launches: that kernel, launched by this operator with its shape
                assert s.models[i].kernel_name(k.row) == k.name
                assert s.models[i].cpu_op_name(k.row) == op
                d = s.kernel_detail(KernelRef(i, k.row))
                assert json.loads(d.input_dims) == ROLES["qkv" if shape is qkv else "attn"][1]
            assert side.total_us == pytest.approx(sum(k.total_us for k in side.kernels))


def test_kernel_tflops_and_the_memset_that_does_no_math(pair):
    _s, c, _paths = pair
    qkv = next(g for g in c.gemm_shapes if g.op == "aten::addmm")
    flops = ROLES["qkv"][3]
    memset = next(k for k in qkv.b.kernels if k.name == "Memset (Device)")
    gemm = next(k for k in qkv.b.kernels if k.name != "Memset (Device)")
    assert memset.tflops is None                     # a workspace memset does none of the GEMM
    assert gemm.tflops == pytest.approx(gemm.count * flops / (gemm.total_us * 1e-6) / 1e12)
    assert gemm.tflops == pytest.approx(600, rel=1e-3)   # the rate the generator ran it at
    assert qkv.b.tflops < gemm.tflops                # the shape's rate counts the memset's time too
    assert [k.name for k in qkv.b.kernels] == [gemm.name, memset.name]   # longest first
    (only,) = qkv.a.kernels
    assert only.tflops == pytest.approx(qkv.a.tflops) and qkv.a.kernel_names == 1
    # split-K: the GEMM and its reduction share the shape's math by time, each at the shape's rate
    down = next(g for g in c.gemm_shapes if (g.m, g.n, g.k) == (4096, 1024, 2816))
    assert len(down.b.kernels) == down.b.kernel_names == 2
    assert sum(k.tflops * k.total_us for k in down.b.kernels) == pytest.approx(down.b.tflops * down.b.total_us)
    att = c.attention_shapes[0]
    assert att.a.kernels[0].name == "attn_fwd" and att.a.kernels[0].tflops == pytest.approx(95, rel=1e-3)


def test_shapes_recorded_per_side(pair, tmp_path):
    _s, c, _paths = pair
    assert c.a.shapes_recorded is True and c.b.shapes_recorded is True
    a, b = write_shapes_pair(tmp_path, record_shapes=False)
    s = Session([a, b], use_cache=False)
    s.load_all()
    bare = s.compare("all")
    assert bare.a.shapes_recorded is False and bare.b.shapes_recorded is False
    assert bare.gemm_shapes == [] and bare.attention_shapes == []
    d = bare.to_dict()
    assert d["a"]["shapes_recorded"] is False


@pytest.mark.real
def test_qwen_pair_shape_kernels_add_up_and_point_at_their_shape():
    a, b = real_trace("mi300x_qwen1.5-0.5b_hf.json.gz"), real_trace("h100_qwen1.5-0.5b_hf.json.gz")
    s = Session([a, b], use_cache=False)
    s.load_all()
    c = s.compare("all")
    assert c.gemm_shapes and c.attention_shapes
    for shape in c.gemm_shapes + c.attention_shapes:
        for i, key in enumerate("ab"):
            side = getattr(shape, key)
            assert len(side.kernels) == min(side.kernel_names, TOP_KERNELS)
            if side.kernel_names <= TOP_KERNELS:
                assert sum(k.total_us for k in side.kernels) == pytest.approx(side.total_us)
                assert sum(k.count for k in side.kernels) >= side.calls
            for k in side.kernels:
                d = s.kernel_detail(KernelRef(i, k.row))
                assert d.name == k.name and d.input_dims and d.input_types
                if hasattr(shape, "m"):   # the launch's operator is the shape's, with its m and k
                    assert s.models[i].cpu_op_name(k.row) == shape.op
                    dims = json.loads(d.input_dims)
                    first = dims[1] if shape.op == "aten::addmm" else dims[0]
                    assert first[-2:] == [shape.m, shape.k]


@pytest.mark.slow
def test_shapes_kernels_grouped_at_once_equal_one_shape_at_a_time(classifier):
    """`_Side.kernels` groups every shape's kernels at once, by (shape, kernel name): each shape's
    list equals the one grouping it alone gives, figure for figure (real H100 Llama trace, whose
    shapes share kernel names; and overlapping, random sets of positions)."""
    import numpy as np

    from kerneldiff.core.compare.engine import _View
    from kerneldiff.core.compare.throughput import _Side
    from kerneldiff.core.orchestration import load

    m = load(str(real_trace("h100_llama_eager_sdpa.json.gz")), classifier=classifier, use_cache=False)
    side = _Side(_View("a", m, "all", classifier), None)
    shapes = [p for _, _, p in side.shape_positions("gemm") + side.shape_positions("attention")]
    rng = np.random.default_rng(3)
    shapes += [np.sort(rng.choice(len(side.kw), int(rng.integers(1, 400)), replace=False)) for _ in range(20)]
    together = side.kernels(shapes)
    assert together == [_one_shape(side, p) for p in shapes]
    assert any(len(k) > 1 for k in together)


def _one_shape(side, pos):
    """The kernels of one shape, grouped on their own (the form `_Side.kernels` had per shape)."""
    import numpy as np

    from kerneldiff.core.analysis.trace_totals import _groups
    from kerneldiff.core.compare.throughput import _DURATIONS, KernelShare
    from kerneldiff.core.numbers import ratio

    names = side.v.name[pos]
    uniq, stats, first = _groups(names, side.v.dur[pos], side.v.total)
    inv = np.searchsorted(uniq, names)
    flops = np.bincount(inv, weights=side.flops[pos], minlength=len(uniq))
    math = np.bincount(inv, weights=side.share[pos], minlength=len(uniq)) > 0
    tot = np.array([s.total_us for s in stats])
    out = []
    for i in np.lexsort((uniq, -tot))[:TOP_KERNELS].tolist():
        s = stats[i]
        fps = ratio(float(flops[i]), s.total_us * 1e-6) if math[i] else None
        out.append(KernelShare(side.m.strings[int(uniq[i])], tflops=fps / 1e12 if fps is not None else None,
                               row=int(side.v.rows[pos[first[i]]]), **{f: getattr(s, f) for f in _DURATIONS}))
    return out
