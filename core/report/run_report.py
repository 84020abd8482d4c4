"""The runs' own part of a report on two runs of rank traces, for Markdown and HTML: where the ranks
came from and which one represents each run, the per-rank table (slowest first), the collectives
(kind × message size, A against B) and the stragglers, then the runs' notes. The representative
ranks' comparison follows it in each format (`markdown.render_markdown`, `html.render_html`).

Pure presentation of `kerneldiff.core.ranks.run.RunFindings`; every figure is written by the text
report's formatters, so the page, the Markdown and `kerneldiff compare RUN_A RUN_B` agree.
"""

from __future__ import annotations

from kerneldiff.core.report import format as fmt

TOP_RANKS = 16            # Markdown: ranks listed (a pull-request comment stays short)
TOP_COLLECTIVES = 8
RANK_HEAD = ("run", "rank", "wall", "busy", "compute", "comm", "exposed comm", "idle")
RANK_KEYS = ("wall_us", "busy_us", "compute_us", "comm_us", "exposed_comm_us", "idle_us")


def ranks_slowest_first(found) -> list[tuple[str, dict]]:
    """(run key, rank row) of both runs, slowest first (ties: A before B, lower rank first)."""
    rows = [(k, r) for k in ("a", "b") for r in found.ranks[k]]
    rows.sort(key=lambda kr: (-kr[1].wall_us, kr[0], kr[1].rank))
    return rows


STRAGGLER_MARK = "*"     # beside the straggler's rank number in the Ranks tables
HISTOGRAM_BINS = 8


def rank_cell(found, key: str, rank: int) -> str:
    """A rank's number, marked where it is its run's straggler."""
    s = found.stragglers.get(key)
    return f"{rank}{STRAGGLER_MARK}" if s is not None and s.rank == rank else str(rank)


def straggler_legend(found) -> str:
    named = [f"{k.upper()} rank {s.rank}" for k, s in found.stragglers.items() if s is not None]
    return f"{STRAGGLER_MARK} the straggler (last to arrive at most validated collectives): {', '.join(named)}" \
        if named else ""


