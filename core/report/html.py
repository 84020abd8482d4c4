"""A comparison as one self-contained HTML page: no network, no fonts or scripts from elsewhere;
charts are inline SVG, laid out with CSS grids that reflow from a phone to a wide screen, and a few
lines of script sort the tables. Hovering a bar or a kernel shows its figures (SVG <title>).

Pure presentation: `render_html(cmp, pass_pairs)` turns the Comparison (and, for the pass drawn to
scale, the kernels `Session.pass_pairs` gives) into a string. Every number is written by the text
report's formatters (`format`, `labels`), so the page and `kerneldiff compare` agree digit for digit.
Every string from a trace goes through `esc`: control characters made visible, then HTML-escaped.
"""

from __future__ import annotations

import html as _html
import math

from functools import lru_cache

from kerneldiff.core.compare.one_sided import attention_counterparts
from kerneldiff.core.names.display import distinct_short_names
from kerneldiff.core.names.display import short_name as _short_name
from kerneldiff.core.names.visible import visible
from kerneldiff.core.report import format as fmt
from kerneldiff.core.report import labels

NAME_CELL = 72          # characters of a kernel or operation name in a cell (the title holds more)
TITLE_CHARS = 400       # characters of a string in a hover title
MAX_LAYERS = 80
MAX_PASS_BARS = 400     # passes in the per-pass chart (a longer run: the first ones, said so)
MAX_SHAPES = 25
LANES = 4               # streams drawn per side in the pass, busiest first
WIDTH = 1000            # SVG user units across a chart
MERGE = 0.6             # a kernel this close (units) to a block narrower than BLOCK joins it: what is
BLOCK = 2.0             # under a pixel or two is drawn as one block, so a lane stays under ~1,000 rects
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#86bcb6")
OTHER_COLOUR = "#a0a0a0"


@lru_cache(maxsize=4096)
def short_name(name: str, width: int) -> str:
    """names.short_name, once per distinct name (a pass repeats a few hundred names thousands of times)."""
    return _short_name(name, width)


def esc(s: object, limit: int | None = None) -> str:
    """A string from a trace as inert HTML text (also fit for a quoted attribute)."""
    s = visible(str(s))
    if limit is not None and len(s) > limit:
        s = s[:limit - 1] + "…"
    return _html.escape(s, quote=True)


def _num(text: str, value: float | None = None, cls: str = "") -> str:
    """A right-aligned cell; `value` sorts it (a missing value sorts last)."""
    v = value if value is not None and math.isfinite(value) else -1e300
    return f'<td class="num{(" " + cls) if cls else ""}" data-v="{v:.6g}">{_html.escape(text)}</td>'


def _gap_cls(gap: float | None) -> str:
    """Whose loss a gap is: A's (A slower) or B's; colours follow the sides, so `compare B A`
    paints the same rows in the same colours, mirrored."""
    if gap is None or not math.isfinite(gap) or gap == 0:
        return ""
    return "lose-a" if gap > 0 else "lose-b"


def _gap(gap: float | None) -> str:
    return _num(fmt.gap(gap), gap, _gap_cls(gap))


