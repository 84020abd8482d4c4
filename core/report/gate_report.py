"""The gate's result as Markdown (a pull-request comment) and as plain text (a terminal, a CI log).

Both lead with the verdict and its reasons, then the checks (each with its limit and noise floor),
then the largest changes: what a reviewer needs to accept or refuse the change without rerunning.
"""

from __future__ import annotations

from kerneldiff.core.names.visible import visible
from kerneldiff.core.report import format as fmt

MARK = {"pass": "✅", "improvement": "🚀", "regression": "❌", "inconclusive": "⚠️"}
MEANING = {
    "pass": "no check moved beyond its limit and the noise",
    "improvement": "a check got faster beyond its limit and the noise, and none regressed",
    "regression": "a check got slower beyond its limit and beyond the noise of the traces",
    "inconclusive": "the traces cannot say: not the same work, or a change the noise could explain",
}


def _pct(x: float | None) -> str:
    return fmt.ABSENT if x is None else f"{x:+.1f}%".replace("-", "−")


def _limit(c) -> str:
    return c.limit + (f" ({fmt.us(c.allowed)})" if c.allowed is not None and c.limit.endswith("%") else "")


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


# Names and reasons come from the traces (kernel, file and GPU names): in a pull-request comment they
# are data, never markup. A name goes in a code span (no HTML, links or emphasis there); free text
# has Markdown's and HTML's special characters escaped and every @ kept from mentioning anyone.
_MD_SPECIAL = set("\\`*_{}[]()#+!|~")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def md_text(text: str) -> str:
    flat = " ".join(str(text).split())
    out = "".join(_HTML.get(ch) or ("\\" + ch if ch in _MD_SPECIAL else ch) for ch in flat)
    return out.replace("@", "@\u200b")


def md_code(text: str) -> str:
    body = " ".join(str(text).replace("`", "'").split()).replace("@", "@\u200b")
    return f"`{body}`"


