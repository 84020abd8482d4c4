"""Invariants of the module tree and the host hotspots: swapping the sides negates every gap,
a trace against itself has none, every kernel is in exactly one leaf (a node's time is its
children's, the root's the side's total), the launch-bound idle's parts sum to the ledger's row.
On generated traces (Hypothesis: shifted clocks, shuffled event order) and on every real pair."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import kineto_doc, real_trace, write_trace

PAIRS = [("mi300x_qwen1.5-0.5b_hf.json.gz", "h100_qwen1.5-0.5b_hf.json.gz"),
         ("h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz")]


def _nodes(mc) -> dict[str, object]:
    from kerneldiff.core.compare.module_compare import walk

    return {n.path: n for _, n in walk(mc.root)}


def _t(side) -> float:
    return side.time_us if side is not None else 0.0


def check_mirror(ab, ba) -> None:
    na, nb = _nodes(ab), _nodes(ba)
    assert na.keys() == nb.keys()
    swap = {"a only": "b only", "b only": "a only"}
    for path, x in na.items():
        y = nb[path]
        assert x.gap_us == pytest.approx(-y.gap_us, abs=1e-6)
        assert _t(x.a) == pytest.approx(_t(y.b)) and _t(x.b) == pytest.approx(_t(y.a))
        assert swap.get(x.match, x.match) == y.match
    assert ab.form == ba.form


def check_sums(mc, totals: tuple[float, float]) -> None:
    from kerneldiff.core.compare.module_compare import walk

    for side, total in zip("ab", totals):
        assert _t(getattr(mc.root, side)) == pytest.approx(total, rel=1e-9)
    for _, n in walk(mc.root):
        if n.children:
            for side in "ab":
                assert sum(_t(getattr(c, side)) for c in n.children) == pytest.approx(_t(getattr(n, side)), rel=1e-9,
                                                                                      abs=1e-6)


def check_self(mc) -> None:
    from kerneldiff.core.compare.module_compare import walk

    for _, n in walk(mc.root):
        assert n.gap_us == 0 and n.match in ("root", "path")


def _totals(a, b, phase="all"):
    from kerneldiff.core.analysis.cut_work import compared_mask
    from kerneldiff.core.compare.module_compare import side_tree

    out = []
    ta, tb = side_tree(a, phase), side_tree(b, phase)
    per_pass = ta.n_passes != tb.n_passes
    for m, t in ((a, ta), (b, tb)):
        out.append(float(m.kernels.dur[compared_mask(m, phase)].sum()) / (t.n_passes if per_pass else 1))
    return tuple(out)


# --- generated traces --------------------------------------------------------------------------------

def _doc(seed: int, passes: int, layers: int, shift: float, shuffle: bool, slow: float = 1.0):
    """A with_stack trace: passes of Model_0 > Layer_i > (Attn_i, Mlp_i), each leaf launching kernels."""
    rng = random.Random(seed)
    ev, corr, t = [], 1, 1000.0 + shift
    gpu = t + 5
    for p in range(passes):
        start = t
        body = []
        for l in range(layers):
            ls = t
            for cls in ("Attn", "Mlp"):
                cs = t
                for _ in range(rng.randint(1, 3)):
                    dur = rng.uniform(1, 20) * slow
                    body.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                                 "ts": t + 0.5, "dur": 3.0, "args": {"correlation": corr}})
                    gpu = max(gpu, t + 4) + rng.uniform(0, 3)
                    body.append({"ph": "X", "cat": "kernel", "name": f"k_{cls}_{rng.randint(0, 2)}", "pid": 0, "tid": 7,
                                 "ts": gpu, "dur": dur,
                                 "args": {"device": 0, "stream": 7, "correlation": corr}})
                    gpu += dur
                    corr += 1
                    t += 5
                body.append({"ph": "X", "cat": "python_function", "name": f"nn.Module: {cls}_{l}", "pid": 1, "tid": 1,
                             "ts": cs, "dur": t - cs + 0.25, "args": {}})
                t += 1
            body.append({"ph": "X", "cat": "python_function", "name": f"nn.Module: Layer_{l}", "pid": 1, "tid": 1,
                         "ts": ls - 0.25, "dur": t - ls + 0.75, "args": {}})
            t += 1
        ev.append({"ph": "X", "cat": "python_function", "name": "nn.Module: Model_0", "pid": 1, "tid": 1,
                   "ts": start - 0.5, "dur": t - start + 1.5, "args": {}})
        ev.extend(body)
        t += 20
    if shuffle:
        rng.shuffle(ev)
    return kineto_doc(ev)


def _load(tmp_path, name, doc):
    from kerneldiff.core.session import Session

    return Session([str(write_trace(tmp_path / name, doc))], use_cache=False).load(0)


def _figures(mc):
    return {p: (round(_t(n.a), 6), round(_t(n.b), 6), n.match) for p, n in _nodes(mc).items()}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), passes=st.integers(1, 3), layers=st.integers(1, 3),
       shift=st.floats(0, 1e6), slow=st.floats(0.5, 2.0))
def test_generated_invariants(tmp_path, seed, passes, layers, shift, slow):
    from kerneldiff.core.compare.host_compare import compare_host
    from kerneldiff.core.compare.module_compare import compare_modules

    a = _load(tmp_path, "a.json", _doc(seed, passes, layers, 0.0, False))
    b = _load(tmp_path, "b.json", _doc(seed + 1, passes, layers, 0.0, False, slow))
    moved = _load(tmp_path, "c.json", _doc(seed, passes, layers, shift, True))   # shifted clock, shuffled file
    ab, ba = compare_modules(a, b), compare_modules(b, a)
    check_mirror(ab, ba)
    check_sums(ab, _totals(a, b))
    check_self(compare_modules(a, a))
    assert ab.form == "path" and set(ab.matched) <= {"root", "path"}   # the same modules on both sides
    # the model's own figures do not depend on the clock's origin or the events' order in the file
    assert _figures(compare_modules(a, b)) == _figures(compare_modules(moved, b))
    leaves = [n for p, n in _nodes(ab).items() if not n.children]
    assert {n.name.split("_")[0] for n in leaves} <= {"Attn", "Mlp"}
    h, hm = compare_host(a, b), compare_host(b, a)
    assert [(r.name, r.gap_us) for r in h.idle_by_op] == [(r.name, -r.gap_us) for r in hm.idle_by_op]
    for side in "ab":
        idle = sum(getattr(r, f"{side}_us") for r in h.idle_by_op)
        assert idle == pytest.approx(h.idle_us[side], abs=1e-6)


# --- real pairs --------------------------------------------------------------------------------------

_loaded: dict = {}


def _session(pair):
    if pair not in _loaded:
        from kerneldiff.core.session import Session

        s = Session([str(real_trace(n)) for n in pair], use_cache=False)
        s.load_all()
        _loaded[pair] = s
    return _loaded[pair]


@pytest.mark.slow
@pytest.mark.parametrize("pair", PAIRS)
def test_real_pairs_mirror_self_and_sums(pair):
    from kerneldiff.core.compare.host_compare import compare_host
    from kerneldiff.core.compare.module_compare import compare_modules

    s = _session(pair)
    a, b = s.models
    ab, ba = compare_modules(a, b), compare_modules(b, a)
    check_mirror(ab, ba)
    check_sums(ab, _totals(a, b))
    check_self(compare_modules(a, a))
    cmp = s.compare()
    # the layer rows of the comparison are the tree's layers (their modules' sums)
    nodes = _nodes(ab)
    for row in cmp.layers:
        key = f"layer {row.layer}" if ab.form == "layer" else None
        if key is not None:
            assert _t(nodes[key].a) == pytest.approx(row.a.total_us, rel=1e-9)
            assert _t(nodes[key].b) == pytest.approx(row.b.total_us, rel=1e-9)
    # the launch-bound idle's parts sum to the ledger's row, each side
    h, hm = compare_host(a, b), compare_host(b, a)
    row = next(e for e in cmp.ledger if e.cause == "idle: launch-bound")
    assert sum(r.a_us for r in h.idle_by_op) == pytest.approx(row.a_us, abs=1e-6)
    assert sum(r.b_us for r in h.idle_by_op) == pytest.approx(row.b_us, abs=1e-6)
    assert {(r.name, r.kind, round(r.gap_us, 6)) for r in h.idle_by_op} == \
           {(r.name, r.kind, round(-r.gap_us, 6)) for r in hm.idle_by_op}
    assert [r.name for r in h.top["a"]] == [r.name for r in hm.top["b"]]
    hs = compare_host(a, a)
    assert all(r.gap_us == 0 for r in hs.idle_by_op + hs.top["a"])


@pytest.mark.slow
def test_qwen_pair_aligns_exactly_by_path():
    from kerneldiff.core.compare.module_compare import compare_modules

    s = _session(PAIRS[0])
    mc = compare_modules(*s.models)
    assert mc.form == "path" and set(mc.matched) == {"root", "path"}   # identical models, two vendors


@pytest.mark.slow
def test_eager_against_compiled_aligns_by_layer():
    from kerneldiff.core.compare.module_compare import compare_modules

    s = _session(PAIRS[1])
    mc = compare_modules(*s.models)
    assert mc.form == "layer"
    layers = [c for c in mc.root.children if c.name.startswith("layer ")]
    assert len(layers) == 16 and all(c.match == "layer" for c in layers)
    # compiled records no module calls inside its layers: its layer time is one unsplit leaf
    assert all([k.name for k in c.children if k.b is not None] == ["(unsplit)"] for c in layers)


def test_cli_json_has_modules_and_host(tmp_path):
    from kerneldiff.cli.main import main

    a = real_trace(PAIRS[0][0])
    b = real_trace(PAIRS[0][1])
    out = tmp_path / "c.json"
    assert main(["compare", str(a), str(b), "--modules", "--hotspots", "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert {"path", "a", "b", "gap_us", "children"} <= set(doc["modules"]["root"])
    assert doc["host"]["a"]["top"] and doc["host"]["b"]["top"] and doc["host"]["idle_by_op"]
    row = next(e for e in doc["ledger"] if e["cause"] == "idle: launch-bound")
    assert sum(p["a_us"] for p in row["parts"]) == pytest.approx(row["a_us"], abs=1e-6)
    assert sum(p["b_us"] for p in row["parts"]) == pytest.approx(row["b_us"], abs=1e-6)
    plain = tmp_path / "p.json"
    assert main(["compare", str(a), str(b), "--format", "json", "-o", str(plain)]) == 0
    assert "modules" not in json.loads(plain.read_text())   # computed only when asked


@pytest.mark.slow
def test_without_module_events_the_operator_tree_is_aligned(tmp_path):
    """No with_stack (the python_function events dropped): the tree is the operators', said so,
    aligned by path across the vendors, its sums and mirror as the module tree's."""
    import gzip

    from kerneldiff.core.compare.module_compare import compare_modules
    from kerneldiff.core.session import Session

    paths = []
    for name in PAIRS[0]:
        with gzip.open(real_trace(name)) as fh:
            doc = json.load(fh)
        doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "python_function"]
        paths.append(str(write_trace(tmp_path / name.replace(".gz", ""), doc)))
    s = Session(paths, use_cache=False)
    a, b = s.load_all()
    ab, ba = compare_modules(a, b), compare_modules(b, a)
    assert ab.sources == {"a": "operators", "b": "operators"}
    assert any("no module events" in n for n in ab.notes)
    assert all(c.name.startswith("aten::") or c.name == "outside" for c in ab.root.children)
    check_mirror(ab, ba)
    check_sums(ab, _totals(a, b))
    check_self(compare_modules(a, a))
    matched = sum(_t(c.a) for c in ab.root.children if c.match == "path")
    assert matched > 0.9 * _t(ab.root.a)    # the same operators on both vendors


def test_cli_refuses_modules_where_they_are_not_shown(capsys):
    from kerneldiff.cli.main import main
    from kerneldiff.core.demo import DEMO_A, DEMO_B

    for extra in (["--format", "csv"], ["--format", "json", "--table", "operations"], ["--format", "markdown"]):
        assert main(["compare", str(DEMO_A), str(DEMO_B), "--hotspots", *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--modules and --hotspots" in err


def test_cli_text_shows_modules_and_host(capsys):
    from kerneldiff.cli.main import main
    from kerneldiff.core.demo import DEMO_A, DEMO_B

    assert main(["compare", str(DEMO_A), str(DEMO_B), "--modules", "--hotspots", "--width", "100"]) == 0
    out = capsys.readouterr().out
    assert "Modules (by path" in out and "LlamaDecoderLayer_4" in out
    assert "GPU launch-bound idle by the host operation running" in out
