"""What a gate checks: metrics and their limits, read from the command line's words.

    --max-slowdown 3%            the limit of `wall` and of every --gate without one
    --gate kernels:+2%           kernel time per pass may grow 2%
    --gate op:Attention:+5%      one operation's time per pass (a category family, as `compare` names it)
    --gate layer:median:500us    a layer's median time per pass; `layer:3:+4%` one layer
    --gate comm:+1ms             exposed communication per pass
    --gate idle:+10%             GPU idle per pass
    --gate skew:+200us           runs only: the spread of the ranks' compute per pass (slowest − fastest)

On runs (directories of rank traces) `wall`, `skew` and `comm` are checked by default, each at
--max-slowdown: the representative rank's wall clock and exposed communication, and the ranks' spread.

A limit is a slowdown: a share of the base (`3%`, `+3%`) or a time (`+2ms`, `500us`, `0.1s`). Every
metric is a time per pass, so lower is better and a growth beyond the limit is the regression.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

METRICS = {
    "wall": "wall clock per pass",
    "kernels": "kernel time per pass",
    "op": "an operation's time per pass",
    "layer": "a layer's median time per pass",
    "comm": "exposed communication per pass",
    "idle": "GPU idle per pass",
    "skew": "the ranks' spread of compute per pass (slowest − fastest rank)",
    "late": "the last rank's lateness per validated collective (its start after the others' median)",
    "wait": "the ranks' mean wait per validated collective (time beyond the fastest rank's)",
}
# metrics of a run as a whole; the others are read on the run's representative rank
RUN_METRICS = ("skew", "late", "wait")
# what a gate on runs checks when not told otherwise (with `wall`)
RUN_DEFAULTS = ("skew", "late", "wait", "comm")
DEFAULT_LIMIT = "3%"
_UNITS = {"us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "s": 1e6}
_LIMIT_RE = re.compile(r"^\+?\s*(\d+(?:\.\d*)?|\.\d+)\s*(%|us|µs|μs|ms|s)$")


@dataclass(frozen=True)
class Limit:
    """How much a metric may grow: `pct` (of the base) or `us` (an absolute time)."""

    kind: str          # "pct" | "us"
    value: float       # percent (3.0 for 3%) or µs
    text: str          # as the user wrote it

    def allowed_us(self, base_us: float, new_us: float) -> float:
        """The change allowed, in µs. A share is taken of the smaller side: for a slowdown that is
        the base (3% means 3% of the base), and swapping the traces allows the same amount, so
        `gate NEW BASE` says `improvement` exactly where `gate BASE NEW` says `regression`."""
        return min(abs(base_us), abs(new_us)) * self.value / 100 if self.kind == "pct" else self.value


@dataclass(frozen=True)
class Check:
    """One metric to gate: `metric` (a key of METRICS), its argument (the operation's name, the
    layer: "median" or an index) and its limit."""

    metric: str
    arg: str
    limit: Limit
    default: bool = False      # added by the gate, not asked for (a run of one rank drops `skew`)

    @property
    def name(self) -> str:
        return f"{self.metric}:{self.arg}" if self.arg else self.metric


def parse_limit(text: str) -> Limit:
    """`3%`, `+2ms`, `500us` -> Limit; ValueError saying what is wrong otherwise."""
    s = text.strip()
    if s.startswith("-"):
        raise ValueError(f"a limit is the slowdown allowed, not a negative amount: {text!r}")
    m = _LIMIT_RE.match(s)
    if not m:
        raise ValueError(f"not a limit: {text!r} (a share like 3% or a time like +2ms, 500us, 0.1s)")
    v = float(m.group(1))
    if not math.isfinite(v):
        raise ValueError(f"not a limit: {text!r}")
    unit = m.group(2)
    if unit == "%":
        return Limit("pct", v, s)
    return Limit("us", v * _UNITS[unit], s)


def _is_limit(text: str) -> bool:
    try:
        parse_limit(text)
        return True
    except ValueError:
        return False


def parse_check(text: str, default: Limit) -> Check:
    """`METRIC[:ARG][:LIMIT]` -> Check (the limit defaults to `default`)."""
    metric, _, rest = text.strip().partition(":")
    metric = metric.strip().lower()
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r} in {text!r} (metrics: {', '.join(METRICS)})")
    arg, limit = rest.strip(), default
    head, sep, tail = rest.rpartition(":")
    if sep and _is_limit(tail):
        arg, limit = head.strip(), parse_limit(tail)
    elif rest and _is_limit(rest):
        arg, limit = "", parse_limit(rest)
    if metric == "op":
        if not arg:
            raise ValueError(f"op wants an operation's name: op:NAME[:LIMIT], e.g. op:Attention:+5% (got {text!r})")
    elif metric == "layer":
        arg = arg or "median"
        if arg != "median" and not arg.isdigit():
            raise ValueError(f"layer wants 'median' or a layer index: layer:median[:LIMIT] or layer:3[:LIMIT] "
                             f"(got {text!r})")
    elif arg:
        raise ValueError(f"{metric} takes a limit only ({metric}:+3%), got {text!r}")
    return Check(metric, arg, limit)


def parse_checks(max_slowdown: str | None, gates: list[str], runs: bool = False) -> list[Check]:
    """The checks a gate runs: `wall` at --max-slowdown (3% by default) unless a --gate names wall
    itself (on runs `skew` and `comm` too), then every --gate in order (one per metric and argument:
    the last wins)."""
    default = parse_limit(max_slowdown if max_slowdown is not None else DEFAULT_LIMIT)
    checks: dict[str, Check] = {"wall": Check("wall", "", default, default=True)}
    if runs:
        checks.update({m: Check(m, "", default, default=True) for m in RUN_DEFAULTS})
    for g in gates:
        c = parse_check(g, default)
        if c.metric in RUN_METRICS and not runs:
            raise ValueError(f"{c.metric} is the spread across the ranks of a run: give runs (a directory, a glob "
                             f"or comma-joined rank files) on both sides")
        checks[c.name] = c
    return list(checks.values())
