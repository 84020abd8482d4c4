"""Fusion differences between two traces, each with evidence, confidence, a measured and an estimated saving.

First the operations (`op_fusion.py`): inside the aligned layers, which operations one side runs in
one kernel (or a few) and the other in several — RMSNorm as one Inductor reduction against pow,
mean, add, rsqrt, mul; SiLU·mul; the rotary embedding; an attention kernel against batched GEMM +
softmax. Those findings claim their kernels; then four category-level detectors read what is left,
from strongest evidence to weakest:
1. fused_category  — a fused category (registry `components`) runs on one side only, while the
   other side runs its components back to back.
2. sequence        — a category that only one side runs, and that (almost) always follows the
   same category both sides run, whose kernels on the other side are named for that work too
   (e.g. `add_rmsnorm_quant` where the other side runs rmsnorm then quant): folded in.
3. count_imbalance — the same category launched ≥ 1.5× as often per forward pass on one side
   (launch_count when the extra launches are all memsets: a launch-count difference, not a fusion).
4. missing_kernel  — an aligned position one side fills in most layers and the other never does,
   not explained by 1–3.
Categories explained by a stronger finding are not reported again by a weaker detector.

Savings: `measured_saving_us` is the component kernels' time minus the fused kernels' time (for
count_imbalance the category's time on each side, for missing_kernel the missing kernel's time).
The benefit model's `estimated_saving` is capped at the finding's measured component time, and the
estimates of the findings whose components run on one side never add up to more than that side's
GPU time.
"""

from __future__ import annotations

import copy
from collections import Counter
from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use (lazy_dataclass.py)
from typing import Any

import numpy as np

from kerneldiff.core.compare import swap
from kerneldiff.core.compare.result import FusionFinding, LayerAlignment
from kerneldiff.core.analysis.flops import kernels_bytes
from kerneldiff.core.analysis.side_readings import launch_costs
from kerneldiff.core.analysis.timeline import timeline
from kerneldiff.core.compare.fusion_model import estimate, params_for, with_measured_dispatch
from kerneldiff.core.compare.op_fusion import cap_saving, find_op_fusions
from kerneldiff.core.compare.split import split
from kerneldiff.core.model import KIND_MEMSET
from kerneldiff.core.names.display import short_name

IMBALANCE_RATIO = 1.5       # the threshold; below it launch-count noise dominates
SEQUENCE_CONSISTENCY = 0.7  # share of a unique kernel's occurrences that must follow one category
CHAIN_WINDOW = 3            # components of one fused group sit within this many launches
MISSING_LAYER_SHARE = 0.5   # a gap must recur in at least half the layers to be a finding
GENERIC = {"Other"}
MEMORY_BOUND_ROLES = {"norm", "elementwise", "memory", "activation", "reduce", "other"}


def _side_seq(v) -> tuple[np.ndarray, np.ndarray]:
    """(positions, category-family ids) of one side's kernels, time order, main device only."""
    k = v.m.kernels
    dev = k.device[v.rows]
    if len(dev) and dev.min() == dev.max():  # one device (the usual case): no group-by needed
        pos = np.arange(len(dev))
    elif len(dev):
        vals, inv = np.unique(dev, return_inverse=True)
        main = vals[np.argmax(np.bincount(inv, weights=v.dur))]
        pos = np.nonzero(dev == main)[0]
    else:
        pos = np.array([], dtype=np.int64)
    return pos, v.gcat[pos]


def _counts(v) -> Counter:
    n = np.bincount(v.gcat, minlength=len(v.groups))  # gcat ids are small and >= 0
    return Counter({v.groups[int(i)]: int(n[i]) for i in np.flatnonzero(n)})


