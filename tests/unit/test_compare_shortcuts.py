"""The comparison's shortcuts give what the long way gives: the ledger's groupings with the row keys
taken once per view, the fusion findings' per-kernel groupings done with numpy, and a layer's fusion
groups taken from a layer aligned as one before. Each is checked against a plain loop over the
kernels (or the groups computed afresh) on the demo pair and, where present, the real eager and
compiled Llama traces."""

from __future__ import annotations

import numpy as np

from conftest import real_trace
from kerneldiff.core.compare import engine, fusion, ledger, op_fusion

EAGER, COMPILED = "h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz"


def _views(a, b, classifier):
    return engine._View("a", a, "all", classifier), engine._View("b", b, "all", classifier)


def _real_pair():
    from kerneldiff.core.session import Session

    s = Session([str(real_trace(EAGER)), str(real_trace(COMPILED))], use_cache=False)
    s.load_all()
    return s.models[0], s.models[1], s.classifier


def _looped_groups(v, sel):
    """(family, name, operator) -> (launches, ns) by a loop over the kernels, in the order of the
    family's index, then the name's and the operator's ids."""
    m = v.m
    op = v._take(m.kernels.cpu_op)
    out: dict = {}
    for i in (range(len(v.rows)) if sel is None else np.flatnonzero(sel).tolist()):
        o = int(op[i])
        oid = int(m.cpu_ops.name[o]) if o >= 0 else -1
        key = (int(v.gcat[i]), int(v.name[i]), oid)
        c, t = out.get(key, (0, 0))
        out[key] = (c + 1, t + int(round(max(float(v.dur[i]), 0.0) * 1000)))
    return {(v.groups[g], m.strings[n], m.strings[o] if o >= 0 else ""): x for (g, n, o), x in sorted(out.items())}


def _check_groups(a, b, classifier):
    va, vb = _views(a, b, classifier)
    rng = np.random.default_rng(7)
    for v in (va, vb):
        for sel in (None, rng.random(len(v.rows)) < 0.3, np.zeros(len(v.rows), bool), v.gcat == v.gcat[0]):
            got = ledger._groups(v, sel)
            want = _looped_groups(v, sel)
            assert list(got.items()) == list(want.items())


def test_ledger_groups_match_a_loop_over_the_kernels(demo_models, classifier):
    _check_groups(*demo_models.values(), classifier)


def test_ledger_groups_match_a_loop_over_the_kernels_real():
    _check_groups(*_real_pair())


def _looped_extra(vm, pm, vl, pl):
    """_extra_launches' (op, launches, time, kernels) by dicts per kernel (the way it was written)."""
    from kerneldiff.core.compare.split import split

    def keys(v, pos):
        ops = v._take(v.m.kernels.cpu_op)[pos]
        return [v.m.strings[int(v.m.cpu_ops.name[o])] if o >= 0 else "" for o in ops.tolist()]

    km, kl = keys(vm, pm), keys(vl, pl)
    nm = [vm.m.strings[int(i)] for i in vm.name[pm].tolist()]
    nl = [vl.m.strings[int(i)] for i in vl.name[pl].tolist()]
    gm: dict = {}
    gl: dict = {}
    for g, names, ops, d in ((gm, nm, km, vm.dur[pm]), (gl, nl, kl, vl.dur[pl])):
        for n, o, x in zip(names, ops, d.tolist()):
            c, t = g.get((n, o), (0, 0))
            g[(n, o)] = (c + 1, t + int(round(max(x, 0.0) * 1000)))
    _, _, parts = split(gm, gl, vm.passes, vl.passes, 1000.0)
    by_kernel = {(p.key, p.op) for p in parts if p.level == "kernel"}
    out = []
    for p in parts:
        if p.count_gap_us <= 0:
            continue
        if p.level in ("kernel", "one side"):
            sel = [i for i, k in enumerate(zip(nm, km)) if k == (p.key, p.op)]
        elif p.level == "operator":
            sel = [i for i, k in enumerate(zip(nm, km)) if k[1] == p.op and k not in by_kernel]
        else:
            sel = [i for i, k in enumerate(zip(nm, km)) if k not in by_kernel]
        n = int(round((p.a_launches - p.b_launches) * vm.passes)) if p.b_launches else len(sel)
        out.append((p.op if p.level != "category" else "the rest of the category", n, p.count_gap_us * vm.passes,
                    pm[np.asarray(sel, dtype=np.int64)].tolist()))
    out.sort(key=lambda e: (-e[2], e[0]))
    return out


