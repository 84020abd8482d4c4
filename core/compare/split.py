"""A ledger row's gap split into *more launches* and *slower kernels*, like with like.

Each side's kernels of one row (one operation family) come as groups keyed (kernel name, launching
operator). They are matched level by level, and each level sees only what the earlier ones left:

1. the same kernel launched by the same operator (aten::copy_'s direct_copy against aten::copy_'s);
2. the same launching operator (across vendors, whose kernels are named differently: aten::copy_
   against aten::copy_), unless what is left includes kernels with no recorded operator;
3. the rest of the row as one group, where what is left on either side includes kernels with no
   recorded operator (V100's sgemm kernels launched from the backward pass, a recording without CPU
   operators): such a kernel could be any operator's, so the category is all there is to match on.
   Where every kernel left has a recorded operator, an operator that launches nothing of this row
   on the other side is work that side does not do, and counts wholly as launches: H100's cuBLAS
   workspace memsets under aten::mm are not slower MI300X fills under aten::fill_.

A matched group with counts ca, cb and mean durations ma, mb splits ca·ma − cb·mb as

    launches = (ca − cb) × the mean of the side with more launches   (the extra kernels' own mean)
    slower   = min(ca, cb) × (ma − mb)                                (the launches both sides make)

so the parts sum to the group's gap, neither exceeds the group's larger side in magnitude (nor,
summed, the row's), and swapping the sides negates both. The count_imbalance finding prices its
extra launches the same way (per operator, at the extra kernels' own mean), so the two agree on the
same kernels.
"""

from __future__ import annotations

from kerneldiff.core.compare.result import SplitPart as Part

PRICING = "extra launches priced at the extra kernels' own mean duration"
LEVELS = ("kernel", "operator", "category", "one side")


def parts_of(ca: float, ta: float, cb: float, tb: float) -> tuple[float, float]:
    """(more launches, slower kernels) of one matched group: counts and times on one basis."""
    if ca <= 0 or cb <= 0:
        return ta - tb, 0.0
    ma, mb = ta / ca, tb / cb
    if ca >= cb:
        return (ca - cb) * ma, cb * (ma - mb)
    return (ca - cb) * mb, ca * (ma - mb)


def split(ga: dict, gb: dict, na: float, nb: float, unit: float = 1.0) -> tuple[float, float, list[Part]]:
    """(more launches, slower kernels, the matched groups) of one row. `ga`, `gb`: (kernel name,
    launching operator) -> (launches, time) of each side over all its passes; counts are divided by
    `na` / `nb` and times by `na·unit` / `nb·unit` (the basis and the time unit)."""
    ga, gb = dict(ga), dict(gb)
    out: list[Part] = []
    levels = (("kernel", lambda k: k), ("operator", lambda k: k[1] or None), ("category", lambda k: ""))
    for level, keyf in levels:
        # operator-less kernels could be any operator's: matching the rest by operator would pair
        # one side's backward GEMMs with the other's forward ones; only the category is left
        opless = any(not k[1] for g in (ga, gb) for k in g)
        if (level == "operator" and opless) or (level == "category" and not opless):
            continue
        by_a: dict = {}
        by_b: dict = {}
        for side, groups in ((by_a, ga), (by_b, gb)):
            for key in groups:
                lk = keyf(key)
                if lk is not None:
                    side.setdefault(lk, []).append(key)
        for lk in sorted(by_a.keys() & by_b.keys()):   # sorted: sums in one order, the same digits every run
            ka, kb = by_a[lk], by_b[lk]
            out.append(_part(level, lk, [ga.pop(x) for x in ka], [gb.pop(x) for x in kb], na, nb, unit))
    # what is left runs on one side only (its operator launches nothing of this row on the other)
    for key in sorted(ga):
        out.append(_part("one side", key, [ga[key]], [], na, nb, unit))
    for key in sorted(gb):
        out.append(_part("one side", key, [], [gb[key]], na, nb, unit))
    return sum(p.count_gap_us for p in out), sum(p.speed_gap_us for p in out), out


def _part(level: str, lk, va: list, vb: list, na: float, nb: float, unit: float) -> Part:
    ca, ta = sum(c for c, _ in va) / na, sum(t for _, t in va) / na / unit
    cb, tb = sum(c for c, _ in vb) / nb, sum(t for _, t in vb) / nb / unit
    launches, slower = parts_of(ca, ta, cb, tb)
    if isinstance(lk, tuple):
        key, op = lk
    elif level == "operator":
        key, op = lk, lk
    else:
        key, op = "", ""
    return Part(level, key, op, ca, cb, ta, tb, launches, slower)


TOP_PARTS = 8


def top_parts(parts: list[Part], n: int = TOP_PARTS) -> list[Part]:
    """The `n` matched groups with the largest gap (launches and slower together), largest first."""
    return sorted(parts, key=lambda p: (-(abs(p.count_gap_us) + abs(p.speed_gap_us)), p.level, p.key, p.op))[:n]
