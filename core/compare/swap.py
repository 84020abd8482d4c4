"""The comparison's pieces with sides A and B swapped, for analyses computed in a canonical side order.

An analysis that reads both sides can let the argument order decide a tie (which of two equal
candidates is taken first). Computed in an order fixed by the sides' contents (`in_order`) and
mirrored back, its result cannot depend on which trace is A: `compare B A` is `compare A B` with
the sides swapped, by construction.
"""

from __future__ import annotations

from dataclasses import replace

from kerneldiff.core.compare.op_fusion import group_note
from kerneldiff.core.compare.result import FusionFinding, KernelPair, LayerAlignment, PairGroup

FLIP = {"a": "b", "b": "a"}


def in_order(va, vb) -> bool:
    """Whether sides `va`, `vb` are in canonical order: by kernel count and kernel time, and only
    when both are equal (a trace against itself, in practice) by the kernels' names and durations
    in order, which costs a list of every name."""
    ka, kb = (len(va.rows), float(va.total)), (len(vb.rows), float(vb.total))
    if ka != kb:
        return ka < kb
    return _full_key(va) <= _full_key(vb)


def _full_key(v) -> tuple:
    strings = v.m.strings
    return ([strings[int(i)] for i in v.name.tolist()], v.dur.tolist())


def pair(p: KernelPair) -> KernelPair:
    # a copy with the sides' fields exchanged: what dataclasses.replace gives, without its per-call
    # field walk, and what copy.copy gives (a new instance, its fields the same objects) without the
    # reduce protocol: a layer's every pair is mirrored, ~1,400 pairs on the dense pair
    q = object.__new__(KernelPair)
    d = q.__dict__
    d.update(p.__dict__)
    d["a_name"], d["b_name"], d["a_category"], d["b_category"] = p.b_name, p.a_name, p.b_category, p.a_category
    d["a"], d["b"], d["ratio"], d["gap_us"] = p.b, p.a, (1.0 / p.ratio) if p.ratio else None, -p.gap_us
    d["a_row"], d["b_row"], d["a_rule"], d["b_rule"] = p.b_row, p.a_row, p.b_rule, p.a_rule
    return q


def group(g: PairGroup) -> PairGroup:
    return replace(g, fused_side=FLIP[g.fused_side], a_indices=list(g.b_indices), b_indices=list(g.a_indices),
                   note=group_note(FLIP[g.fused_side], len(g.fused_positions), len(g.component_positions)),
                   positions=list(g.positions), fused_positions=list(g.fused_positions),
                   component_positions=list(g.component_positions))


def alignment(al: LayerAlignment) -> LayerAlignment:
    return replace(al, pairs=[pair(p) for p in al.pairs], a_kernels_per_pass=al.b_kernels_per_pass,
                   b_kernels_per_pass=al.a_kernels_per_pass, a_passes=al.b_passes, b_passes=al.a_passes,
                   groups=[group(g) for g in al.groups])


def finding(f: FusionFinding) -> FusionFinding:
    """The finding with its sides swapped (in place; returned for convenience)."""
    f.fused_side, f.component_side = FLIP[f.fused_side], FLIP[f.component_side]
    return f