def _looped_speed(vm, pm, vl, pl):
    """_speed_text's (operator, time on the less side, time on the more side) by a loop over the kernels."""
    def times(v, pos):
        t: dict = {}
        c: dict = {}
        for o, d in zip(v._take(v.m.kernels.cpu_op)[pos].tolist(), v.dur[pos].tolist()):
            k = v.m.strings[int(v.m.cpu_ops.name[o])] if o >= 0 else ""
            t[k] = t.get(k, 0.0) + d / v.passes
            c[k] = c.get(k, 0) + 1
        return t, c

    (tm, cm), (tl, cl) = times(vm, pm), times(vl, pl)
    same = [k for k in tm.keys() & tl.keys() if k and cm[k] / vm.passes == cl[k] / vl.passes]
    return max(same, key=lambda x: (abs(tm[x] - tl[x]), x)) if same else None


def _check_fusion_groupings(a, b, classifier):
    va, vb = _views(a, b, classifier)
    rng = np.random.default_rng(3)
    checked = 0
    for vm, vl in ((va, vb), (vb, va)):
        for g in sorted(set(vm.groups) & set(vl.groups)):
            pm, pl = vm.positions(g), vl.positions(g)
            if not len(pm) or not len(pl):
                continue
            for pm_ in (pm, np.sort(rng.choice(pm, max(1, len(pm) // 2), replace=False))):
                got = [(e.op, e.count, e.time_us, e.positions.tolist()) for e in fusion._extra_launches(vm, pm_, vl, pl)]
                assert got == _looped_extra(vm, pm_, vl, pl)
                op = _looped_speed(vm, pm_, vl, pl)
                text = fusion._speed_text(vm, pm_, vl, pl, "M", "L")
                assert (text == "") == (op is None) and (op is None or text.startswith(f" ({op}: "))
                checked += 1
    assert checked


def test_fusion_groupings_match_a_loop_over_the_kernels(demo_models, classifier):
    _check_fusion_groupings(*demo_models.values(), classifier)


def test_fusion_groupings_match_a_loop_over_the_kernels_real():
    _check_fusion_groupings(*_real_pair())


def _shape(groups):
    return [(g.fused_side, [(k.side, k.pos) for k in g.fused], [(k.side, k.pos) for k in g.components], g.attention)
            for g in groups]


def _check_layer_memo(monkeypatch, a, b, classifier) -> tuple[int, int]:
    """Every layer's groups, taken from the memo or not, are those computed afresh; (layers, groupings)."""
    real = op_fusion.layer_groups
    calls = [0]
    grouped = [0]
    inner = op_fusion._layer_groups

    def counted(*args):
        grouped[0] += 1
        return inner(*args)

    def both(al, kops, classifier_, modpath=None, memo=None):
        got = real(al, kops, classifier_, modpath, memo)
        monkeypatch.setattr(op_fusion, "_layer_groups", inner)
        fresh = real(al, kops, classifier_, modpath)
        monkeypatch.setattr(op_fusion, "_layer_groups", counted)
        assert _shape(got) == _shape(fresh)
        calls[0] += memo is not None
        return got

    monkeypatch.setattr(op_fusion, "layer_groups", both)
    monkeypatch.setattr(op_fusion, "_layer_groups", counted)
    engine.compare(a, b, classifier=classifier)
    engine.compare(b, a, classifier=classifier)
    return calls[0], grouped[0]


def test_layer_groups_from_a_layer_aligned_alike_are_those_computed_afresh(monkeypatch, demo_models, classifier):
    layers, grouped = _check_layer_memo(monkeypatch, *demo_models.values(), classifier)
    assert layers and grouped <= layers


def test_layer_groups_from_a_layer_aligned_alike_are_those_computed_afresh_real(monkeypatch):
    layers, grouped = _check_layer_memo(monkeypatch, *_real_pair())
    assert grouped < layers     # the 16 Llama layers align alike: the memo answers most of them
