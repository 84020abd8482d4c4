"""Fused operations in the gap ledger: one operation the two sides book under different rows,
booked together in a row of its own. Compiled Llama runs RoPE as 4 Inductor kernels a layer (the
RoPE category) where eager runs 11 (Elementwise and Copy/Memory): by category alone the ledger reads
"RoPE −10.08 ms, more launches" beside "Elementwise +30.40 ms", two halves of one operation that no
row compares. Where an op-level fusion finding holds kernels, both sides' kernels of it (the same
kernels, in the same passes, the finding measured) leave their category rows for one row named after
the operation (`RoPE (fused op)`), split like any other row (`core.compare.split`); the category rows
keep what is left. Kernel time only moves between rows, so the ledger still sums to the wall gap."""

from __future__ import annotations

from collections import Counter

import numpy as np

from kerneldiff.core.compare.result import FromRows, FusionFinding, LedgerEntry

SIDE = {"a": "A", "b": "B"}
SUFFIX = " (fused op)"


def _counts(group) -> Counter:
    return Counter(k.category for k in group)


def describe(f: FusionFinding, family, number: int | None = None, per_layer: dict | None = None) -> str:
    """"RoPE: A 11 kernels a layer (Elementwise 8, Copy/Memory 3), B 4 kernels a layer (RoPE 4)
    fused; …(fusion finding #2: op_fusion RoPE…)" — `family` maps a category to its ledger row,
    `number` is the finding's place in the fusions list (1 first), as the Fusion tab numbers it.
    `per_layer`: {"a"/"b": {row: kernels a layer}} as measured over every layer of every pass the
    kernels ran in (else the finding's most common group shape)."""
    if per_layer is None:
        n = f.occurrences_per_pass / max(len(f.layers), 1) if f.layers else 1
        per_layer = {}
        for s, group in ((f.component_side, f.component_group), (f.fused_side, f.fused_group)):
            rows = Counter()
            for cat, k in _counts(group).items():
                rows[family(cat)] += k * n
            per_layer[s] = dict(rows)

    def side(rows: dict) -> str:
        n = sum(rows.values())
        where = ", ".join(f"{r} {_n(v)}" for r, v in sorted(rows.items(), key=lambda x: (-x[1], x[0])))
        return f"{_n(n)} kernel{'s' if round(n, 1) != 1 else ''} a layer ({where})"

    which = f"fusion finding #{number}: " if number else "fusion finding: "
    where = f" in {f.module}" if f.module else ""
    c, fs = f.component_side, f.fused_side
    return (f"{f.fused_category}: {SIDE[c]} {side(per_layer[c])}, {SIDE[fs]} {side(per_layer[fs])} fused; "
            f"one operation under different rows ({which}{f.kind} {f.fused_category}{where}, measured saving "
            f"{f.measured_saving_us:,.1f} µs over {f.passes} pass{'es' if f.passes != 1 else ''}"
            f"{' of ' + f.phase if f.phase else ''})")


def _n(v: float) -> str:
    """A kernel count a layer: whole, or to one decimal where layers differ."""
    return f"{v:.0f}" if abs(v - round(v)) < 0.05 else f"{v:.1f}"


def link(ledger: list[LedgerEntry], fusions: list[FusionFinding], family, skip=()) -> None:
    """Give every kernels row that holds part of an op-level fusion (either side's kernels of it)
    that fusion's description in `fusions` (where its kernels could not be booked in a row of their
    own: `regroup`)."""
    rows = {e.cause: e for e in ledger if e.kind == "kernels"}
    for i, f in enumerate(fusions):
        if i in skip or f.kind != "op_fusion" or not (f.component_group or f.fused_group):
            continue
        text = describe(f, family, i + 1)
        cats = {family(k.category) for k in f.component_group} | {family(k.category) for k in f.fused_group}
        for c in sorted(cats):
            if c in rows and text not in rows[c].fusions:
                rows[c].fusions.append(text)


def _names(fusions: list[FusionFinding], used: list[int]) -> dict[int, str]:
    """Each fused operation's row name: its category, then its module, then its number where two
    findings would share one (the findings' order does not depend on which side is A)."""
    out: dict[int, str] = {}
    for i in used:
        f = fusions[i]
        for name in (f.fused_category + SUFFIX, f"{f.fused_category} in {f.module or '?'}{SUFFIX}",
                     f"{f.fused_category} #{i + 1}{SUFFIX}"):
            if name not in out.values():
                out[i] = name
                break
    return out