def _chains(seq: np.ndarray, comps: list[int]) -> np.ndarray:
    """Occurrences of the components in order, each within CHAIN_WINDOW launches of the previous
    one: an array (occurrences × len(comps)) of indices into seq."""
    cur = np.nonzero(seq == comps[0])[0]
    cols = [cur]
    for c in comps[1:]:
        nxt = np.full(len(cur), -1, dtype=np.int64)
        for d in range(1, CHAIN_WINDOW + 1):
            q = cur + d
            ok = (nxt < 0) & (q < len(seq))
            hit = np.zeros(len(cur), dtype=bool)
            hit[ok] = seq[q[ok]] == c
            nxt[hit] = q[hit]
        keep = nxt >= 0
        cols = [col[keep] for col in cols] + [nxt[keep]]
        cur = nxt[keep]
    return np.stack(cols, axis=1) if len(cols[0]) else np.zeros((0, len(comps)), dtype=np.int64)


def _memory_bound_us(v, pos: np.ndarray, classifier) -> float:
    if len(pos) == 0:
        return 0.0
    mb = np.array([classifier.role(g) in MEMORY_BOUND_ROLES for g in v.groups])
    return float(v.dur[pos][mb[v.gcat[pos]]].sum())


def _residual(v, claimed: np.ndarray):
    """The side view without the kernels an op-level finding holds (the same object when none)."""
    if not claimed.any():
        return v
    keep = ~claimed
    r = copy.copy(v)
    r.rows, r.dur, r.name, r.gcat = v.rows[keep], v.dur[keep], v.name[keep], v.gcat[keep]
    r.all_rows, r._cpu_op, r._by_category = False, None, None
    r.total = float(r.dur.sum())
    return r


def find_fusions(va, vb, labels: tuple[str, str], classifier, alignments: list[LayerAlignment],
                 overrides: dict[str, Any] | None = None) -> list[FusionFinding]:
    """Every fusion finding, largest measured saving first. Records op-level groups on the
    alignments (`LayerAlignment.groups`, `KernelPair.group`).

    Computed with the sides in a canonical order (`swap.in_order`) and mirrored back, so that the
    findings of `compare B A` are those of `compare A B` with the sides swapped, whatever tie the
    detectors meet (which of two equally good groups is taken first)."""
    if swap.in_order(va, vb):
        return _find_fusions(va, vb, labels, classifier, alignments, overrides)
    mirrored = [swap.alignment(al) for al in alignments]
    out = _find_fusions(vb, va, (labels[1], labels[0]), classifier, mirrored, overrides)
    for al, m in zip(alignments, mirrored):
        al.groups = [swap.group(g) for g in m.groups]
        for p, q in zip(al.pairs, m.pairs):
            p.group = q.group
    return [swap.finding(f) for f in out]


