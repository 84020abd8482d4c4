"""A comparison as GitHub-flavoured Markdown, short enough for a pull-request comment (under ~60
lines): the headline, the comparability verdict, the gap ledger, the top layers, operations and
fusion findings as tables. `render_markdown(cmp)` is what `compare --format markdown` prints and
what a CI gate can post; every number is written by the text report's formatters."""

from __future__ import annotations

import re

from kerneldiff.core.names.visible import visible
from kerneldiff.core.compare.layer_significance import critical
from kerneldiff.core.report import format as fmt
from kerneldiff.core.report import labels

TOP_LAYERS = 5
TOP_OPERATIONS = 6
TOP_FUSIONS = 5
TOP_LEDGER = 6
NAME_CELL = 60           # characters of a trace string in a cell (the full names are in the JSON report)

_SPECIAL = re.compile(r"([\\`*_\[\]|~])")   # what makes emphasis, code, links, cells or strikes


def md(s: object, limit: int | None = NAME_CELL) -> str:
    """A string from a trace as inert Markdown table text: control characters made visible,
    Markdown punctuation backslash-escaped, HTML's `<`, `>` and `&` as entities (GitHub renders
    inline HTML), cut to `limit` characters."""
    s = visible(str(s))
    if limit is not None and len(s) > limit:
        s = s[:limit - 1] + "…"
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", s)


def _table(head: list[str], rows: list[list[str]], right: int = 1) -> list[str]:
    """A GitHub table; columns from `right` on are right-aligned (numbers)."""
    align = ["---" if i < right else "---:" for i in range(len(head))]
    return ["| " + " | ".join(head) + " |", "| " + " | ".join(align) + " |",
            *("| " + " | ".join(r) + " |" for r in rows)]


def _headline(cmp) -> list[str]:
    A, B = md(cmp.a.label), md(cmp.b.label)
    per = " per pass" if cmp.basis == "per_pass" else ""
    na, nb = labels.divisors(cmp)
    rows = []
    w = getattr(cmp, "wall", None)
    if w is not None:
        rows.append([f"wall clock{per}", fmt.us(w.a_wall_us), fmt.us(w.b_wall_us), fmt.ratio(w.wall_ratio),
                     fmt.gap(w.wall_gap_us)])
    rows.append([f"kernel time{per}", fmt.us(cmp.a.gpu_time_us / na), fmt.us(cmp.b.gpu_time_us / nb),
                 fmt.ratio(cmp.ratio), fmt.gap(cmp.gap_us)])
    if w is not None:
        rows.append([f"GPU idle{per}", fmt.us(w.a_idle_us), fmt.us(w.b_idle_us), "", fmt.gap(w.idle_gap_us)])
    rows.append(["kernels · passes", f"{cmp.a.kernels:,} · {cmp.a.passes}", f"{cmp.b.kernels:,} · {cmp.b.passes}", "", ""])
    lines = [f"### kerneldiff: {A} vs {B} (phase {md(cmp.phase)})", ""]
    lines += _table(["", f"A: {A}", f"B: {B}", "A/B", "gap (A − B)"], rows)
    verdict = getattr(cmp, "comparability", None)
    if verdict is not None and w is not None:
        from kerneldiff.core.report.headline import headline

        h = headline(cmp)
        lines += ["", md(h.verdict, 400)]
        why = "; ".join(md(r, 200) for r in verdict.reasons)
        lines += ["", f"**{md(verdict.verdict.capitalize())}**" + (f": {why}" if why else "") + ("  " if h.left_out else "")]
        lines += [md(line, 300) + "  " for line in h.left_out]   # two spaces: a line break
    return lines


def _ledger(cmp) -> list[str]:
    ledger = getattr(cmp, "ledger", None) or []
    if not ledger:
        return []
    rows = [[md(e.cause), fmt.us(e.a_us), fmt.us(e.b_us), fmt.gap(e.gap_us)] for e in ledger[:TOP_LEDGER]]
    rest = ledger[TOP_LEDGER:]
    if rest:
        rows.append([f"{len(rest)} more", "", "", fmt.gap(sum(e.gap_us for e in rest))])
    w = getattr(cmp, "wall", None)
    if w is not None:
        rows.append(["**wall-clock gap**", fmt.us(w.a_wall_us), fmt.us(w.b_wall_us), f"**{fmt.gap(w.wall_gap_us)}**"])
    return ["", "#### Where the wall-clock gap goes", ""] + _table(["cause", "A", "B", "gap"], rows)