def regroup(ledger: list[LedgerEntry], fusions: list[FusionFinding], alignments, va, vb, per_pass: bool,
            family) -> list[LedgerEntry]:
    """The ledger with each op-level fusion's kernels in one row of their own (largest |gap| first).

    `alignments` carry the groups that hold each finding's kernels (`op_fusion.finding_of_kernels`).
    Only kernels the ledger counts are moved (its window; not communication kernels, which the
    exposed-communication row accounts for). Findings whose kernels cannot be moved are named on
    the rows that hold them instead (`link`)."""
    from kerneldiff.core.analysis.timeline import timeline
    from kerneldiff.core.compare import ledger as gap_ledger
    from kerneldiff.core.compare.op_fusion import finding_of_kernels

    rows = {e.cause for e in ledger if e.kind == "kernels"}
    if not rows or not any(f.fused_group or f.component_group for f in fusions):
        return ledger
    ta = timeline(va.m, va.phase, keep_cut=False)
    tb = timeline(vb.m, vb.phase, keep_cut=False)
    found = finding_of_kernels({"a": va, "b": vb}, alignments)
    sel = dict(zip("ab", gap_ledger.window(va, vb, ta, tb)))
    views = {"a": va, "b": vb}
    for s, v in views.items():
        row_of = np.asarray([g in rows for g in v.groups], dtype=bool)
        keep = row_of[v.gcat] & (found[s] >= 0)
        if sel[s] is not None:
            keep &= sel[s]
        found[s] = np.where(keep, found[s], -1)
    used = sorted(set(np.unique(found["a"][found["a"] >= 0]).tolist())
                  | set(np.unique(found["b"][found["b"] >= 0]).tolist()))
    # both sides' kernels of it, or the operation is not compared in one row
    used = [i for i in used if (found["a"] == i).any() and (found["b"] == i).any()]
    if not used:
        link(ledger, fusions, family)
        return ledger
    for s in ("a", "b"):
        found[s] = np.where(np.isin(found[s], used), found[s], -1)
    na, nb = (va.passes, vb.passes) if per_pass else (1, 1)

    def within(s: str, mask: np.ndarray) -> np.ndarray:
        return mask if sel[s] is None else mask & sel[s]

    left = gap_ledger._operations(va, vb, na, nb, within("a", found["a"] < 0), within("b", found["b"] < 0))
    left_by = {e.cause: e for e in left}
    names = _names(fusions, used)
    moved_from: dict[str, list[str]] = {}
    ops: list[LedgerEntry] = []
    for i in used:
        e = _operation_row(names[i], i, fusions[i], va, vb, na, nb, within("a", found["a"] == i),
                           within("b", found["b"] == i), family)
        for r in sorted(set(e.from_rows.a) | set(e.from_rows.b)):
            moved_from.setdefault(r, []).append(e.cause)
        ops.append(e)
    out: list[LedgerEntry] = []
    for e in ledger:
        if e.kind != "kernels" or e.cause not in moved_from:
            out.append(e)
            continue
        n = left_by.get(e.cause)
        if n is None:        # every kernel of the row is a fused operation's
            continue
        names_ = moved_from[e.cause]
        n.detail = (f"without the kernels of {' and '.join(names_)}: "
                    + ("an operation" if len(names_) == 1 else "operations")
                    + " the two sides book under different rows, in a row of "
                    + ("its" if len(names_) == 1 else "their") + " own")
        n.fusions = [x.fusions[0] for x in ops if x.cause in moved_from[e.cause]]
        out.append(n)
    out += ops
    link(out, fusions, family, skip=set(used))
    out = [e for e in out if e.a_us or e.b_us]
    out.sort(key=lambda e: (-abs(e.gap_us), e.cause))
    return out


def _operation_row(cause: str, index: int, f: FusionFinding, va, vb, na: float, nb: float, sel_a, sel_b,
                   family) -> LedgerEntry:
    """One fused operation's row: both sides' kernels of it, split like any row (by kernel and
    launching operator, then operator, then as one group)."""
    from kerneldiff.core.compare.ledger import _NS, _groups
    from kerneldiff.core.compare.split import PRICING, split, top_parts

    sides = {}
    from_rows = {}
    per_layer = {}
    for s, v, m, n in (("a", va, sel_a, na), ("b", vb, sel_b, nb)):
        g: dict = {}
        rows: dict = {}
        counts: dict = {}
        for (fam, name, op), (c, t) in _groups(v, m).items():
            c0, t0 = g.get((name, op), (0, 0))
            g[(name, op)] = (c0 + c, t0 + t)
            rows[fam] = rows.get(fam, 0.0) + t / n / _NS
            counts[fam] = counts.get(fam, 0) + c
        # "a layer": one layer in one pass, every one the kernels ran in
        k = v.m.kernels
        cells = len(set(zip(v._take(k.step)[m].tolist(), v._take(k.layer)[m].tolist()))) or 1
        sides[s], from_rows[s], per_layer[s] = g, rows, {r: c / cells for r, c in counts.items()}
    ta = sum(t for _, t in sides["a"].values()) / na / _NS
    tb = sum(t for _, t in sides["b"].values()) / nb / _NS
    count, speed, parts = split(sides["a"], sides["b"], na, nb, _NS)
    text = describe(f, family, index + 1, per_layer)
    came = "; ".join(f"{SIDE[s]} from " + ", ".join(f"{r} {_us(u)}" for r, u in
                                                  sorted(from_rows[s].items(), key=lambda x: (-x[1], x[0])))
                     for s in ("a", "b"))
    return LedgerEntry(cause=cause, a_us=ta, b_us=tb, gap_us=ta - tb, kind="kernels", count_gap_us=count,
                       speed_gap_us=speed,
                       a_launches=sum(c for c, _ in sides["a"].values()) / na,
                       b_launches=sum(c for c, _ in sides["b"].values()) / nb,
                       detail=f"{text.split(': ', 1)[1]}; both sides' kernels of it, in the passes the finding "
                              f"measured, taken out of their rows ({came})",
                       split_basis=PRICING, split_parts=top_parts(parts), fusions=[text], finding=index,
                       from_rows=FromRows(a=from_rows["a"], b=from_rows["b"]))


def _us(v: float) -> str:
    return f"{v:,.1f} µs"