def _find_fusions(va, vb, labels: tuple[str, str], classifier, alignments: list[LayerAlignment],
                  overrides: dict[str, Any] | None = None) -> list[FusionFinding]:
    full = {"a": va, "b": vb}
    lab = {"a": labels[0], "b": labels[1]}
    other = {"a": "b", "b": "a"}
    # each side's launches priced at what a launch costs its GPU in this trace (see fusion_model)
    params = {}
    for s, v in full.items():
        (gap, queued), floor = launch_costs(v.m, v.phase)   # read from this side alone: see side_readings
        t = timeline(v.m, v.phase, keep_cut=False)
        bound = t.whole.launch_bound_us / t.whole.span_us if t.whole.span_us > 0 else None
        params[s] = with_measured_dispatch(params_for(v.m.info.gpu, overrides), gap, queued, floor,
                                           launch_call_us=t.launch.api_p50_us, launch_calls=t.launch.launches,
                                           launch_bound=bound)
    full_counts = {"a": _counts(va), "b": _counts(vb)}
    op_findings, claimed = find_op_fusions(full, lab, classifier, alignments, full_counts, params, estimate)
    # the category-level detectors read what no op-level finding explains
    sides = {s: _residual(full[s], claimed[s]) for s in ("a", "b")}
    va, vb = sides["a"], sides["b"]
    counts = {"a": _counts(va), "b": _counts(vb)}
    seqs = {s: _side_seq(v) for s, v in sides.items()}
    findings: list[FusionFinding] = []
    explained: set[tuple[str, str]] = set()  # (category, side that has fewer) already explained
    reported: set[str] = set()               # fused categories an op-level finding names
    for f in op_findings:
        for c in f.component_categories:
            explained.add((c, f.fused_side))
        explained.add((f.fused_category, f.component_side))
        reported.add(f.fused_category)

    # 1. fused categories on one side only -------------------------------------------------
    for s in ("a", "b"):
        o = other[s]
        for cat, n in counts[s].items():
            if not classifier.is_fused(cat) or counts[o].get(cat, 0) > 0 or cat in reported:
                continue
            comps = [c for c in classifier.components(cat)]
            if not comps or not all(counts[o].get(c, 0) for c in comps):
                continue
            pos_o, seq_o = seqs[o]
            vo, vs = sides[o], sides[s]
            chains = _chains(seq_o, [vo.gindex[c] for c in comps])
            fused_pos = vs.positions(cat)
            fused_cost = float(vs.dur[fused_pos].sum())
            if len(chains):
                flat = pos_o[chains.ravel()]
                comp_cost = float(vo.dur[flat].sum())
                comp_names = vo.top_names(flat, 4)
                per_occ_mem = _memory_bound_us(vo, flat, classifier) / len(chains)
                conf = min(1.0, 0.6 + 0.4 * min(len(chains), n) / max(len(chains), n))
            else:
                flat = np.array([], dtype=np.int64)
                comp_cost, comp_names, per_occ_mem, conf = 0.0, [], 0.0, 0.4
            occ = n
            est = estimate(params[o], kernels_before=len(comps), kernels_after=1, occurrences=occ,
                           memory_bound_us=per_occ_mem,
                           device_bytes=_saved_bytes(vo, flat, max(len(chains), 1), vs, fused_pos, max(n, 1))
                           if len(chains) else None)
            findings.append(FusionFinding(
                kind="fused_category", fused_side=s, fused_kernels=vs.top_names(fused_pos, 3),
                fused_category=cat, component_side=o, component_kernels=comp_names,
                component_categories=comps, occurrences=occ,
                evidence=(f"{lab[s]} runs {n} fused {cat} kernels; {lab[o]} runs none and instead launches "
                          f"{' then '.join(comps)} back to back {len(chains)} times."),
                confidence=round(conf, 2), component_cost_us=comp_cost, fused_cost_us=fused_cost,
                estimated_saving=est))
            for c in comps:
                explained.add((c, s))
            explained.add((cat, o))

    # 2. sequence patterns: a category unique to one side that follows a shared one ---------
    for s in ("a", "b"):
        o = other[s]
        pos_s, seq_s = seqs[s]
        for cat, n in counts[s].items():
            if cat in GENERIC or counts[o].get(cat, 0) > 0 or classifier.is_fused(cat) or (cat, o) in explained:
                continue
            vs, vo = sides[s], sides[o]
            cid = vs.gindex[cat]
            idx = np.nonzero(seq_s == cid)[0]
            idx = idx[idx > 0]
            if len(idx) == 0:
                continue
            pid, hits = np.unique(seq_s[idx - 1], return_counts=True)
            best = int(np.argmax(hits))
            pred, share = vs.groups[int(pid[best])], float(hits[best] / hits.sum())
            if share < SEQUENCE_CONSISTENCY or counts[o].get(pred, 0) == 0 or pred == cat:
                continue
            after = idx[seq_s[idx - 1] == pid[best]]
            uniq_pos, pred_pos = pos_s[after], pos_s[after - 1]
            host_pos = vo.positions(pred)
            # A fusion leaves a trace in the host kernel's name (add_rmsnorm_quant, gemm_bias_act…);
            # without one, "runs nothing there" is all we know: the missing-kernel detector says so.
            host_names = vo.top_names(host_pos, 8)
            if not any(classifier.matches(nm, cat) for nm in host_names):
                continue
            comp_pos = np.concatenate([pred_pos, uniq_pos])
            occ = len(uniq_pos)
            est = estimate(params[s], kernels_before=2, kernels_after=1, occurrences=occ,
                           memory_bound_us=_memory_bound_us(vs, uniq_pos, classifier) / max(occ, 1),
                           device_bytes=_saved_bytes(vs, comp_pos, max(occ, 1), vo, host_pos, max(len(host_pos), 1)))
            findings.append(FusionFinding(
                kind="sequence", fused_side=o, fused_kernels=vo.top_names(host_pos, 3), fused_category=pred,
                component_side=s, component_kernels=vs.top_names(pred_pos, 2) + vs.top_names(uniq_pos, 2),
                component_categories=[pred, cat], occurrences=occ,
                evidence=(f"{lab[s]} runs {cat} {n} times, {share:.0%} of them right after {pred}; "
                          f"{lab[o]} never runs {cat}, so its {pred} kernels likely do that work fused."),
                confidence=round(0.5 + 0.5 * share, 2) if share < 1 else 0.9,
                component_cost_us=float(vs.dur[comp_pos].sum()), fused_cost_us=float(vo.dur[host_pos].sum()),
                estimated_saving=est))
            explained.add((cat, o))

    # 3. count imbalances per forward pass ---------------------------------------------------
    # Credited with the extra kernels only (found per launching operator: the H100's cuBLAS
    # workspace memsets under aten::mm, which the MI300X does not launch); the rest of the
    # category's gap is the same operations' kernels running at another speed, which the
    # evidence names but the finding does not claim.
    for cat in sorted(set(counts["a"]) & set(counts["b"])):
        if cat in GENERIC:
            continue
        rate = {s: counts[s][cat] / sides[s].passes for s in ("a", "b")}
        more = "a" if rate["a"] > rate["b"] else "b"
        less = other[more]
        if rate[less] == 0 or rate[more] / rate[less] < IMBALANCE_RATIO or (cat, less) in explained:
            continue
        vm, vl = sides[more], sides[less]
        pm, pl = vm.positions(cat), vl.positions(cat)
        ratio = rate[more] / rate[less]
        extra = _extra_launches(vm, pm, vl, pl)
        n_extra = sum(e.count for e in extra)
        extra_us = sum(e.time_us for e in extra)
        if n_extra == 0:
            continue
        extra_pos = np.concatenate([e.positions for e in extra]) if extra else np.array([], dtype=np.int64)
        est = estimate(params[more], kernels_before=1, kernels_after=0, occurrences=n_extra,
                       memory_bound_us=(extra_us / n_extra) if classifier.role(cat) in MEMORY_BOUND_ROLES else 0.0,
                       device_bytes=_saved_bytes(vm, extra_pos, max(len(extra_pos), 1)))
        whence = "; ".join(f"{e.count} from {e.op or 'kernels with no operator'} ({e.time_us:,.1f} µs"
                           + (f", {short_name(e.names[0], 40)}" if e.names else "") + ")" for e in extra[:3])
        rest = (float(vm.dur[pm].sum()) / vm.passes - extra_us / vm.passes) - float(vl.dur[pl].sum()) / vl.passes
        rest_ab = rest if more == "a" else -rest      # said as every gap is: A − B
        rest_text = f"{rest_ab:+,.1f}".replace("-", "−")
        speed = _speed_text(vm, pm, vl, pl, lab[more], lab[less])
        # memsets one side needs and the other does not (cuBLAS's workspace clears) fuse nothing:
        # a launch-count difference, said as one
        memsets = len(extra_pos) > 0 and bool((vm.m.kernels.kind[vm.rows[extra_pos]] == KIND_MEMSET).all())
        findings.append(FusionFinding(
            kind="launch_count" if memsets else "count_imbalance", fused_side=less, fused_kernels=vl.top_names(pl, 3), fused_category=cat,
            component_side=more, component_kernels=vm.top_names(extra_pos, 3), component_categories=[cat],
            occurrences=n_extra,
            evidence=(f"{lab[more]} launches {cat} {ratio:.1f}× as often per forward pass "
                      f"({_per_pass(rate[more])} vs {_per_pass(rate[less])}): {n_extra} extra launches, "
                      f"{extra_us:,.1f} µs ({whence}), that {lab[less]} does not make; the rest of the category's "
                      f"gap, {rest_text} µs per pass (A − B), is the same operations' kernels at another "
                      f"speed{speed}, "
                      "not counted here."),
            confidence=round(min(0.9, 0.4 + 0.2 * (ratio - 1)), 2),
            component_cost_us=extra_us, fused_cost_us=0.0, estimated_saving=est))
        explained.add((cat, less))

    # 4. kernels one side runs at an aligned position in most layers, the other never ---------
    n_layers = max(len(alignments), 1)
    gaps: dict[tuple[str, str, str], list] = {}
    for al in alignments:
        seen = set()
        for p in al.pairs:
            if (p.a_name is None) == (p.b_name is None) or p.fusion_kind != "only_on" or p.group >= 0:
                continue
            s = "a" if p.a_name is not None else "b"
            key = (s, p.a_category if s == "a" else p.b_category, p.a_name if s == "a" else p.b_name)
            if key in seen:
                continue
            seen.add(key)
            gaps.setdefault(key, []).append(p)
    for (s, cat, name), ps in gaps.items():
        o = other[s]
        share = len(ps) / n_layers
        if share < MISSING_LAYER_SHARE or (cat, o) in explained or cat in GENERIC:
            continue
        vs = sides[s]
        st = [getattr(p, s) for p in ps]
        cost = float(sum(x.total_us for x in st))
        count = int(sum(x.count for x in st))
        rows = np.array([getattr(p, f"{s}_row") for p in ps], dtype=np.int64)
        est = estimate(params[s], kernels_before=1, kernels_after=0, occurrences=count,
                       memory_bound_us=(cost / max(count, 1)) if classifier.role(cat) in MEMORY_BOUND_ROLES else 0.0,
                       device_bytes=_row_bytes(vs.m, rows, len(rows)))
        findings.append(FusionFinding(
            kind="missing_kernel", fused_side=o, fused_kernels=[], fused_category=cat, component_side=s,
            component_kernels=[name], component_categories=[cat], occurrences=count,
            evidence=(f"{lab[s]} runs {short_name(name, 60)} ({cat}) in {len(ps)} of {len(alignments)} layers where "
                      f"{lab[o]} runs nothing at that position."),
            confidence=round(min(0.9, 0.3 + 0.6 * share), 2), component_cost_us=cost, fused_cost_us=0.0,
            estimated_saving=est))
    return _finish(op_findings, findings, full, alignments)