def wall_summary(found, key: str) -> str:
    """A run's ranks in one line: their wall clocks' spread and a histogram of them (equal bins
    from the fastest to the slowest), for runs too large to list."""
    walls = sorted(r.wall_us for r in found.ranks[key])
    if not walls:
        return ""
    lo, hi = walls[0], walls[-1]
    p90 = walls[min(len(walls) - 1, int(0.9 * (len(walls) - 1) + 0.5))]
    line = (f"{key.upper()}: {len(walls)} ranks, wall {fmt.us(lo)} … {fmt.us(hi)} (median "
            f"{fmt.us(walls[(len(walls) - 1) // 2] if len(walls) % 2 else (walls[len(walls) // 2 - 1] + walls[len(walls) // 2]) / 2)}"
            f", p90 {fmt.us(p90)}, spread {fmt.us(hi - lo)})")
    if hi > lo:
        counts = [0] * HISTOGRAM_BINS
        for w in walls:
            counts[min(int((w - lo) / (hi - lo) * HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += 1
        line += f"; ranks per {fmt.us((hi - lo) / HISTOGRAM_BINS)} of wall from the fastest: " + \
            " ".join(str(c) for c in counts)
    return line


def size(n: int) -> str:
    return "?" if n is None or n < 0 else fmt.size(n)


def gbps(x: float | None, pct: float | None = None) -> str:
    if x is None:
        return fmt.ABSENT
    return f"{x:,.1f}" + (f" ({pct:.0f}%)" if pct else "")


def run_lines(found) -> list[str]:
    """One line per run, then how the representative ranks were picked."""
    rep = found.representative
    out = []
    for key in ("a", "b"):
        sp = found.spread[key]
        out.append(f"{key.upper()} run: {sp.ranks} rank{'s' if sp.ranks != 1 else ''} (ranks from "
                   f"{found.rank_source[key]}), wall {fmt.us(sp.wall_min_us)} … {fmt.us(sp.wall_max_us)} (median "
                   f"{fmt.us(sp.wall_median_us)}), exposed communication {fmt.us(sp.exposed_comm_min_us)} … "
                   f"{fmt.us(sp.exposed_comm_max_us)}; representative rank {rep.side(key)}")
    out.append(f"representative rank: {rep.how}; the comparison below is of these two ranks' traces")
    return out


def straggler_lines(found) -> list[str]:
    out = []
    for key, s in found.stragglers.items():
        if s is None:
            continue
        out.append(f"{key.upper()} straggler: rank {s.rank} arrived last at {s.last} of {s.collectives} validated "
                   f"collectives ({s.share:.0%}), {fmt.us(s.late_us)} after the other ranks' median: host launched late "
                   f"{fmt.us(s.host_late_us)}, computed longer {fmt.us(s.compute_longer_us)}, held by earlier work "
                   f"(waiting on a peer) {fmt.us(s.peer_wait_us)}; its compute before them "
                   f"{fmt.us(s.compute_before_us)} against {fmt.us(s.others_compute_before_us)} on the other ranks")
    return out


def links_line(found) -> str:
    links = "; ".join(f"{k.upper()} {v.link} {v.gbps:g} GB/s per direction" if v else f"{k.upper()} unknown"
                      for k, v in found.links.items())
    return (f"busbw in GB/s (% of the link's peak: {links}); wait = time beyond the fastest rank's; "
            f"skew = last rank's start − first's (median); matched by {found.matched_by}")


def layers_text(layers: list[int]) -> str:
    """Layer indexes as ranges: "0–35", "0–3, 7"; "" for none."""
    out, i = [], 0
    while i < len(layers):
        j = i
        while j + 1 < len(layers) and layers[j + 1] == layers[j] + 1:
            j += 1
        out.append(str(layers[i]) if i == j else f"{layers[i]}–{layers[j]}")
        i = j + 1
    return ", ".join(out)


def where_cell(c) -> str:
    """Where a row's collectives ran: phase, block of the layer and layers ("prefill attention
    L0–35"); "?" where the traces place them nowhere (no passes with a phase, no layers)."""
    layers = sorted(set((c.a.layers if c.a else []) + (c.b.layers if c.b else [])))
    text = " ".join(x for x in (c.place, f"L{layers_text(layers)}" if layers else "") if x)
    return text or "?"


def collective_cells(c) -> list[str]:
    """kind, size, where, n A/B, A time, B time, A wait, B wait, A exposed, B exposed, A busbw, B busbw, A skew, B skew, gap."""
    a, b = c.a, c.b

    def opt(side, key) -> str:
        v = getattr(side, key) if side is not None else None
        return fmt.ABSENT if v is None else fmt.us(v)

    return [c.kind, size(c.nbytes), where_cell(c), f"{a.count if a else 0}/{b.count if b else 0}", opt(a, "total_us"),
            opt(b, "total_us"), opt(a, "wait_us"), opt(b, "wait_us"), opt(a, "exposed_us"), opt(b, "exposed_us"),
            gbps(a.busbw_gbps, a.pct_link_peak) if a else fmt.ABSENT,
            gbps(b.busbw_gbps, b.pct_link_peak) if b else fmt.ABSENT, opt(a, "skew_p50_us"), opt(b, "skew_p50_us"),
            fmt.gap(c.gap_us)]


COLLECTIVE_HEAD = ("kind", "size", "where", "n A/B", "A time", "B time", "A wait", "B wait", "A exposed", "B exposed",
                   "A busbw", "B busbw", "A skew", "B skew", "gap")


# --- Markdown -----------------------------------------------------------------------------------
def runs_markdown(found) -> list[str]:
    from kerneldiff.core.report.markdown import _table, md

    lines = ["### kerneldiff: two runs of rank traces", ""]
    lines += [md(x, 400) + "  " for x in run_lines(found)]
    rows = ranks_slowest_first(found)
    body = [[k.upper(), rank_cell(found, k, r.rank), *(fmt.us(getattr(r, x)) for x in RANK_KEYS)] for k, r in rows[:TOP_RANKS]]
    lines += ["", "#### Ranks (slowest first" + (f", {TOP_RANKS} of {len(rows)})" if len(rows) > TOP_RANKS else ")"),
              ""] + _table(list(RANK_HEAD), body, right=1)
    if len(rows) > TOP_RANKS:   # many ranks: each run summarised, not listed
        lines += [""] + [md(wall_summary(found, k), 600) + "  " for k in ("a", "b")]
    if straggler_legend(found):
        lines += ["", f"_{md(straggler_legend(found), 300)}_"]
    if found.collectives:
        top = found.collectives[:TOP_COLLECTIVES]
        body = [[md(x) for x in collective_cells(c)] for c in top]
        more = len(found.collectives) - len(top)
        lines += ["", "#### Collectives (kind × message, largest gap first)", ""] + \
            _table(list(COLLECTIVE_HEAD), body, right=1) + ([f"and {more} more"] if more > 0 else []) + \
            ["", f"_{md(links_line(found), 600)}_"]
    strag = straggler_lines(found)
    if strag:
        lines += [""] + [md(x, 600) + "  " for x in strag]
    if found.notes:
        lines += [""] + [f"- note: {md(n, 600)}" for n in found.notes]
    return lines + [""]


# --- HTML ---------------------------------------------------------------------------------------
def runs_intro(found) -> str:
    """The line above an HTML report of runs: what its parts read."""
    rep = found.representative
    n = {k: len(found.ranks[k]) for k in ("a", "b")}
    return (f'<p class="verdict partly">Two runs of rank traces (A: {n["a"]} rank{"s" if n["a"] != 1 else ""}, B: '
            f'{n["b"]} rank{"s" if n["b"] != 1 else ""}). Ranks, Collectives and Stragglers read every rank; the '
            f'header below and the sections from "The representative ranks compared" on read A rank {rep.a} '
            f'against B rank {rep.b} ({_esc(rep.how)}).</p>')


def _esc(s: str) -> str:
    import html as _html

    return _html.escape(str(s), quote=True)


def runs_html(found) -> list[tuple[str, str, str]]:
    """The runs' sections for `html.render_html(…, before=…)`: (anchor, title, body)."""
    import html as _html

    from kerneldiff.core.report.html import _bar_svg, _gap, _num, _table, esc

    rows = ranks_slowest_first(found)
    top = max((r.wall_us for _, r in rows), default=0.0) or 1.0
    chart = []
    for k, r in rows[:64]:
        # wall to scale; inside it the rank's compute, then its exposed communication
        c, x = r.compute_us / top, r.exposed_comm_us / top
        bar = _bar_svg([(0, r.wall_us / top, f"{k} idle", esc(f"wall {fmt.us(r.wall_us)}")),
                        (0, c, k, esc(f"compute {fmt.us(r.compute_us)}")),
                        (c, c + x, f"{k} exposed", esc(f"exposed communication {fmt.us(r.exposed_comm_us)}"))])
        chart.append(f'<div class="lab">{k.upper()} rank {r.rank}</div><div class="bar">{bar}</div>'
                     f'<div class="num">{fmt.us(r.wall_us)}</div>')
    body_rows = [f'<tr><td><span class="key {k}"></span> {k.upper()}</td>{_num(str(r.rank), r.rank)}'
                 + "".join(_num(fmt.us(getattr(r, x)), getattr(r, x)) for x in RANK_KEYS)
                 + f'<td style="white-space:nowrap">{esc(r.file.replace(chr(92), "/").rsplit("/", 1)[-1], 120)}</td></tr>'
                 for k, r in rows]
    head = [(h, h not in ("run",)) for h in RANK_HEAD] + [("file", False)]
    lines = "".join(f"<li>{esc(x, 600)}</li>" for x in run_lines(found))
    ranks = (f'<section id="ranks"><h2>Ranks</h2><ul class="muted">{lines}</ul>'
             f'<p class="muted small">Each rank\'s wall clock to scale (pale), its compute (solid) and its exposed '
             f'communication (red: communication while no compute kernel ran).</p>'
             f'<div class="rows">{"".join(chart)}</div>'
             + (f'<p class="muted small">{len(rows) - 64} more ranks in the table.</p>' if len(rows) > 64 else "")
             + _table("t-ranks", head, body_rows) + "</section>")
    out = [("ranks", "Ranks", ranks)]
    if found.collectives:
        crow = []
        for c in found.collectives:
            cells = collective_cells(c)
            a, b = c.a, c.b
            vals = [None, c.nbytes, None, None, a.total_us if a else None, b.total_us if b else None,
                    a.wait_us if a else None, b.wait_us if b else None, a.exposed_us if a else None,
                    b.exposed_us if b else None, a.busbw_gbps if a else None,
                    b.busbw_gbps if b else None, a.skew_p50_us if a else None, b.skew_p50_us if b else None]
            tds = [f"<td>{esc(cells[0])}</td>", _num(cells[1], vals[1]), f"<td>{esc(cells[2])}</td>"] + \
                [_num(t, v) for t, v in zip(cells[3:-1], vals[3:])] + [_gap(c.gap_us)]
            crow.append(f"<tr>{''.join(tds)}</tr>")
        chead = [(h, h not in ("kind", "where")) for h in COLLECTIVE_HEAD]
        out.append(("collectives", "Collectives",
                    f'<section id="collectives"><h2>Collectives</h2><p class="muted small">{esc(links_line(found), 800)}'
                    f'</p>{_table("t-collectives", chead, crow)}</section>'))
    strag = straggler_lines(found)
    if strag or found.notes:
        items = "".join(f"<li>{esc(x, 800)}</li>" for x in strag)
        notes = "".join(f'<li class="warn">note: {esc(n, 800)}</li>' for n in found.notes)
        out.append(("stragglers", "Stragglers", f'<section id="stragglers"><h2>Stragglers and notes</h2>'
                                                f'<ul>{items or "<li>no straggler: the ranks arrive together, or their clocks differ</li>"}'
                                                f'{notes}</ul></section>'))
    heading = (f'<section id="representative"><h2>The representative ranks compared</h2><p class="muted">'
               f'{_html.escape(found.representative.how)}: A rank {found.representative.a} against B rank '
               f'{found.representative.b}: the page\'s header and every section from here on read these two '
               f'traces.</p></section>')
    out.append(("representative", "Representative ranks", heading))
    return out


# --- Perfetto -----------------------------------------------------------------------------------
class RankCollectives:
    """Every rank's collectives as tracks beside the representative ranks' two traces (a process per
    rank, `A rank 3: collectives`), on the same axis: a collective that starts inside one of its
    side's drawn passes moves with that pass (each rank's clock is taken to be the representative
    rank's, as on one host); one outside every drawn pass is left out and counted. A run whose
    ranks' clocks differ puts its collectives outside the passes: they are left out, not misplaced."""

    PID_BASE = {"a": 1000, "b": 2000}

    def __init__(self, pp, runs) -> None:
        self.pp, self.runs = pp, runs
        self.placed = {"a": 0, "b": 0}
        self.left_out = {"a": 0, "b": 0}

    def events(self):
        import numpy as np

        from kerneldiff.core.report.perfetto import drawn_starts

        for key, side, run in (("a", self.pp.a, self.runs[0]), ("b", self.pp.b, self.runs[1])):
            if not side.passes:
                continue
            starts = np.array([p.start_us for p in side.passes])
            ends = starts + np.array([p.span_us for p in side.passes])
            shifts = np.array([p.shift_us for p in side.passes])
            order = np.argsort(starts, kind="stable")
            for r in run.ranks:
                c = r.collectives
                t = np.asarray(c.start_us, dtype=float)
                if len(t) == 0:
                    continue
                pid = self.PID_BASE[key] + r.rank
                yield {"ph": "M", "pid": pid, "name": "process_name",
                       "args": {"name": f"{key.upper()} rank {r.rank}: collectives"}}
                yield {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}}
                # a track per stream the rank's collectives ran on (tid 1, 2… in stream order)
                stream = np.asarray(c.stream if c.stream else [0] * len(t), dtype=np.int64)
                streams = np.unique(stream)
                tid = np.searchsorted(streams, stream) + 1
                for n, sid in enumerate(streams.tolist(), start=1):
                    yield {"ph": "M", "pid": pid, "tid": n, "name": "thread_name",
                           "args": {"name": f"stream {sid}: collectives"}}
                i = np.searchsorted(starts[order], t, side="right") - 1
                ok = i >= 0
                idx = np.where(ok, order[np.maximum(i, 0)], 0)
                ok &= t <= ends[idx]
                self.left_out[key] += int((~ok).sum())
                self.placed[key] += int(ok.sum())
                # as the kernels' stream tracks: a collective the profiler recorded starting before
                # the previous one on its stream ended is drawn from that one's end (tracks nest)
                sel = np.flatnonzero(ok)
                ts_ns = np.round((t[sel] + shifts[idx[sel]]) * 1000).astype(np.int64)
                dur_ns = np.round(np.asarray(c.dur_us, dtype=float)[sel] * 1000).astype(np.int64)
                drawn = drawn_starts(ts_ns, dur_ns, tid[sel])
                for j, d0, dn in zip(sel.tolist(), drawn.tolist(), dur_ns.tolist()):
                    place = c.place(j)
                    yield {"ph": "X", "pid": pid, "tid": int(tid[j]), "ts": d0 / 1000, "dur": dn / 1000, "name": c.kind[j], "cat": "collective",
                           "args": {"rank": r.rank, "bytes": c.nbytes[j] if c.nbytes[j] >= 0 else None,
                                    "algorithm": c.algorithm[j] or None, "dtype": c.dtype[j] or None,
                                    "stream": int(stream[j]), "place": place or None,
                                    "layer": c.layer[j] if c.layer and c.layer[j] >= 0 else None,
                                    "trace_ts": round(float(t[j]), 3)}}

    def other_data(self) -> dict:
        return {"rank_collectives": {"placed": dict(self.placed), "outside_the_drawn_passes": dict(self.left_out)}}
