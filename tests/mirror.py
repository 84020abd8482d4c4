"""`compare B A` against `compare A B` mirrored: what differs, in words (empty when nothing does).

Works on `Comparison.to_dict()`: sides swapped, gaps negated, ratios inverted (headline, wall clock,
ledger, operations, layers, same kernels, GEMM and attention shapes, throughput); the excluded work and the comparability verdict the same; the
alignments pair for pair with the sides swapped; the findings the same with their sides swapped. Used by the
swap-symmetry tests on generated and real pairs.
"""

from __future__ import annotations

import math
from typing import Any

FLIP = {"a": "b", "b": "a", None: None, "": ""}
REL = 1e-9


def _close(x: float | None, y: float | None, rel: float = REL) -> bool:
    if x is None or y is None:
        return x is None and y is None
    return math.isclose(x, y, rel_tol=rel, abs_tol=1e-6)


def _inv(r: float | None) -> float | None:
    return None if r is None or r == 0 else 1.0 / r


def _stats(x: dict, y: dict, where: str, out: list[str]) -> None:
    for k in ("count", "total_us", "mean_us", "median_us"):
        if k in x and not _close(x[k], y[k]):
            out.append(f"{where}.{k}: {x[k]} vs {y[k]}")


def _pair_key(p: dict, flip: bool) -> tuple:
    s, o = ("b", "a") if flip else ("a", "b")
    return (p[f"{s}_name"], p[f"{o}_name"], p[f"{s}_category"], p[f"{o}_category"], p["fusion_kind"])


def _shape_key(r: dict) -> tuple:
    return tuple(v for k, v in sorted(r.items()) if k not in ("a", "b", "ratio", "gap_us"))


def _finding_key(f: dict, flip: bool) -> tuple:
    side = (lambda s: FLIP[s]) if flip else (lambda s: s)
    return (f["kind"], side(f["fused_side"]), f["fused_category"], side(f["component_side"]),
            tuple(f["component_categories"]), tuple(f["fused_kernels"]), tuple(f["component_kernels"]),
            f["occurrences"])