def _row_bytes(model, rows: np.ndarray, per: int) -> float | None:
    """`kernels_bytes` of `rows`, per `per` occurrences (None: no byte count, see fusion_model)."""
    b = kernels_bytes(model, rows)
    return None if b is None else b / per


def _saved_bytes(vc, comp_pos: np.ndarray, comp_per: int, vf=None, fused_pos=None, fused_per: int = 1) -> float | None:
    """Device traffic a fusion removes per occurrence: the component kernels' bytes (positions into
    side view `vc`, per `comp_per` occurrences) minus the fused kernels' (into `vf`), or None."""
    comp = _row_bytes(vc.m, vc.rows[comp_pos], comp_per)
    if comp is None or vf is None:
        return comp
    fused = _row_bytes(vf.m, vf.rows[fused_pos], fused_per)
    return None if fused is None else comp - fused


@dataclass
class _Extra:
    """Kernels one side launches beyond the other's, under one launching operator."""

    op: str                  # the operator ("" when the kernels have none)
    count: int
    time_us: float
    positions: np.ndarray    # the more side's kernels of that operator (positions into its view)
    names: list[str]


def _by_name_and_op(v, pos: np.ndarray) -> tuple[list[tuple[str, str]], np.ndarray]:
    """The kernels at `pos` grouped by (name, launching operator; "" none), compared as text (both
    sides' ids index different tables): the groups' keys and each kernel's group, with numpy (a
    dict per kernel took ~10 ms a side on the dense pair's 250k kernels)."""
    text = v.m.strings
    ops = v._take(v.m.kernels.cpu_op)[pos]
    op_names = v.m.cpu_ops.name
    none = np.iinfo(np.int64).min   # no operator: "" (an operator's name id is any id, -1 too)
    op = np.full(len(ops), none, np.int64)
    has = ops >= 0
    op[has] = op_names[ops[has]]
    un, ni = np.unique(v.name[pos], return_inverse=True)
    uo, oi = np.unique(op, return_inverse=True)
    codes, group = np.unique(ni.reshape(-1).astype(np.int64) * len(uo) + oi.reshape(-1), return_inverse=True)
    keys: list[tuple[str, str]] = []
    where: dict[tuple[str, str], int] = {}
    canon = np.empty(len(codes), np.int64)
    for c, (n, o) in enumerate(zip((codes // len(uo)).tolist(), (codes % len(uo)).tolist())):
        o = int(uo[o])
        key = (text[int(un[n])], text[o] if o != none else "")
        canon[c] = where.setdefault(key, len(keys))
        if canon[c] == len(keys):
            keys.append(key)
    return keys, canon[group.reshape(-1)]


def _extra_launches(vm, pm: np.ndarray, vl, pl: np.ndarray) -> list[_Extra]:
    """The launches the `vm` side makes beyond the `vl` side's, matched as the gap ledger splits a
    row (`kerneldiff.core.compare.split`: by kernel and operator, then by operator, else the
    category) and priced at those kernels' own mean: the ledger's *more launches* toward `vm`, so
    the finding and the ledger give the same figure for the same kernels. Counted and timed over
    vm's passes, largest time first."""
    gm: dict = {}
    gl: dict = {}
    members: list[np.ndarray] = []
    for g, v, p in ((gm, vm, pm), (gl, vl, pl)):
        keys, group = _by_name_and_op(v, p)
        ns = np.round(np.maximum(v.dur[p], 0.0) * 1000).astype(np.int64)
        order = np.argsort(group, kind="stable")      # each group's kernels in their order
        starts = np.flatnonzero(np.diff(group[order], prepend=-1))
        counts = np.diff(np.append(starts, len(order))).tolist()
        # exact integer sums, as Python's ints gave: int64 where no sum can overflow it
        if len(ns) and max(-int(ns.min()), int(ns.max())) * len(ns) < 2 ** 62:
            totals = np.add.reduceat(ns[order], starts).tolist() if len(starts) else []
        else:
            totals = [sum(x) for x in np.split(ns[order], starts[1:]).tolist()] if len(starts) else []
        for key, c, t in zip(keys, counts, totals):
            g[key] = (c, t)
        if g is gm:
            members = np.split(order, starts[1:]) if len(starts) else []
            kernel_keys = keys
    _, _, parts = split(gm, gl, vm.passes, vl.passes, 1000.0)
    by_kernel = {(p.key, p.op) for p in parts if p.level == "kernel"}
    # vm's kernels grouped once by (name, operator): a part's kernels are a few groups' indices, not
    # a scan of every kernel per part (quadratic where each of 120,000 names is a part of its own)
    idx = dict(zip(kernel_keys, members))
    empty = np.array([], dtype=np.int64)

    def joined(groups: list[np.ndarray]) -> np.ndarray:
        return np.sort(np.concatenate(groups)) if groups else empty

    out = []
    for p in parts:
        if p.count_gap_us <= 0:
            continue
        if p.level in ("kernel", "one side"):
            sel = idx.get((p.key, p.op), empty)
        elif p.level == "operator":
            sel = joined([ii for k, ii in idx.items() if k[1] == p.op and k not in by_kernel])
        else:
            sel = joined([ii for k, ii in idx.items() if k not in by_kernel])
        pos = pm[sel]
        n = int(round((p.a_launches - p.b_launches) * vm.passes)) if p.b_launches else len(sel)
        # one (name, operator) group's kernels all bear its name (no group-by needed: 120,000 parts)
        names = ([p.key] if len(sel) else []) if p.level in ("kernel", "one side") else vm.top_names(pos, 2)
        out.append(_Extra(p.op if p.level != "category" else "the rest of the category", n, p.count_gap_us * vm.passes, pos,
                          names))
    out.sort(key=lambda e: (-e.time_us, e.op))
    return out


def _per_pass(x: float) -> str:
    """A launch count per pass: whole when it is (415, not 415.0), else one decimal."""
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


def _op_times(v, pos: np.ndarray) -> tuple[dict[str, float], dict[str, int]]:
    """Per launching operator ("" none) of the kernels at `pos`: their time per pass (summed in
    the kernels' order, as a loop over them would) and their count."""
    keys, group = _by_name_and_op(v, pos)
    ops = sorted({o for _, o in keys})
    at = {o: i for i, o in enumerate(ops)}
    of_op = np.asarray([at[o] for _, o in keys], dtype=np.int64)[group] if keys else np.array([], np.int64)
    t = np.bincount(of_op, weights=v.dur[pos] / v.passes, minlength=len(ops)).tolist()
    c = np.bincount(of_op, minlength=len(ops)).tolist()
    return dict(zip(ops, t)), dict(zip(ops, c))


def _speed_text(vm, pm: np.ndarray, vl, pl: np.ndarray, lab_m: str, lab_l: str) -> str:
    """` (aten::cat: 1.93 ms on X, 2.85 ms on Y)`: the operator both sides launch as often whose
    kernels' time differs most, per pass ("" when there is none)."""
    tm, cm = _op_times(vm, pm)
    tl, cl = _op_times(vl, pl)
    same = [k for k in tm.keys() & tl.keys() if k and cm[k] / vm.passes == cl[k] / vl.passes]
    if not same:
        return ""
    k = max(same, key=lambda x: (abs(tm[x] - tl[x]), x))
    return f" ({k}: {_ms(tl[k])} on {lab_l}, {_ms(tm[k])} on {lab_m} per pass)"


def _ms(us: float) -> str:
    return f"{us / 1000:,.2f} ms" if us >= 1000 else f"{us:,.1f} µs"


def _finish(op_findings: list[FusionFinding], findings: list[FusionFinding], sides: dict,
            alignments: list[LayerAlignment]) -> list[FusionFinding]:
    """Measured savings and capped estimates for the category-level findings; no side's findings
    add up to more than its time; largest measured saving first (then estimated)."""
    for f in findings:
        f.measured_saving_us = f.component_cost_us - f.fused_cost_us
        cap_saving(f.estimated_saving, f.component_cost_us,
                   f.component_cost_us / max(f.occurrences, 1))
    out = op_findings + findings
    budget = {s: float(v.dur.sum()) for s, v in sides.items()}
    for f in out:   # strongest evidence first: op-level, then the detectors in order
        s = f.estimated_saving
        if s is None:
            continue
        left = max(budget[f.component_side], 0.0)
        if s.total_all_us > left:
            s.total_all_us, s.capped = left, True
            s.total_us = min(s.total_us, left / max(f.occurrences, 1))
        budget[f.component_side] -= s.total_all_us
    index = {id(f): i for i, f in enumerate(op_findings)}
    # ties broken by what the findings are, never by which side is A: `compare B A` lists them in
    # the same order as `compare A B`
    out.sort(key=lambda f: (-max(f.measured_saving_us, 0.0),
                            -(f.estimated_saving.total_all_us if f.estimated_saving else 0.0),
                            f.kind, f.fused_category, f.fused_kernels, f.component_kernels))
    where = {index[id(f)]: i for i, f in enumerate(out) if id(f) in index}
    for al in alignments:
        for g in al.groups:
            g.finding = where.get(g.finding, -1)
    return out
