"""The gap ledger's rows linked to the op-level fusions found: one operation the two sides book under
different rows. Compiled Llama runs RoPE as 4 Inductor kernels a layer (its own row, RoPE) where eager
runs 11 (booked under Elementwise and Copy/Memory): the RoPE row's "more launches" and part of the
Elementwise row's are the same operation fused, not launches one side added. Each such row names
the operation, how each side runs it and the finding that measured it."""

from __future__ import annotations

from collections import Counter

from kerneldiff.core.compare.result import FusionFinding, LedgerEntry

SIDE = {"a": "A", "b": "B"}


def _counts(group) -> Counter:
    return Counter(k.category for k in group)


def describe(f: FusionFinding, family) -> str:
    """"RoPE: A 11 kernels a layer (Elementwise 9, Copy/Memory 2), B 4 fused (RoPE); fusion finding
    op_fusion RoPE" — `family` maps a category to its ledger row."""
    comp, fused = _counts(f.component_group), _counts(f.fused_group)
    per_layer = f.occurrences_per_pass / max(len(f.layers), 1) if f.layers else 1

    def side(c: Counter) -> str:
        n = sum(c.values()) * per_layer
        rows = Counter()
        for cat, k in c.items():
            rows[family(cat)] += k * per_layer
        where = ", ".join(f"{r} {v:g}" for r, v in sorted(rows.items(), key=lambda x: (-x[1], x[0])))
        return f"{n:g} kernel{'s' if n != 1 else ''} a layer ({where})"

    return (f"{f.fused_category}: {SIDE[f.component_side]} {side(comp)}, {SIDE[f.fused_side]} {side(fused)} fused; "
            f"one operation under different rows (fusion finding: {f.kind} {f.fused_category}, measured saving "
            f"{f.measured_saving_us:,.1f} µs over {f.passes} pass{'es' if f.passes != 1 else ''}"
            f"{' of ' + f.phase if f.phase else ''})")


def link(ledger: list[LedgerEntry], fusions: list[FusionFinding], family) -> None:
    """Give every kernels row that holds part of an op-level fusion (either side's kernels of it)
    that fusion's description in `fusions`."""
    rows = {e.cause: e for e in ledger if e.kind == "kernels"}
    for f in fusions:
        if f.kind != "op_fusion" or not (f.component_group or f.fused_group):
            continue
        text = describe(f, family)
        cats = {family(k.category) for k in f.component_group} | {family(k.category) for k in f.fused_group}
        for c in sorted(cats):
            if c in rows and text not in rows[c].fusions:
                rows[c].fusions.append(text)
