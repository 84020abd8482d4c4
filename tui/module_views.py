"""The Modules screen's tables: the module tree (the rows of the expanded nodes, in tree order) and
the host hotspots, from `kerneldiff.core.compare.module_compare` and `host_compare` results."""

from __future__ import annotations

from rich.text import Text

from .text import DIM, cut, fmt_gap, fmt_pct, fmt_ratio, fmt_us, literal, span
from .views import _name_cell, _num, _row_style, compare_sorts, gap_sort, pair_category, pair_mark, searchable, \
    shortener, time_sort
from .widgets.result_table import Column, Row, Sort, TableSpec

MATCH_SHORT = {"root": "", "path": "path", "layer": "layer", "a only": "A only", "b only": "B only"}


def visible_nodes(root, expanded: set[str]) -> list[tuple[int, object]]:
    """(depth, node) of the rows shown: the root's children, and the children of every expanded node,
    in tree order (siblings by |gap|, as the tree holds them)."""
    out: list[tuple[int, object]] = []

    def add(node, depth: int) -> None:
        for c in node.children:
            out.append((depth, c))
            if c.path in expanded and c.children:
                add(c, depth + 1)

    out.append((0, root))
    add(root, 1)
    return out


def _t(side) -> float | None:
    return side.time_us if side is not None else None


def modules_spec(mc, expanded: set[str]) -> TableSpec:
    cols = [Column("module", "Module", "name", None, 16), Column("a", "A", "us", 8), Column("b", "B", "us", 8),
            Column("gap", "Gap", "gap", 9), Column("ratio", "A/B", "ratio", 6), Column("share", "%wall", "pct", 6)]

    def build(_w: dict[str, int]) -> list[Row]:
        rows = []
        for i, (depth, n) in enumerate(visible_nodes(mc.root, expanded)):
            mark = ("▾ " if n.path in expanded else "▸ ") if n.children and depth else "  "
            share = n.share_of_wall_gap
            vals = (n.path or "total", _t(n.a), _t(n.b), n.gap_us, n.ratio, share, i)
            name = Text("  " * max(depth - 1, 0) + mark, style=DIM) + literal(n.name)
            if n.match in ("a only", "b only"):   # how it matched, where it is not by its path
                name.append(f" ({MATCH_SHORT[n.match]})", style=DIM)
            cells = (name, _num(fmt_us(_t(n.a))), _num(fmt_us(_t(n.b))), _num(fmt_gap(n.gap_us)),
                     _num(fmt_ratio(n.ratio)), _num(fmt_pct(share)))
            rows.append(Row(n.path or "(total)", vals, cells, payload=n, style=_row_style(n.gap_us),
                            search=n.path.lower()))
        return rows

    # the tree's own order: siblings by |gap| under their parent
    tree = Sort("gap", lambda r: r.values[-1], (), False, "the tree, siblings by largest |gap|")
    return TableSpec("modules", cols, build, default_sort="gap", sorts={"gap": tree}, fixed=1)


def modules_hint(mc) -> Text:
    per = "per pass" if mc.basis == "per_pass" else "totals"
    form = "by module path" if mc.form == "path" else "by decoder layer, then module path"
    return Text(f"→ expand · ← collapse · Enter: its kernel pairs · kernel time {form} ({per}) · %wall: share of "
                f"the wall-clock gap", style=DIM)


def _count(n: float) -> str:
    """A count as counted: whole where it is (totals), one decimal where it is a mean per pass."""
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,.1f}"


def module_detail(node, mc) -> Text:
    t = Text()
    t.append_text(literal(node.path or "total"))
    t.append(f"\nmatched: {node.match}")
    for key, side in (("A", node.a), ("B", node.b)):
        if side is None:
            t.append(f"\n{key}: not on this side")
            continue
        t.append(f"\n{key}: {fmt_us(side.time_us)} kernel time, span {fmt_us(side.span_us)}, "
                 f"{_count(side.kernels)} kernels, {_count(side.launches)} launches")
    for note in mc.notes:
        t.append("\n")
        t.append_text(literal(note, DIM))
    return t