def _layers(cmp) -> list[str]:
    if not cmp.layers:
        return []
    compared = getattr(cmp, "layers_from", "both") == "both"
    rows = list(cmp.layers[:TOP_LAYERS])
    if cmp.outside_layers is not None:
        rows.append(cmp.outside_layers)
    body = [[labels.layer_name(l), fmt.us(l.a.total_us if l.a.kernels else None),
             fmt.us(l.b.total_us if l.b.kernels else None), fmt.ratio(l.ratio),
             fmt.gap(l.gap_us) if compared else fmt.ABSENT, fmt.gap(l.span_gap_us) if compared else fmt.ABSENT,
             md(l.slower_by) if compared and l.slower_by else fmt.ABSENT, "±" + fmt.us(l.spread_us) if l.spread_us is not None
             else fmt.ABSENT, fmt.t_value(l.t), fmt.t_value(l.departure_t) + ("\\*" if l.departs else "")]
            for l in rows]
    title = (f"#### Layers (largest gap first, {TOP_LAYERS} of {len(cmp.layers)})" if compared else
             f"#### Layers only on {cmp.layers_from.upper()} (nothing compared)")
    # the test's threshold in the header (a note under the table would cost the comment two lines)
    typical = f"t vs typical (\\* past ±{critical(len(cmp.layers)):.2f})"
    return ["", title, ""] + _table(["layer", "A total", "B total", "A/B", "gap", "span gap", "slower", "± passes", "t", typical],
                                    body)


def _operations(cmp) -> list[str]:
    if not cmp.operations:
        return []
    per = cmp.basis == "per_pass"
    body = [[md(labels.operation_label(o)), *(fmt.us(x) for x in labels.operation_times(cmp, o)), fmt.ratio(o.ratio),
             fmt.gap(o.gap_us)] for o in cmp.operations[:TOP_OPERATIONS]]
    cols = ["operation", "A/pass" if per else "A total", "B/pass" if per else "B total", "A/B", "gap"]
    return ["", "#### Operations (largest gap first" + (", per pass)" if per else ")"), ""] + _table(cols, body)


def _fusions(cmp) -> list[str]:
    fusions, launch_counts = labels.fusions_and_launch_counts(cmp.fusions)
    side = {"a": cmp.a.label, "b": cmp.b.label}
    out = []
    if launch_counts:   # one line: a comment's length is bounded
        out += ["", "_Launch-count differences (not fusions): " + "; ".join(
            f"{md(side[f.component_side], 24)} launches {f.occurrences} {md(f.fused_category)} memsets the other side "
            f"does not ({fmt.us(f.component_cost_us)})" for f in launch_counts) + "._"]
    if not fusions:
        return out
    body = [[md(f.kind), md(side[f.fused_side], 24), md(labels.fusion_what(f), 80), str(f.occurrences),
             fmt.gap(f.measured_saving_us), labels.estimated_saving(f)] for f in fusions[:TOP_FUSIONS]]
    more = len(fusions) - TOP_FUSIONS
    return out + (["", f"#### Fusion differences ({len(fusions)})", ""]
            + _table(["kind", "fused on", "what", "n", "measured", "est."], body, right=3)
            + ([f"and {more} more"] if more > 0 else []))


def render_markdown(cmp) -> str:
    """The comparison as Markdown (ends with a newline)."""
    lines = _headline(cmp) + _ledger(cmp) + _layers(cmp) + _operations(cmp) + _fusions(cmp)
    if cmp.warnings:
        lines += ["", f"_{labels.plural(len(cmp.warnings), 'warning')}: see `kerneldiff compare` for them._"]
    return "\n".join(lines) + "\n"