def _table(cid: str, head: list[tuple[str, bool]], rows: list[str], caption: str = "") -> str:
    """A sortable table: head is (title, numeric) per column; rows are `<tr>…</tr>` strings."""
    th = "".join(f'<th{" class=num" if numeric else ""}>{_html.escape(t)}</th>' for t, numeric in head)
    cap = f"<caption>{caption}</caption>" if caption else ""
    return (f'<div class="scroll"><table class="sort" id="{cid}">{cap}<thead><tr>{th}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def _bar_svg(parts: list[tuple[float, float, str, str]], height: int = 14) -> str:
    """One horizontal SVG strip: (x0, x1 in 0..1, css class, title) rectangles."""
    rects = []
    for x0, x1, cls, title in parts:
        x0, x1 = max(0.0, min(1.0, x0)), max(0.0, min(1.0, x1))
        w = max((x1 - x0) * WIDTH, 0.0)
        t = f"<title>{title}</title>" if title else ""
        rects.append(f'<rect class="{cls}" x="{x0 * WIDTH:.2f}" y="0" width="{max(w, 0.8):.2f}" height="10">{t}</rect>')
    return (f'<svg viewBox="0 0 {WIDTH} 10" preserveAspectRatio="none" style="height:{height}px" role="img">'
            f'{"".join(rects)}</svg>')


# --- header -------------------------------------------------------------------------------------
def _card(cmp, side, other) -> str:
    per = " per pass" if cmp.basis == "per_pass" else ""
    na, nb = labels.divisors(cmp)
    n = na if side.key == "a" else nb
    w = getattr(cmp, "wall", None)
    wall = getattr(w, f"{side.key}_wall_us") if w is not None else None
    idle = getattr(w, f"{side.key}_idle_us") if w is not None else None
    gpu = side.gpu.strip()
    lines = [f'<div class="card {side.key}"><div class="who"><b>{side.key.upper()}</b> {esc(side.label, 120)}</div>']
    if gpu and gpu != side.label:
        lines.append(f'<div class="muted">{esc(gpu, 120)}</div>')
    lines.append('<div class="figs">')
    lines.append(f'<div><div class="muted">wall clock{per}</div><div class="big">{esc(fmt.us(wall))}</div></div>')
    lines.append(f'<div><div class="muted">kernel time{per}</div><div class="big k">{esc(fmt.us(side.gpu_time_us / n))}'
                 f'</div></div>')
    if idle is not None:
        lines.append(f'<div><div class="muted">GPU idle{per}</div><div class="big k">{esc(fmt.us(idle))}</div></div>')
    lines.append("</div>")
    lines.append(f'<div class="muted">{esc(fmt.us(side.gpu_time_us))} kernel time · {side.kernels:,} kernels · '
                 f'{labels.plural(side.passes, "pass", "passes")} · {side.layers_per_step} layers · '
                 f'{esc(side.vendor or "vendor unknown")}</div>')
    ex = getattr(side, "excluded", None)
    if ex is not None and getattr(ex, "kernels", 0):
        lines.append(f'<div class="warn">excluded: {ex.kernels:,} kernels, {esc(fmt.us(ex.time_us))} ({esc(ex.why, 300)})</div>')
    lines.append(f'<div class="muted small">passes from {esc(side.pass_source or fmt.ABSENT, 160)}; phases from '
                 f'{esc(side.phase_source or fmt.ABSENT, 160)}; layers from {esc(side.layer_source or fmt.ABSENT, 160)}'
                 f'</div></div>')
    return "".join(lines)


def _headline(cmp) -> str:
    """Wall-clock ratio first, kernel-time ratio beside it, and what the idle gap explains."""
    per = " per pass" if cmp.basis == "per_pass" else ""
    w = getattr(cmp, "wall", None)
    parts = []
    if w is not None:
        parts.append(f'<span class="hl">wall time A/B{per} <b>{fmt.ratio(w.wall_ratio)}</b> '
                     f'(gap <span class="{_gap_cls(w.wall_gap_us)}">{fmt.gap(w.wall_gap_us)}</span>)</span>')
    parts.append(f'<span class="hl">kernel time A/B{per} <b>{fmt.ratio(cmp.ratio)}</b> '
                 f'(gap <span class="{_gap_cls(cmp.gap_us)}">{fmt.gap(cmp.gap_us)}</span>)</span>')
    if w is not None and w.idle_share is not None and 0 <= w.idle_share <= 1:
        s = f"idle is {labels.share(w.idle_share)} of the wall gap"
        if w.launch_bound_share is not None and 0 <= w.launch_bound_share <= 1:
            s += f" (launch-bound: {labels.share(w.launch_bound_share)} of that)"
        parts.append(f'<span class="hl">{s}</span>')
    elif w is not None and w.wall_gap_us != 0:
        parts.append(f'<span class="hl">idle gap {fmt.gap(w.idle_gap_us)} (launch-bound {fmt.gap(w.launch_bound_gap_us)})</span>')
    words = ""
    if w is not None and getattr(cmp, "comparability", None) is not None:   # the core's sentence, as the text report says it
        from kerneldiff.core.report.headline import headline

        words = f'<p class="words">{esc(headline(cmp).verdict, 1000)}</p>'
    return f'{words}<p class="headline">{" ".join(parts)}</p>'


def _verdict(cmp) -> str:
    c = getattr(cmp, "comparability", None)
    if c is None:
        return ""
    cls = {"comparable": "ok", "partly": "partly"}.get(c.verdict, "not")
    reasons = "".join(f"<li>{esc(r, 600)}</li>" for r in c.reasons)
    notes = "".join(f'<li class="muted">{esc(r, 600)}</li>' for r in getattr(c, "notes", []) or [])
    return (f'<div class="verdict {cls}"><b>{esc(c.verdict.capitalize())}</b>'
            + (f"<ul>{reasons}{notes}</ul>" if reasons or notes else "") + "</div>")


def _header(cmp) -> str:
    title = f"{esc(cmp.a.label, 80)} <span class=muted>vs</span> {esc(cmp.b.label, 80)}"
    basis = (' <span class="pill">per pass: the traces hold different numbers of passes</span>'
             if cmp.basis == "per_pass" else "")
    return (f'<header><h1>{title}</h1><div class="muted">kerneldiff · phase <b>{esc(cmp.phase)}</b>{basis}</div>'
            f'{_headline(cmp)}{_verdict(cmp)}<div class="cards">{_card(cmp, cmp.a, cmp.b)}{_card(cmp, cmp.b, cmp.a)}'
            f'</div></header>')


# --- the gap ledger -------------------------------------------------------------------------------
def _ledger(cmp) -> str:
    ledger = getattr(cmp, "ledger", None) or []
    if not ledger:
        return ""
    w = getattr(cmp, "wall", None)
    total = w.wall_gap_us if w is not None else sum(e.gap_us for e in ledger)
    cum, spans = 0.0, []
    for e in ledger:
        spans.append((cum, cum + e.gap_us))
        cum += e.gap_us
    lo = min([0.0, total] + [min(a, b) for a, b in spans])
    hi = max([0.0, total] + [max(a, b) for a, b in spans])
    scale = (hi - lo) or 1.0

    def x(v: float) -> float:
        return (v - lo) / scale

    zero = x(0.0)
    rows = []
    for e, (a, b) in zip(ledger, spans):
        cls = "a" if e.gap_us > 0 else "b"
        title = esc(f"{e.cause}: A {fmt.us(e.a_us)}, B {fmt.us(e.b_us)}, gap {fmt.gap(e.gap_us)}", TITLE_CHARS)
        bar = _bar_svg([(x(min(a, b)), x(max(a, b)), cls, title), (zero - 0.001, zero + 0.001, "zero", "")])
        detail = f'<div class="muted small">{esc(e.detail, 300)}</div>' if getattr(e, "detail", "") else ""
        split = ""
        if getattr(e, "count_gap_us", None) is not None and getattr(e, "speed_gap_us", None) is not None:
            split = (f'<br><span class="muted small">launches {fmt.gap(e.count_gap_us)} · slower '
                     f'{fmt.gap(e.speed_gap_us)}</span>')
        rows.append(f'<div class="lab">{esc(e.cause, 60)}{detail}</div><div class="bar">{bar}</div>'
                    f'<div class="num"><span class="{_gap_cls(e.gap_us)}">{fmt.gap(e.gap_us)}</span>'
                    f' <span class="muted small">A {fmt.us(e.a_us)} · B {fmt.us(e.b_us)}</span>{split}</div>')
    cls = "a" if total > 0 else "b"
    bar = _bar_svg([(x(min(0.0, total)), x(max(0.0, total)), cls + " total",
                     esc(f"wall-clock gap {fmt.gap(total)}")), (zero - 0.001, zero + 0.001, "zero", "")])
    # the zero line's label above the bars: right of it A loses time, left of it B does
    rows.insert(0, f'<div class="lab"></div><div class="bar zerolab"><span style="left:{zero * 100:.2f}%;transform:translateX({-100 * min(max(zero, 0.0), 1.0):.0f}%)">0</span>'
                   f'{"<i class=l>← B loses</i>" if zero > 0.15 else ""}{"<i class=r>A loses →</i>" if zero < 0.85 else ""}'
                   '</div><div class="num"></div>')
    rows.append(f'<div class="lab"><b>wall-clock gap</b></div><div class="bar">{bar}</div>'
                f'<div class="num"><b class="{_gap_cls(total)}">{fmt.gap(total)}</b>'
                + (f' <span class="muted small">A {fmt.us(w.a_wall_us)} · B {fmt.us(w.b_wall_us)}</span>' if w else "")
                + "</div>")
    per = ", per pass" if cmp.basis == "per_pass" else ""
    return (f'<section id="ledger"><h2>Where the wall-clock gap goes</h2><p class="muted">Each cause moves the gap '
            f'(A − B{per}) from 0 to the wall-clock gap: a bar to the right is time A loses, to the left time B '
            f'loses; launches: the part of an operation\'s gap from launching more (or fewer) kernels, slower: from '
            f'the same kernels taking longer.</p><div class="rows ledger">{"".join(rows)}</div>{_host(cmp)}</section>')


def _host(cmp) -> str:
    """The host time of the passes: what stands behind launch-bound idle (when both sides have it)."""
    host = getattr(cmp, "host", None)
    ha, hb = (host.a, host.b) if host else (None, None)
    if not ha or not hb:
        return ""
    from kerneldiff.core.report.headline import HOST_PARTS

    rows = [f"<tr><td>{_html.escape(label)}</td>{_num(fmt.us(a), a)}{_num(fmt.us(b), b)}{_gap(a - b)}</tr>"
            for key, label in HOST_PARTS for a, b in [(getattr(ha, key), getattr(hb, key))]]
    per = " (per pass)" if cmp.basis == "per_pass" else ""
    return (f"<h3>Host time of the passes{per}: what stands behind launch-bound idle</h3>"
            + _table("t-host", [("", False), ("A", True), ("B", True), ("gap", True)], rows))


# --- layers -------------------------------------------------------------------------------------
def _layer_test(l) -> str:
    """The layer's spread and t values beside its gap (`core.compare.layer_significance`)."""
    span = (f'span gap {fmt.gap(l.span_gap_us)} · slower: {esc(l.slower_by)}' if l.span_gap_us is not None else "")
    if l.spread_us is None and l.t is None:
        return f'<br><span class="muted small">{span}</span>' if span else ""
    mark = "*" if l.departs else ""
    return (f'<br><span class="muted small">{span}{" · " if span else ""}±{fmt.us(l.spread_us)} · t '
            f'{fmt.t_value(l.t)} · vs typical {fmt.t_value(l.departure_t)}{mark}</span>')


def _layers(cmp) -> str:
    if not cmp.layers:
        return ""
    compared = getattr(cmp, "layers_from", "both") == "both"
    rows = list(cmp.layers[:MAX_LAYERS])
    if cmp.outside_layers is not None:
        rows.append(cmp.outside_layers)
    # the scale is the layers': the time outside them (embedding, lm_head, sampling) is often ten
    # layers' worth, and would flatten every layer's bar; it is drawn cut at the scale's end
    top = max((max(l.a.total_us, l.b.total_us) for l in rows if l.layer >= 0), default=0.0)
    top = top or max((max(l.a.total_us, l.b.total_us) for l in rows), default=0.0) or 1.0
    out = []
    for l in rows:
        ta = l.a.total_us if l.a.kernels else None
        tb = l.b.total_us if l.b.kernels else None
        name = labels.layer_name(l)
        cut = max(ta or 0.0, tb or 0.0) > top * 1.0001
        bars = _bar_svg([(0, (ta or 0) / top, "a", esc(f"layer {name}, A: {fmt.us(ta)} ({l.a.kernels:,} kernels)"))],
                        9) + _bar_svg([(0, (tb or 0) / top, "b", esc(f"layer {name}, B: {fmt.us(tb)} "
                                                                      f"({l.b.kernels:,} kernels)"))], 9)
        gap = (f'<span class="{_gap_cls(l.gap_us)}">{fmt.gap(l.gap_us)}</span>' if compared else fmt.ABSENT)
        mark = ' <span class="muted small" title="drawn cut: off the layers\' scale">(cut)</span>' if cut else ""
        out.append(f'<div class="lab">{"layer " if l.layer >= 0 else ""}{name}{mark}</div>'
                   f'<div class="bar{" cut" if cut else ""}">{bars}</div>'
                   f'<div class="num">{fmt.us(ta)} <span class="muted">/</span> {fmt.us(tb)} '
                   f'<span class="muted">{fmt.ratio(l.ratio)}</span> {gap}{_layer_test(l) if compared else ""}</div>')
    more = len(cmp.layers) - len(rows) + (1 if cmp.outside_layers is not None else 0)
    note = f'<p class="muted">and {more} more layers (the JSON report holds them all)</p>' if more > 0 else ""
    title = "Layers, slowest first (largest gap)" if compared else f"Layers only on {cmp.layers_from.upper()}: nothing compared"
    return (f'<section id="layers"><h2>{title}</h2><p class="muted">Total over the passes: '
            f'<span class="key a"></span> A, <span class="key b"></span> B; then A / B, A/B and the gap.</p>'
            f'<div class="rows">{"".join(out)}</div>{note}'
            + (f'<p class="muted small">{esc(labels.layer_test_note(len(cmp.layers)))}</p>'
               if compared and any(l.t is not None for l in cmp.layers) else "") + '</section>')


# --- operations ---------------------------------------------------------------------------------
def _operations(cmp) -> str:
    if not cmp.operations:
        return ""
    per = cmp.basis == "per_pass"
    top = max((max(x or 0.0 for x in labels.operation_times(cmp, o)) for o in cmp.operations), default=0.0) or 1.0
    rows = []
    for o in cmp.operations:
        ta, tb = labels.operation_times(cmp, o)
        bars = (_bar_svg([(0, (ta or 0) / top, "a", esc(f"A {fmt.us(ta)}"))], 7)
                + _bar_svg([(0, (tb or 0) / top, "b", esc(f"B {fmt.us(tb)}"))], 7))
        ex = "; ".join(f"{k.upper()}: " + ", ".join(short_name(n, 60) for n in o.examples.get(k, [])[:2])
                       for k in ("a", "b") if o.examples.get(k))
        rows.append(f'<tr><td class="name" title="{esc(ex, TITLE_CHARS)}">{esc(labels.operation_label(o), NAME_CELL)}</td>'
                    f'{_num(fmt.us(ta), ta)}{_num(fmt.us(tb), tb)}{_num(fmt.ratio(o.ratio), o.ratio)}{_gap(o.gap_us)}'
                    f'<td class="minibar">{bars}</td></tr>')
    head = [("operation", False), ("A/pass" if per else "A total", True), ("B/pass" if per else "B total", True),
            ("A/B", True), ("gap", True), ("", False)]
    return (f'<section id="operations"><h2>Operations</h2><p class="muted">Largest gap first'
            f'{", per pass" if per else ""}; click a column to sort.</p>{_table("t-operations", head, rows)}</section>')


# --- fusion findings ----------------------------------------------------------------------------
def _launch_counts(cmp, found) -> str:
    """Extra memsets one side launches: a launch-count difference, not a fusion."""
    if not found:
        return ""
    side = {"a": cmp.a.label, "b": cmp.b.label}
    rows = [f'<tr><td>{esc(side[f.component_side], 40)}</td><td class="name">{esc(labels.fusion_what(f), 160)}</td>'
            f'{_num(str(f.occurrences), f.occurrences)}{_num(fmt.us(f.component_cost_us), f.component_cost_us)}</tr>'
            for f in found]
    items = "".join(f"<li><div>{esc(f.evidence, 1000)}</div></li>" for f in found)
    head = [("more on", False), ("what", False), ("n", True), ("time", True)]
    return (f'<h2>Launch-count differences (not fusions)</h2>{_table("t-launch-counts", head, rows)}'
            f'<ol class="evidence">{items}</ol>')


def _fusions(cmp) -> str:
    fusions, launch_counts = labels.fusions_and_launch_counts(cmp.fusions)
    if not fusions:
        return f'<section id="fusion">{_launch_counts(cmp, launch_counts)}</section>' if launch_counts else ""
    side = {"a": cmp.a.label, "b": cmp.b.label}
    rows, items = [], []
    for f in fusions:
        rows.append(f'<tr><td>{esc(f.kind)}</td><td>{esc(side[f.fused_side], 40)}</td>'
                    f'<td class="name">{esc(labels.fusion_what(f), 160)}</td>{_num(str(f.occurrences), f.occurrences)}'
                    f'{_num(fmt.gap(f.measured_saving_us), f.measured_saving_us)}'   # a saving, not A − B: no side's colour
                    f'{_num(labels.estimated_saving(f), f.estimated_saving.total_all_us if f.estimated_saving else None)}</tr>')
        groups = []
        for key, group in ((f.fused_side, f.fused_group), (f.component_side, f.component_group)):
            if group:
                short = distinct_short_names([k.name for k in group], 44)
                ks = "".join(f"<li>{esc(labels.group_kernel(k, short), 200)}</li>" for k in group)
                groups.append(f'<div class="group {key}"><b>{key.upper()}</b><ul>{ks}</ul></div>')
        if not groups:     # findings without op-level groups: the kernels by name
            for key, names in ((f.fused_side, f.fused_kernels), (f.component_side, f.component_kernels)):
                if names:
                    ks = "".join(f'<li title="{esc(n, TITLE_CHARS)}">{esc(short_name(n, 80))}</li>' for n in names[:8])
                    groups.append(f'<div class="group {key}"><b>{key.upper()}</b><ul>{ks}</ul></div>')
        items.append(f'<li><div>{esc(f.evidence, 1000)} <span class="muted">(confidence {f.confidence:.2f})</span></div>'
                     f'<div class="groups">{"".join(groups)}</div></li>')
    head = [("kind", False), ("fused on", False), ("what", False), ("n", True), ("measured", True), ("est.", True)]
    return (f'<section id="fusion">{_launch_counts(cmp, launch_counts)}<h2>Fusion differences</h2>'
            f'{_table("t-fusions", head, rows)}<ol class="evidence">{"".join(items)}</ol></section>')


# --- shapes -------------------------------------------------------------------------------------
def _peaks(cmp) -> str:
    out = []
    for key in ("a", "b"):
        p = (cmp.peaks or {}).get(key)
        if p is None:
            out.append(f"{key.upper()} none (GPU not in the table)")
            continue
        bf = p.tflops.get("bf16") or p.tflops.get("fp16")
        out.append(f"{key.upper()} {esc(p.name)} ({'bf16' if p.tflops.get('bf16') else 'fp16'} {fmt.rate(bf)} TFLOP/s, "
                   f"{fmt.rate(p.hbm_tbps)} TB/s" + (", overridden" if p.overridden else "") + ")")
    return '<p class="muted">Peaks: ' + "; ".join(out) + "</p>"


def _shape_table(cmp, rows, cid: str, shape_of, with_op: bool, pairs=None) -> str:
    per = cmp.basis == "per_pass"
    rows = rows[:MAX_SHAPES]
    pairs = pairs or {}
    body = []
    for i, r in enumerate(rows):
        op, shape = shape_of(r)
        if i in pairs:   # one side only; the other runs the same attention recorded otherwise
            shape += " ↔"
        ta, tb = labels.shape_times(cmp, r)
        cells = (f"<td>{esc(op)}</td>" if with_op else "") + f'<td class="shape">{esc(shape)}</td><td>{esc(r.dtype)}</td>'
        cells += _num(fmt.us(ta), ta) + _num(fmt.us(tb), tb)
        cells += _num(labels.rate_cell(r.a), r.a.pct_peak) + _num(labels.rate_cell(r.b), r.b.pct_peak)
        cells += _num(labels.roof_cell(r.a), r.a.pct_roofline) + _num(labels.roof_cell(r.b), r.b.pct_roofline)
        body.append(f"<tr>{cells}{_gap(r.gap_us)}</tr>")
    head = ([("op", False)] if with_op else []) + [("shape", False), ("dtype", False),
                                                    ("A/pass" if per else "A time", True),
                                                    ("B/pass" if per else "B time", True),
                                                    ("A TFLOP/s % peak", True), ("B TFLOP/s % peak", True),
                                                    ("A roof", True), ("B roof", True), ("gap", True)]
    return _table(cid, head, body)


def _shapes(cmp) -> str:
    gemm, attn = getattr(cmp, "gemm_shapes", None) or [], getattr(cmp, "attention_shapes", None) or []
    if not gemm and not attn:
        return ""
    parts = [f'<section id="shapes"><h2>GEMM and attention shapes</h2>{_peaks(cmp)}']
    if gemm:
        parts.append(f"<h3>GEMM shapes, m×n×k (largest gap first{', ' + str(MAX_SHAPES) + ' shown' if len(gemm) > MAX_SHAPES else ''})</h3>")
        cover = labels.gemm_coverage(cmp)
        if cover:
            parts.append(f'<p class="muted small">{esc(cover.capitalize())}</p>')
        parts.append(_shape_table(cmp, gemm, "t-gemm", labels.gemm_shape, True))
    if attn:
        parts.append(f"<h3>Attention shapes (largest gap first{', ' + str(MAX_SHAPES) + ' shown' if len(attn) > MAX_SHAPES else ''})</h3>")
        pairs = attention_counterparts(cmp)
        parts.append(_shape_table(cmp, attn, "t-attention", labels.attention_shape, False, pairs))
        by_why: dict[str, list[str]] = {}
        for i, c in sorted(pairs.items()):
            if i < MAX_SHAPES and not (c.index in pairs and c.index < i and c.index < MAX_SHAPES):
                why = " and ".join(w for w, on in (("other KV heads (GQA expanded)", c.kv_heads),
                                                   ("another causality", c.causal)) if on) or "another record"
                by_why.setdefault(why, []).append(f"{labels.attention_shape(attn[i])[1]} ↔ "
                                                  f"{labels.attention_shape(attn[c.index])[1]}")
        if by_why:   # a pair per reason as the example, and how many pairs
            parts.append('<p class="muted small">↔: run by one side only; the other side runs the same attention '
                         "(operator, batch, query heads, lengths, head dims, dtype) recorded with "
                         + "; ".join(f"{esc(w)}: {len(p)} pair{'s' if len(p) != 1 else ''}, e.g. {esc(p[0])}"
                                     for w, p in by_why.items()) + ".</p>")
        if labels.assumed_causal(attn[:MAX_SHAPES]):
            parts.append('<p class="muted small">* causal assumed (no mask, equal query and key lengths: is_causal '
                         "not recorded)</p>")
    parts.append('<p class="muted small">TFLOP/s and the % of the dtype\'s peak over the shape\'s kernel time; roof: '
                 "the roofline's compute or memory roof the work sits under, and how close it gets.</p></section>")
    return "".join(parts)


# --- timeline -----------------------------------------------------------------------------------
def _timeline_table(cmp) -> str:
    ta, tb = getattr(cmp.a, "timeline", None), getattr(cmp.b, "timeline", None)
    if not ta or not tb:
        return ""
    na, nb = labels.divisors(cmp)
    rows = []
    for label, key in (("wall (first to last GPU activity)", "span_us"), ("GPU busy (any stream)", "busy_us"),
                       ("kernel time (summed)", "kernel_us"), ("idle", "idle_us"),
                       ("  launch-bound", "launch_bound_us"), ("  sync / host waits", "sync_us"),
                       ("  other", "other_us"), ("stream overlap", "overlap_us")):
        a, b = getattr(ta, key) / na, getattr(tb, key) / nb
        r = a / b if a > 0 and b > 0 else None
        rows.append(f'<tr><td class="{"sub" if label.startswith(" ") else ""}">{label.strip()}</td>'
                    f"{_num(fmt.us(a), a)}{_num(fmt.us(b), b)}{_num(fmt.ratio(r), r)}{_gap(a - b)}</tr>")
    la, lb = ta.launch, tb.launch
    for label, key in (("launch call p50", "api_p50_us"), ("launch → start p50", "delay_p50_us"),
                       ("launch → start p95", "delay_p95_us")):
        a, b = getattr(la, key), getattr(lb, key)
        r = a / b if a and b else None
        g = a - b if a is not None and b is not None else None
        rows.append(f"<tr><td>{label}</td>{_num(fmt.us(a), a)}{_num(fmt.us(b), b)}{_num(fmt.ratio(r), r)}{_gap(g)}</tr>")
    head = [("", False), ("A", True), ("B", True), ("A/B", True), ("gap", True)]
    per = " (per pass)" if cmp.basis == "per_pass" else ""
    return f"<h3>Wall clock, GPU idle, launches{per}</h3>" + _table("t-timeline", head, rows)


def _pass_chart(cmp) -> str:
    """Every pass of both sides: wall span as a bar, busy solid and idle pale, on one scale."""
    pa = cmp.a.timeline.passes if cmp.a.timeline else ()
    pb = cmp.b.timeline.passes if cmp.b.timeline else ()
    n = max(len(pa), len(pb))
    if n == 0:
        return ""
    shown = min(n, MAX_PASS_BARS)
    top = max([p.span_us for p in pa[:shown] + pb[:shown]] + [0.0]) or 1.0
    slot = WIDTH / shown
    bar = slot * 0.42
    rects = []
    for i in range(shown):
        for k, (side, pp) in enumerate((("a", pa), ("b", pb))):
            if i >= len(pp):
                continue
            p = pp[i]
            x = i * slot + slot * 0.06 + k * bar
            h_span = 100 * p.span_us / top
            h_busy = 100 * p.busy_us / top
            title = esc(f"pass {_number(pa, pb, i)} ({p.phase}), {side.upper()}: wall {fmt.us(p.span_us)}, busy "
                        f"{fmt.us(p.busy_us)}, idle {fmt.us(p.idle_us)}, {p.kernels:,} kernels")
            rects.append(f'<g><title>{title}</title><rect class="{side} idle" x="{x:.2f}" y="{100 - h_span:.2f}" '
                         f'width="{bar:.2f}" height="{h_span:.2f}"/><rect class="{side}" x="{x:.2f}" '
                         f'y="{100 - h_busy:.2f}" width="{bar:.2f}" height="{h_busy:.2f}"/></g>')
    more = f" (the first {shown} of {n})" if shown < n else ""
    return (f'<h3>Every pass: wall clock, busy and idle{more}</h3><p class="muted">Per pass, <span class="key a">'
            f'</span> A then <span class="key b"></span> B: the bar is the wall clock, its solid part the GPU busy, the '
            f'pale part idle; the tallest is {fmt.us(top)}.</p>'
            f'<svg class="passes" viewBox="0 0 {WIDTH} 100" preserveAspectRatio="none" role="img">{"".join(rects)}</svg>'
            f'<div class="axis"><span>pass {_number(pa, pb, 0)}</span><span>pass {_number(pa, pb, shown - 1)}</span></div>')


def _number(pa, pb, i: int) -> int:
    """The one number of the pass at place i (A's; B's where A has none there)."""
    return int((pa[i] if i < len(pa) else pb[i]).pass_)


def _colours(pp) -> dict[str, str]:
    """A colour per category, the categories with the most time in the drawn pass first."""
    total: dict[str, float] = {}
    for side in (pp.a, pp.b):
        for c, d in zip(side.categories, side.dur.tolist()):
            total[c] = total.get(c, 0.0) + d
    order = sorted(total, key=lambda c: (-total[c], c))
    return {c: PALETTE[i] if i < len(PALETTE) else OTHER_COLOUR for i, c in enumerate(order)}


def _lane(side, idx, scale: float, colours: dict[str, str]) -> str:
    """One stream's kernels as blocks; narrow neighbours are drawn as one block (MERGE, BLOCK)."""
    ts, dur = side.ts, side.dur
    rects = []
    run: list[int] = []

    def flush() -> None:
        if not run:
            return
        x0 = ts[run[0]] * scale
        x1 = max(ts[j] + dur[j] for j in run) * scale
        main = max(run, key=lambda j: dur[j])
        if len(run) == 1:
            title = (f"{short_name(side.names[main], 160)} · {side.categories[main]} · {fmt.us(dur[main])} at "
                     f"{fmt.us(ts[main])}" + (f" · layer {side.layer[main]}" if side.layer[main] >= 0 else ""))
        else:
            title = (f"{len(run)} kernels, {fmt.us(sum(dur[j] for j in run))} from {fmt.us(ts[run[0]])}; longest: "
                     f"{short_name(side.names[main], 120)}")
        wide = ' class="w"' if x1 - x0 > 4 else ""     # an outline only where it leaves the block visible
        rects.append(f'<rect{wide} x="{x0:.2f}" y="0" width="{max(x1 - x0, 0.5):.2f}" height="10" '
                     f'fill="{colours.get(side.categories[main], OTHER_COLOUR)}"><title>{esc(title, TITLE_CHARS)}'
                     f"</title></rect>")
        run.clear()

    end = -math.inf
    for j in idx:
        x0, x1 = ts[j] * scale, (ts[j] + dur[j]) * scale
        if run and (x0 > end + MERGE or end - ts[run[0]] * scale > BLOCK or x1 - x0 > BLOCK):
            flush()
        if not run:
            end = -math.inf
        run.append(int(j))
        end = max(end, x1)
    flush()
    return (f'<svg viewBox="0 0 {WIDTH} 10" preserveAspectRatio="none" role="img">{"".join(rects)}</svg>')


def _busy_lane(starts, ends, scale: float, side: str, span: float) -> str:
    rects = [f'<rect class="{side} idle" x="0" y="0" width="{span * scale:.2f}" height="10"/>']
    # merge what would fall within one unit: the lane stays bounded however many kernels there are
    cur0 = cur1 = None
    for s, e in zip(starts.tolist(), ends.tolist()):
        if cur1 is not None and s * scale <= cur1 * scale + MERGE:
            cur1 = max(cur1, e)
            continue
        if cur0 is not None:
            rects.append(f'<rect class="{side}" x="{cur0 * scale:.2f}" y="0" width="{max((cur1 - cur0) * scale, 0.3):.2f}" height="10"/>')
        cur0, cur1 = s, e
    if cur0 is not None:
        rects.append(f'<rect class="{side}" x="{cur0 * scale:.2f}" y="0" width="{max((cur1 - cur0) * scale, 0.3):.2f}" height="10"/>')
    return f'<svg viewBox="0 0 {WIDTH} 10" preserveAspectRatio="none" role="img">{"".join(rects)}</svg>'


def _drawn_pass(cmp, pp) -> str:
    """One pass of both sides to scale on one time axis: busy against idle, then the kernels of the
    busiest streams, coloured by category."""
    if pp is None or (len(pp.a) == 0 and len(pp.b) == 0):
        return ""
    from kerneldiff.core.compare.pass_pairs import busy_spans

    ends = [float((s.ts + s.dur).max()) for s in (pp.a, pp.b) if len(s)]
    span = max(ends) if ends else 0.0
    scale = WIDTH / (span or 1.0)
    colours = _colours(pp)
    rows = []
    for side in (pp.a, pp.b):
        p = side.passes[0] if side.passes else None
        what = f"pass {p.number} ({esc(p.phase)})" if p else "no such pass"
        if len(side) == 0:
            rows.append(f'<div class="lab"><b>{side.key.upper()}</b> {what}</div><div class="lane muted">no kernels</div>')
            continue
        s0, s1 = busy_spans(side)
        busy = float((s1 - s0).sum())
        mine = float((side.ts + side.dur).max() - side.ts.min())
        title = f"{side.key.upper()}: wall {fmt.us(mine)}, busy {fmt.us(busy)}, idle {fmt.us(mine - busy)}"
        rows.append(f'<div class="lab" title="{esc(title)}"><b>{side.key.upper()}</b> busy/idle</div>'
                    f'<div class="lane">{_busy_lane(s0, s1, scale, side.key, mine)}</div>')
        streams = side.stream.tolist()
        by: dict[int, list[int]] = {}
        for j, s in enumerate(streams):
            by.setdefault(s, []).append(j)
        busiest = sorted(by, key=lambda s: (-float(side.dur[by[s]].sum()), s))
        for s in busiest[:LANES]:
            rows.append(f'<div class="lab">stream {s}</div><div class="lane">{_lane(side, by[s], scale, colours)}</div>')
        if len(busiest) > LANES:
            rows.append(f'<div class="lab muted small">+{len(busiest) - LANES} streams</div><div></div>')
    ticks = "".join(f"<span>{fmt.us(span * f)}</span>" for f in (0, 0.25, 0.5, 0.75, 1))
    legend = "".join(f'<span><i style="background:{c}"></i>{esc(cat, 40)}</span>' for cat, c in list(colours.items())[:12])
    pa, pb = (pp.a.passes[0] if pp.a.passes else None), (pp.b.passes[0] if pp.b.passes else None)
    name = pa or pb
    label = f"Pass {name.number}" if name else "The pass"
    why = ""
    if pa and pb:
        why = (f" — A {fmt.us(pa.span_us)}, B {fmt.us(pb.span_us)}, gap "
               f'<span class="{_gap_cls(pa.span_us - pb.span_us)}">{fmt.gap(pa.span_us - pb.span_us)}</span>')
    return (f'<h3>{label} to scale{why}</h3><p class="muted">Both sides from the pass\'s first kernel, on one time '
            f'axis; hover a block for its kernel (neighbours closer than a pixel are drawn as one block).</p>'
            f'<div class="lanes">{"".join(rows)}<div></div><div class="axis">{ticks}</div></div>'
            f'<div class="legend">{legend}</div>')


def _timeline(cmp, pp) -> str:
    body = _timeline_table(cmp) + _pass_chart(cmp) + _drawn_pass(cmp, pp)
    return f'<section id="timeline"><h2>Timeline</h2>{body}</section>' if body else ""


def _warnings(cmp) -> str:
    if not cmp.warnings:
        return ""
    items = "".join(f"<li>{esc(w, 2000)}</li>" for w in cmp.warnings)
    return (f'<section id="warnings"><details><summary><h2>Warnings ({len(cmp.warnings)})</h2></summary>'
            f"<ul>{items}</ul></details></section>")


CSS = """
:root{--a:#2563eb;--b:#d9480f;--fg:#1c2430;--muted:#667085;--bg:#fff;--line:#e4e7ec;--card:#f8fafc;--pale:.28}
@media (prefers-color-scheme:dark){:root{--a:#6ea8fe;--b:#ff922b;--fg:#e6e8eb;--muted:#98a2b3;--bg:#14171c;
--line:#2b313a;--card:#1b1f26}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:1280px;margin:0 auto;padding:14px}
h1{font-size:1.35em;margin:.2em 0;overflow-wrap:anywhere}h2{font-size:1.15em;margin:1.4em 0 .4em}
h3{font-size:1em;margin:1.1em 0 .4em}
.muted{color:var(--muted)}.small{font-size:.85em}
.pill{background:var(--card);border:1px solid var(--line);border-radius:9px;padding:0 6px;font-size:.85em}
nav{position:sticky;top:0;background:var(--bg);border-bottom:1px solid var(--line);padding:6px 0;z-index:2;
overflow-x:auto;white-space:nowrap}
nav a{margin-right:14px;color:inherit}
.headline{font-size:1.05em}.hl{display:inline-block;margin-right:18px}.words{font-size:1.12em;font-weight:600;margin:.4em 0}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:12px}
.card{background:var(--card);border:1px solid var(--line);border-left:5px solid var(--a);border-radius:6px;padding:10px 12px;
overflow-wrap:anywhere}
.card.b{border-left-color:var(--b)}
.figs{display:flex;flex-wrap:wrap;gap:6px 22px;margin:6px 0}
.big{font-size:1.7em;font-weight:650;font-variant-numeric:tabular-nums}.big.k{font-size:1.25em;font-weight:550}
.verdict{border-radius:6px;padding:6px 12px;margin:8px 0;border:1px solid var(--line)}
.verdict ul{margin:.3em 0 .2em 1.2em;padding:0}
.verdict.ok{background:#e6f4ea;color:#14532d}.verdict.partly{background:#fff4d6;color:#6b4d00}
.verdict.not{background:#fde8e8;color:#7f1d1d}
.warn{color:#a15c00}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.shape,.big,.nw{white-space:nowrap;overflow-wrap:normal}
.lose-a{color:var(--a);font-weight:600}.lose-b{color:var(--b);font-weight:600}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;width:100%;font-size:.95em}
th,td{padding:3px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{text-align:left;cursor:pointer;user-select:none;white-space:nowrap;position:relative}
th.num{text-align:right}th[data-d]::after{content:" ↕";color:var(--muted)}
td.name{max-width:34em;overflow-wrap:anywhere}td.sub{padding-left:22px}
td.minibar{width:22%;min-width:90px}td.minibar svg{display:block;width:100%}
svg rect.a{fill:var(--a)}svg rect.b{fill:var(--b)}svg rect.idle{opacity:var(--pale)}svg rect.axis{fill:var(--muted)}
svg rect.total{opacity:.85}svg rect.zero{fill:var(--fg)}
.zerolab{position:relative;height:1.2em;font-size:.8em;color:var(--muted)}.zerolab span{position:absolute}
.zerolab i{position:absolute;font-style:normal}.zerolab i.l{left:0}.zerolab i.r{right:0}svg rect.exposed{fill:#c92a2a;opacity:.9}
.rows{display:grid;grid-template-columns:minmax(70px,max-content) minmax(120px,1fr) max-content;gap:5px 12px;
align-items:center}
.rows .lab{overflow-wrap:anywhere}.rows.ledger{grid-template-columns:minmax(90px,17em) minmax(120px,1fr) max-content}.rows .bar svg{display:block;width:100%}
.rows .bar.cut{-webkit-mask-image:linear-gradient(to right,#000 85%,transparent);mask-image:linear-gradient(to right,#000 85%,transparent)}
.key{display:inline-block;width:12px;height:10px;border-radius:2px;vertical-align:baseline}
.key.a{background:var(--a)}.key.b{background:var(--b)}
svg.passes{display:block;width:100%;height:170px;border-bottom:1px solid var(--line)}
.axis{display:flex;justify-content:space-between;color:var(--muted);font-size:.85em;font-variant-numeric:tabular-nums}
.lanes{display:grid;grid-template-columns:minmax(72px,max-content) 1fr;gap:3px 10px;align-items:center}
.lane svg{display:block;width:100%;height:18px;background:var(--card)}
.lane svg rect.w{stroke:var(--bg);stroke-width:.5px;vector-effect:non-scaling-stroke}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;margin:8px 0;font-size:.88em}
.legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}
ol.evidence{padding-left:1.3em}ol.evidence li{margin:.5em 0;overflow-wrap:anywhere}
.groups{display:flex;flex-wrap:wrap;gap:4px 28px}.groups ul{margin:.1em 0;padding-left:1.2em}
.group.a b{color:var(--a)}.group.b b{color:var(--b)}
details summary{cursor:pointer}details summary h2{display:inline}
footer{margin:2em 0 1em;color:var(--muted);font-size:.85em;overflow-wrap:anywhere}
@media (max-width:600px){body{font-size:13px}main{padding:8px}.big{font-size:1.45em}
.rows{grid-template-columns:minmax(52px,max-content) minmax(70px,1fr);}.rows.ledger{grid-template-columns:minmax(60px,45%) minmax(70px,1fr)}.rows .num{grid-column:1/-1;text-align:left;
margin-top:-4px;padding-bottom:3px;border-bottom:1px solid var(--line)}td.minibar{display:none}}
"""

# sort a table by a clicked column: numbers by data-v (largest first on the first click), text A to Z
SCRIPT = """
document.querySelectorAll("table.sort").forEach(function(t){
 t.tHead.querySelectorAll("th").forEach(function(th,i){th.dataset.d="";th.addEventListener("click",function(){
  var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),d=th.dataset.d==="-1"?1:-1;th.dataset.d=d;
  rows.sort(function(x,y){var p=x.cells[i],q=y.cells[i];if(!p||!q)return 0;
   if(p.dataset.v!==undefined&&q.dataset.v!==undefined)return (parseFloat(p.dataset.v)-parseFloat(q.dataset.v))*d;
   return p.textContent.localeCompare(q.textContent)*-d;});
  rows.forEach(function(r){b.appendChild(r);});});});});
"""


def _base(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def render_html(cmp, pass_pairs=None, generator: str = "kerneldiff", before=(), intro: str = "") -> str:
    """The comparison as one self-contained HTML page. `pass_pairs` (Session.pass_pairs of one pass)
    is the pass drawn to scale; without it the page has every other part. `before`: sections,
    (anchor, title, body), placed ahead of the comparison's (the runs' own, `run_report.runs_html`);
    `intro`: HTML above the header (what the page compares, when that is not just two traces)."""
    sections = [*before, ("ledger", "Gap ledger", _ledger(cmp)), ("layers", "Layers", _layers(cmp)),
                ("operations", "Operations", _operations(cmp)), ("fusion", "Fusion", _fusions(cmp)),
                ("shapes", "Shapes", _shapes(cmp)), ("timeline", "Timeline", _timeline(cmp, pass_pairs)),
                ("warnings", "Warnings", _warnings(cmp))]
    nav = "".join(f'<a href="#{key}">{title}</a>' for key, title, body in sections if body)
    title = f"kerneldiff: {esc(cmp.a.label, 80)} vs {esc(cmp.b.label, 80)} ({esc(cmp.phase)})"
    # the files by name only: a page made to be shared need not show where they lay
    foot = (f"<footer>{esc(generator)} · A: {esc(_base(cmp.a.path), 200)} · B: {esc(_base(cmp.b.path), 200)} · "
            f"ratios are A / B, "
            f"gaps A − B (positive: A slower); figures as in <code>kerneldiff compare</code>.</footer>")
    return ("<!doctype html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,'
            f'initial-scale=1"><title>{title}</title><style>{CSS}</style></head><body><main>{intro}{_header(cmp)}'
            f'<nav>{nav}</nav>{"".join(body for _, _, body in sections)}{foot}</main>'
            f"<script>{SCRIPT}</script></body></html>\n")