def md_table(head: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> str:
    """A GitHub-flavoured Markdown table; columns in `right` are right-aligned."""
    lines = ["| " + " | ".join(_md_cell(h) for h in head) + " |",
             "|" + "|".join("---:" if i in right else "---" for i in range(len(head))) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _noise(c) -> str:
    if c.noise is None:
        return "unknown"
    # a floor read from the layers, not from repeated passes, says so
    return fmt.us(c.noise) + ("" if c.noise_from == "passes" else " (runs)" if c.noise_from.startswith("between runs")
                              else " (layers)" if "layer" in c.noise_from else "")


def _check_rows(r, name=str) -> list[list[str]]:
    return [[name(c.metric), fmt.us(c.base), fmt.us(c.new), fmt.gap(c.delta), _pct(c.delta_pct), _limit(c),
             _noise(c), c.status + (f" ({c.note})" if c.note else "")]
            for c in r.checks]


def _top_changes(r, n: int = 5) -> list:
    every = sorted(r.regressions + r.improvements, key=lambda c: -abs(c.delta))
    return every[:n]


def _label(s) -> str:
    return f"{s.label} ({s.passes} pass{'es' if s.passes != 1 else ''})"


def _run_lines(r) -> list[str]:
    """A line per run (a gate on runs): its ranks, where they came from, the representative rank and
    the ranks' wall clock and compute spread; [] for two traces."""
    if not r.runs:
        return []
    out = []
    for key in ("base", "new"):
        x = r.runs[key]
        sp = x["spread"]
        line = (f"{key} run {x['run']}: {x['ranks']} rank{'s' if x['ranks'] != 1 else ''} of {x['world_size']} "
                f"(ranks from {x['rank_source']}); representative rank {x['representative']}; whole-trace wall "
                f"{fmt.us(sp['wall_min_us'])} … {fmt.us(sp['wall_max_us'])}")
        sk = x.get("skew")
        if sk:
            line += (f"; compute per pass: rank {sk['slowest_rank']} {fmt.us(sk['slowest_compute_us'])}, "
                     f"rank {sk['fastest_rank']} {fmt.us(sk['fastest_compute_us'])}")
        out.append(line)
    return out


def markdown(r) -> str:
    out = [f"### {MARK.get(r.verdict, '')} kerneldiff gate: **{r.verdict}**", "",
           f"{MEANING[r.verdict]}. Base {md_code(_label(r.base))} → new {md_code(_label(r.new))}, phase `{r.phase}`, "
           f"figures per pass."]
    runs = _run_lines(r)
    if runs:
        out += ["", f"Runs of rank traces: the checks but `skew` are the representative ranks' "
                    f"({md_text(r.runs['representative'])})."] + [f"- {md_text(x)}" for x in runs]
    if r.reasons:
        out += ["", "**Why inconclusive:**"] + [f"- {md_text(x)}" for x in r.reasons]
    out += ["", md_table(["check", "base", "new", "Δ", "Δ%", "limit", "noise", "result"], _check_rows(r, md_code),
                         right={1, 2, 3, 4, 6})]
    top = _top_changes(r)
    if top:
        out += ["", "**Top changes** (new − base per pass; causes from the gap ledger)", "",
                md_table(["kind", "what", "base", "new", "Δ", "Δ%", "cause"],
                         [[c.kind, md_code(c.name if len(c.name) <= 60 else c.name[:59] + "…"), fmt.us(c.base),
                           fmt.us(c.new), fmt.gap(c.delta), _pct(c.delta_pct),
                           c.cause if c.kind not in ("idle", "overlap") else ""] for c in top],
                         right={2, 3, 4, 5})]
    comp = r.comparability
    if comp:
        out += ["", f"Comparability: **{comp.verdict}**" + (": " + md_text("; ".join(comp.reasons))
                                                                if comp.reasons else "")]
    for note in r.notes:
        out.append(f"- {md_text(note)}")
    fp = [r.base.fingerprint, r.new.fingerprint]
    out += ["", "<details><summary>inputs and thresholds</summary>", "",
            f"- base {md_code(fp[0].path)} {fp[0].size:,} bytes, sha256 `{fp[0].sha256[:16]}…` ({fp[0].method})",
            f"- new {md_code(fp[1].path)} {fp[1].size:,} bytes, sha256 `{fp[1].sha256[:16]}…` ({fp[1].method})",
            "- limits: " + ", ".join(f"{k} {v}" for k, v in r.thresholds.get("checks", {}).items())
            + f"; noise floor {r.thresholds.get('noise_z')} standard errors of the per-pass figure",
            *([f"- {k} run {md_code(r.runs[k]['run'])}: {len(r.runs[k]['files'])} rank files, each fingerprinted "
               f"in the JSON result (`runs.{k}.files`)" for k in ("base", "new")] if r.runs else []),
            f"- {r.tool.get('name', 'kerneldiff')} {r.tool.get('version', '')}", "", "</details>"]
    return _lines(out)


def _lines(out: list[str]) -> str:
    # a control character in a name from a trace (ESC, a bidi override) is shown, never obeyed
    return "\n".join(visible(line) for line in "\n".join(out).split("\n"))


def _cols(rows: list[list[str]], right: set[int]) -> list[str]:
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.rjust(w[i]) if i in right else c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in rows]


def text(r) -> str:
    out = [f"gate: {r.verdict.upper()}  ({MEANING[r.verdict]})",
           f"base {_label(r.base)}", f"new  {_label(r.new)}", f"phase {r.phase}; figures per pass; delta = new − base"]
    runs = _run_lines(r)
    if runs:
        out += runs + [f"(checks but skew are the representative ranks': {r.runs['representative']})"]
    for x in r.reasons:
        out.append(f"  why: {x}")
    out.append("")
    out += _cols([["check", "base", "new", "delta", "delta%", "limit", "noise", "result"]] + _check_rows(r),
                 right={1, 2, 3, 4, 6})
    top = _top_changes(r, 8)
    if top:
        out += ["", "largest changes (per pass):"]
        out += _cols([[c.kind, c.name if len(c.name) <= 50 else c.name[:49] + "…", fmt.gap(c.delta), _pct(c.delta_pct),
                       c.cause if c.kind not in ("idle", "overlap") else ""] for c in top], right={2, 3})
    comp = r.comparability
    if comp:
        out += ["", f"comparability: {comp.verdict}" + (": " + "; ".join(comp.reasons) if comp.reasons else "")]
    out += [f"note: {n}" for n in r.notes]
    return _lines(out)