def host_spec(rows: list, name: str) -> TableSpec:
    cols = [Column("op", "Host operation", "name", None, 16), Column("kind", "Kind", "text", 8),
            Column("a", "A", "us", 8), Column("b", "B", "us", 8), Column("gap", "Gap", "gap", 9)]

    def build(_w: dict[str, int]) -> list[Row]:
        out = []
        for i, r in enumerate(rows):
            vals = (r.name, r.kind, r.a_us, r.b_us, r.gap_us)
            cells = (literal(_short(r.name, r.kind)), span(r.kind, DIM), _num(fmt_us(r.a_us)), _num(fmt_us(r.b_us)),
                     _num(fmt_gap(r.gap_us)))
            out.append(Row(f"{r.kind}:{r.name}:{i}", vals, cells, payload=r, style=_row_style(r.gap_us),
                           search=f"{r.name} {r.kind}".lower()))
        return out

    return TableSpec(name, cols, build, default_sort="gap",
                     sorts={"gap": gap_sort(4), "time": time_sort((2, 3), ("a", "b"))})


def _short(name: str, kind: str) -> str:
    """A Python frame's file without its directories (what tells frames apart is at the end:
    `modeling_llama.py(338): forward`); the row's value and the export keep the name in full."""
    if kind == "python":
        head, sep, tail = name.partition(": ")
        if sep and "/" in head:
            return "…/" + head.rsplit("/", 1)[1] + sep + tail
    return name


def self_rows(hot) -> list:
    """Both sides' largest self times, each operation once."""
    seen, out = set(), []
    for r in hot.top["a"] + hot.top["b"]:
        if r.kind != "other" and (r.kind, r.name) not in seen:
            seen.add((r.kind, r.name))
            out.append(r)
    return out


def host_hint(hot, which: str) -> Text:
    per = " per pass" if hot.basis == "per_pass" else ""
    if which == "idle":
        return Text(f"GPU launch-bound idle{per} (A {fmt_us(hot.idle_us['a'])}, B {fmt_us(hot.idle_us['b'])}) "
                    f"by the host operation running then", style=DIM)
    return Text(f"host self time{per}: both sides' largest", style=DIM)


def module_pairs_spec(found) -> TableSpec:
    """A module's kernel pairs (`core.compare.module_pairs`), layer by layer in the order a pass runs
    them: the layer pairs table's columns after the layer (figures per launch, mean over passes)."""
    pairs = [p for _l, p in found.pairs]
    widest = max((len(pair_category(p)) for p in pairs), default=8)
    cols = [Column("layer", "L", "int", 3), Column("pos", "#", "int", 3),
            Column("a_name", "A kernel", "name", min_width=14), Column("b_name", "B kernel", "name", min_width=14),
            Column("a_mean", "A mean", "us", 7), Column("b_mean", "B mean", "us", 7), Column("ratio", "A/B", "ratio", 6),
            Column("gap", "Gap", "gap", 8), Column("note", "G", "text", 1),
            Column("category", "Category", "text", max(8, min(widest, 28)))]

    def build(w: dict[str, int]) -> list[Row]:
        rows = []
        short_a = shortener([p.a_name for p in pairs], w["a_name"])
        short_b = shortener([p.b_name for p in pairs], w["b_name"])
        for layer, p in found.pairs:
            a = p.a.mean_us if p.a_name is not None else None
            b = p.b.mean_us if p.b_name is not None else None
            note, cat = pair_mark(p), pair_category(p)
            vals = (layer, p.position, p.a_name, p.b_name, a, b, p.ratio, p.gap_us, note, cat)
            cells = (_num(str(layer)), _num(str(p.position)), _name_cell(p.a_name, w["a_name"], short_a),
                     _name_cell(p.b_name, w["b_name"], short_b), _num(fmt_us(a)), _num(fmt_us(b)),
                     _num(fmt_ratio(p.ratio)), _num(fmt_gap(p.gap_us)),
                     span(note, "bold" if note not in ("=", "") else DIM), literal(cut(cat, cols[-1].width)))
            search = searchable(p.a_name, p.b_name, p.a_category, p.b_category)
            rows.append(Row(f"{layer}:{p.position}", vals, cells, payload=(layer, p), style=_row_style(p.gap_us),
                            search=search))
        return rows

    return TableSpec("module_pairs", cols, build, sorts=compare_sorts(7, 4, 5, 2, "a_name", ("a_mean", "b_mean"), alt=3),
                     fixed=4)


def module_pairs_summary(node, found) -> Text:
    t = literal(node.path or "total", "bold")
    layers = len({layer for layer, _p in found.pairs})
    t.append(f"\n{len(found.pairs):,} kernel pair{'' if len(found.pairs) == 1 else 's'} in {layers} "
             f"layer{'' if layers == 1 else 's'} · A {found.a_kernels:,} kernels, B {found.b_kernels:,}")
    out = [f"{k} {n:,}" for k, n in (("A", found.outside_a), ("B", found.outside_b)) if n]
    if out:
        t.append(f" · outside every layer (in no pair): {', '.join(out)}", style=DIM)
    return t
