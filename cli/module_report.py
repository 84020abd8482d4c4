"""`compare --modules` / `--hotspots`: the module tree and the host hotspots as text, and their
additions to the JSON document."""

from __future__ import annotations

# Rich and the text report's helpers are imported by the text renderers only: the JSON document
# and the tables need neither (importing them cost ~0.1 s of a cold `compare --format json`)

LAUNCH_BOUND = "idle: launch-bound"


def json_document(cmp, modules=None, hot=None) -> dict:
    """The comparison as a dict, with `modules` and the host hotspots (host.a.top, host.b.top,
    host.idle_by_op; the ledger's launch-bound row's `parts`) when they were asked for."""
    from dataclasses import asdict, fields

    from kerneldiff.core.session import ledger_parts

    # the comparison's fields as they are (strict_json writes dataclasses as asdict would, ~50x
    # faster than asdict itself); only what gains a key is copied
    doc = {f.name: getattr(cmp, f.name) for f in fields(cmp)}
    if modules is not None:
        doc["modules"] = modules
    if hot is not None:
        host = {"a": cmp.host.a.to_json(), "b": cmp.host.b.to_json()} if cmp.host else {}
        for side in ("a", "b"):
            host.setdefault(side, {})["top"] = hot.top[side]
        host["idle_by_op"] = hot.idle_by_op
        host["hotspots"] = {k: getattr(hot, k) for k in ("basis", "passes", "idle_us", "window_us", "notes")}
        doc["host"] = host
        doc["ledger"] = [dict(asdict(e), parts=ledger_parts(hot)) if e.cause == LAUNCH_BOUND else e
                         for e in cmp.ledger]
    return doc


def model_table(session, args) -> int:
    """`--table modules`: the module tree as a flat table, CSV or JSON (docs/EXPORT_SCHEMA.md)."""
    from kerneldiff.core.report.module_table import module_table

    from .output import emit, rows_csv, table_json

    head, rows = module_table(session.modules(args.phase))
    text = table_json(head, rows) if args.format == "json" else rows_csv(head, rows).rstrip("\n")
    return emit(text, args.output)


def render_modules(mc, out, width: int) -> None:
    from rich.table import Table
    from rich.text import Text

    from kerneldiff.core.session import top_rows
    from kerneldiff.core.report import format as fmt

    from .render import literal, us

    title = f"Modules (by {'path' if mc.form == 'path' else 'decoder layer, then path'}; largest gap first" + \
            (", per pass)" if mc.basis == "per_pass" else ")")
    t = Table(title=title, title_justify="left")
    t.add_column("module", overflow="ellipsis", no_wrap=True, max_width=max(16, width - 50))
    for col in ("A", "B", "A/B", "gap", "match"):
        t.add_column(col, justify="right", no_wrap=True)
    for d, n in top_rows(mc):
        t.add_row(literal("  " * d + n.name), us(n.a.time_us if n.a else None), us(n.b.time_us if n.b else None),
                  fmt.ratio(n.ratio), fmt.gap(n.gap_us), n.match)
    out.print(t)
    for note in mc.notes:
        out.print(Text("note: ", style="dim") + literal(note))


def render_hotspots(hot, out, width: int, n: int = 10) -> None:
    from rich.table import Table
    from rich.text import Text

    from kerneldiff.core.report import format as fmt

    from .render import literal, us

    per = ", per pass" if hot.basis == "per_pass" else ""
    for side in ("a", "b"):
        t = Table(title=f"Host self time, {side.upper()}'s largest{per}", title_justify="left")
        t.add_column("host operation", overflow="ellipsis", no_wrap=True, max_width=max(16, width - 40))
        for col in ("A", "B", "gap"):
            t.add_column(col, justify="right", no_wrap=True)
        for r in hot.top[side][:n]:
            t.add_row(literal(r.name), us(r.a_us), us(r.b_us), fmt.gap(r.gap_us))
        out.print(t)
    t = Table(title=f"GPU launch-bound idle by the host operation running (A {us(hot.idle_us['a'])}, "
                    f"B {us(hot.idle_us['b'])}{per})", title_justify="left")
    t.add_column("host operation", overflow="ellipsis", no_wrap=True, max_width=max(16, width - 40))
    for col in ("A", "B", "gap"):
        t.add_column(col, justify="right", no_wrap=True)
    for r in hot.idle_by_op[:n]:
        t.add_row(literal(r.name), us(r.a_us), us(r.b_us), fmt.gap(r.gap_us))
    out.print(t)
    for note in hot.notes:
        out.print(Text("note: ", style="dim") + literal(note))