def mirror_diffs(ab: dict[str, Any], ba: dict[str, Any], limit: int = 20) -> list[str]:
    """What in `ba` (compare B A) is not `ab` (compare A B) mirrored."""
    out: list[str] = []
    if not _close(ab["gap_us"], -ba["gap_us"]):
        out.append(f"gap {ab['gap_us']} vs {-ba['gap_us']}")
    if not _close(ab["ratio"], _inv(ba["ratio"])):
        out.append(f"ratio {ab['ratio']} vs 1/{ba['ratio']}")
    wa, wb = ab.get("wall") or {}, ba.get("wall") or {}
    if wa and not _close(wa.get("wall_gap_us"), -wb.get("wall_gap_us", 0.0)):
        out.append(f"wall gap {wa.get('wall_gap_us')} vs {-wb.get('wall_gap_us', 0.0)}")
    led_b = {e["cause"]: e for e in ba.get("ledger") or []}
    for e in ab.get("ledger") or []:
        m = led_b.get(e["cause"])
        if m is None or not _close(e["gap_us"], -m["gap_us"]) or not _close(e["a_us"], m["b_us"]) \
                or not _close(e["b_us"], m["a_us"]):
            out.append(f"ledger {e['cause']}: not mirrored")
        elif e.get("count_gap_us") is not None and (not _close(e["count_gap_us"], -m["count_gap_us"], 1e-6)
                                                    or not _close(e["speed_gap_us"], -m["speed_gap_us"], 1e-6)):
            out.append(f"ledger {e['cause']}: launches/slower split not mirrored")
    ca, cb = ab.get("comparability") or {}, ba.get("comparability") or {}
    if ca.get("verdict") != cb.get("verdict") or len(ca.get("reasons", [])) != len(cb.get("reasons", [])):
        out.append(f"comparability {ca.get('verdict')} vs {cb.get('verdict')}")
    for s in ("a", "b"):
        ea, eb = ab[s].get("excluded"), ba[FLIP[s]].get("excluded")
        if (ea is None) != (eb is None) or (ea and (ea["kernels"] != eb["kernels"] or not _close(ea["time_us"],
                                                                                                  eb["time_us"]))):
            out.append(f"excluded work of side {s} not mirrored")
    ops_b = {o["category"]: o for o in ba["operations"]}
    for o in ab["operations"]:
        m = ops_b.get(o["category"])
        if m is None:
            out.append(f"operation {o['category']} only one way")
            continue
        _stats(o["a"], m["b"], f"operation {o['category']} a", out)
        _stats(o["b"], m["a"], f"operation {o['category']} b", out)
        if not _close(o["gap_us"], -m["gap_us"]) or not _close(o["ratio"], _inv(m["ratio"])):
            out.append(f"operation {o['category']}: gap/ratio not mirrored")
    same_b = {(k["name"], k["category"]): k for k in ba.get("same_kernels") or []}
    for k in ab.get("same_kernels") or []:
        m = same_b.get((k["name"], k["category"]))
        if m is None or not _close(k["gap_us"], -m["gap_us"]):
            out.append(f"same kernel {k['name'][:40]}: not mirrored")
        else:
            _stats(k["a"], m["b"], f"same kernel {k['name'][:40]} a", out)
    for table in ("gemm_shapes", "attention_shapes"):
        rows_b = {_shape_key(r): r for r in ba.get(table) or []}
        for r in ab.get(table) or []:
            m = rows_b.get(_shape_key(r))
            if m is None or not _close(r["gap_us"], -m["gap_us"]) or not _close(r["a"]["total_us"], m["b"]["total_us"]) \
                    or not _close(r["a"].get("tflops"), m["b"].get("tflops")):
                out.append(f"{table} {_shape_key(r)}: not mirrored")
    thr_b = {r["category"]: r for r in ba.get("throughput") or []}
    for r in ab.get("throughput") or []:
        m = thr_b.get(r["category"])
        if m is None or any(not _close(r["a"].get(f), m["b"].get(f)) or not _close(r["b"].get(f), m["a"].get(f))
                            for f in ("time_us", "bytes", "flops", "tbps", "pct_peak_bw")):
            out.append(f"throughput {r['category']}: not mirrored")
    lay_b = {l["layer"]: l for l in ba["layers"]}
    for l in ab["layers"]:
        m = lay_b.get(l["layer"])
        if m is None or not _close(l["gap_us"], -m["gap_us"]) or not _close(l["ratio"], _inv(m["ratio"])):
            out.append(f"layer {l['layer']}: gap/ratio not mirrored")
    al_b = {al["layer"]: al for al in ba["alignments"]}
    for al in ab["alignments"]:
        m = al_b.get(al["layer"])
        if m is None:
            out.append(f"alignment of layer {al['layer']} only one way")
            continue
        pa = [_pair_key(p, False) for p in al["pairs"]]
        pb = [_pair_key(p, True) for p in m["pairs"]]
        if pa != pb:
            n = sum(x != y for x, y in zip(pa, pb)) + abs(len(pa) - len(pb))
            out.append(f"layer {al['layer']} alignment: {len(pa)} pairs one way, {len(pb)} the other, {n} differ")
            continue
        for p, q in zip(al["pairs"], m["pairs"]):
            _stats(p["a"], q["b"], f"layer {al['layer']} pair {p['position']} a", out)
            _stats(p["b"], q["a"], f"layer {al['layer']} pair {p['position']} b", out)
            if (p["group"] >= 0) != (q["group"] >= 0):
                out.append(f"layer {al['layer']} pair {p['position']}: in a fusion group one way only")
        ga = sorted((FLIP[g["fused_side"]], tuple(g["positions"]), tuple(g["a_indices"]), tuple(g["b_indices"]))
                    for g in m["groups"])
        gb = sorted((g["fused_side"], tuple(g["positions"]), tuple(g["b_indices"]), tuple(g["a_indices"]))
                    for g in al["groups"])
        if ga != gb:
            out.append(f"layer {al['layer']}: fusion groups differ ({len(gb)} vs {len(ga)})")
        # the words say which side is which: mirrored, "on A" and "on B" trade places
        na = sorted(g["note"].replace("on A", "on _").replace("on B", "on A").replace("on _", "on B")
                    for g in m["groups"])
        if na != sorted(g["note"] for g in al["groups"]):
            out.append(f"layer {al['layer']}: fusion group notes are not mirrored")
    fa = {_finding_key(f, False): f for f in ab["fusions"]}
    fb = {_finding_key(f, True): f for f in ba["fusions"]}
    for k in fa.keys() - fb.keys():
        out.append(f"finding only in A B: {k[:4]}")
    for k in fb.keys() - fa.keys():
        out.append(f"finding only in B A: {k[:4]}")
    for k in fa.keys() & fb.keys():
        x, y = fa[k], fb[k]
        for f in ("measured_saving_us", "component_cost_us", "fused_cost_us"):
            if not _close(x[f], y[f], 1e-6):
                out.append(f"finding {k[:4]} {f}: {x[f]} vs {y[f]}")
        ex, ey = x.get("estimated_saving") or {}, y.get("estimated_saving") or {}
        if not _close(ex.get("total_all_us"), ey.get("total_all_us"), 1e-6):
            out.append(f"finding {k[:4]} estimate: {ex.get('total_all_us')} vs {ey.get('total_all_us')}")
    return out[:limit]
