"""The gate's verdict on a compared pair: is the new trace a regression against the base?

Order of judgement:
1. The pair: when the traces did not run the same work (the comparability check says `not
   comparable`, or `partly` for a reason that changes the work itself: other tokens per pass, other
   phases, other GEMM shapes), a trace was cut short, or the mix of passes differs, no figure can say
   whether the code got slower: `inconclusive`, never a pass.
2. Each check: delta = new − base (µs per pass) against the limit and the noise floor:
   regression    delta > limit and delta > noise
   inconclusive  |delta| > limit but within the noise (the traces cannot tell which way it went), or
                 no floor to read
   improvement   −delta > limit and −delta > noise (the mirror of a regression: swapping the traces
                 swaps these two and nothing else)
   pass          otherwise
3. The verdict: inconclusive for the pair's reasons; else regression if any check regresses, else
   inconclusive if any check is, else improvement if any check improves, else pass.
"""

from __future__ import annotations


import numpy as np

from kerneldiff.core.compare.split import parts_of
from kerneldiff.core.gate import noise as nz
from kerneldiff.core.gate.repeats import WITHIN_ONLY, between_floor
from kerneldiff.core.gate.fingerprint import fingerprint
from kerneldiff.core.gate.result import Change, CheckResult, GateComparability, GateResult, GateSide
from kerneldiff.core.gate.series import MIN_LAYERS, PassSeries, SideData
from kerneldiff.core.gate.spec import METRICS, Check
from kerneldiff.core.report import format as fmt

# `partly` reasons that mean the two traces did different work (their codes in
# kerneldiff.core.compare.comparability); the others (an operation only one side runs, which a
# kernel swap causes) are what a gate is there to judge
WORK_REASONS = ("tokens", "phases", "gemm_shapes")
# checks a difference in recording options moves (comparability code `recording`): judged inconclusive
RECORDING_BOUND = ("wall", "idle")
# the share of passes of one phase may differ this much between the sides before the mix of passes
# (one prefill among 47 decodes against one among 20) moves a per-pass figure more than the code does
MIX_TOLERANCE = 0.01
TOP = 5
TRUNCATED = "file ends early"


def _pair_reasons(cmp, models, phase: str) -> list[str]:
    out: list[str] = []
    c = cmp.comparability
    if c is not None:
        if c.verdict == "not comparable":
            out += [f"not comparable: {r}" for r in c.reasons]
        else:
            out += [f"different work: {r}" for r, code in zip(c.reasons, c.codes) if code in WORK_REASONS]
    for side, m in zip((cmp.a, cmp.b), models):
        cut = next((w for w in m.warnings if w.startswith(TRUNCATED)), None)
        if cut:
            out.append(f"{side.label} is truncated ({cut}): its passes are not the run's")
    mix = [_mix(s) for s in (cmp.a, cmp.b)]
    # (other phases altogether are the comparability check's "different phases")
    if phase == "all" and all(mix) and mix[0].keys() == mix[1].keys():
        if any(abs(mix[0].get(p, 0) - mix[1].get(p, 0)) > MIX_TOLERANCE for p in set(mix[0]) | set(mix[1])):
            out.append("different mix of passes (" + "; ".join(
                f"{s.label}: " + ", ".join(f"{n} {p}" for p, n in _counts(s).items()) for s in (cmp.a, cmp.b))
                + "): a per-pass figure mixes them differently; gate one phase (--phase decode)")
    return out


def _counts(side) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in side.timeline.passes if side.timeline else ():
        out[p.phase] = out.get(p.phase, 0) + 1
    return out


def _mix(side) -> dict[str, float]:
    c = _counts(side)
    n = sum(c.values()) or 1
    return {p: k / n for p, k in c.items()}


def _series(d: SideData, check: Check) -> PassSeries:
    if check.metric == "wall":
        return d.timeline_metric("span_us")
    if check.metric == "kernels":
        return d.timeline_metric("kernel_us")
    if check.metric == "idle":
        return d.timeline_metric("idle_us")
    if check.metric == "op":
        return d.operation(check.arg)
    if check.metric == "layer":
        return d.layer(check.arg)
    return d.exposed_comm()


SHOWN_PCT_DIGITS = 1    # a share is shown as +3.0%: the limit is compared at that precision
SHOWN_US_DIGITS = 3     # times at the trace clock's ns


def over_limit(limit, change: float, base: float, new: float) -> bool:
    """Whether a change (new − base, µs; > 0 a slowdown) exceeds the limit, compared at the precision
    the report shows: +3.0000000000000187 % of float rounding is +3.0 %, not over a 3 % limit."""
    if change <= 0:
        return False
    if limit.kind == "pct":
        ref = min(abs(base), abs(new))
        if ref == 0:
            return True
        return round(100 * change / ref, SHOWN_PCT_DIGITS) > round(limit.value, SHOWN_PCT_DIGITS)
    return round(change, SHOWN_US_DIGITS) > round(limit.value, SHOWN_US_DIGITS)


def _judge(check: Check, a: PassSeries, b: PassSeries, runs: tuple[list, list] | None = None) -> CheckResult:
    """One check; `runs`: the figure of every recording of each side (the first the pair's own):
    then the means are compared, against the larger of the within-run and between-run floors."""
    what = METRICS[check.metric] if not check.arg or check.metric != "op" else f"{check.arg} time per pass"
    if check.metric == "layer" and check.arg != "median":
        what = f"layer {check.arg}'s median time per pass"
    if a.value is None or b.value is None:
        why = "; ".join(f"{k}: {s.missing}" for k, s in (("base", a), ("new", b)) if s.value is None)
        return CheckResult(check.name, what, a.value, b.value, None, None, check.limit.text, None, None,
                           False, "inconclusive", why)
    floor = nz.floor(a, b)
    base_v, new_v = a.value, b.value
    src = ""
    if runs is not None and None not in runs[0] + runs[1]:
        base_v, new_v = float(np.mean(runs[0])), float(np.mean(runs[1]))
        between = between_floor(*runs)
        if between is not None and (floor is None or between > floor):
            floor, src = between, f"between runs ({len(runs[0])} base, {len(runs[1])} new)"
    delta = new_v - base_v
    pct = 100 * delta / base_v if base_v else None
    allowed = check.limit.allowed_us(base_v, new_v)
    note = ""
    if floor is None:
        status = "inconclusive"
        note = (f"too few repeats to tell a change from noise (no phase with {nz.MIN_REPEATS} passes, and no "
                f"pass with {MIN_LAYERS} layers, on a side)")
    elif over_limit(check.limit, delta, base_v, new_v):
        status = "regression" if delta > floor else "inconclusive"
        if status == "inconclusive":
            note = f"over the limit but within the noise ({fmt.us(floor)})"
    elif over_limit(check.limit, -delta, base_v, new_v):
        # the mirror of a slowdown within the noise: `gate NEW BASE` says what `gate BASE NEW` says
        status = "improvement" if -delta > floor else "inconclusive"
        if status == "inconclusive":
            note = f"faster by more than the limit, but within the noise ({fmt.us(floor)})"
    else:
        status = "pass"
    if check.metric == "comm" and a.value == 0 and b.value == 0:
        status, note = "pass", "no communication kernels on either trace"
    srcs = [nz.source(a), nz.source(b)]
    within = srcs[0] if srcs[0] == srcs[1] else " / ".join(x or "none" for x in srcs)
    return CheckResult(check.name, what, base_v, new_v, delta, pct, check.limit.text, allowed, floor,
                       status in ("pass", "improvement"), status, note,
                       noise_from=src or within)


def _verdict(pair: list[str], checks: list[CheckResult]) -> tuple[str, list[str]]:
    statuses = [c.status for c in checks]
    if pair:
        return "inconclusive", pair
    if "regression" in statuses:
        return "regression", []
    if "inconclusive" in statuses:
        return "inconclusive", [f"{c.metric}: {c.note}" for c in checks if c.status == "inconclusive"]
    if "improvement" in statuses:
        return "improvement", []
    return "pass", []


def _pct(base: float, delta: float) -> float | None:
    return 100 * delta / base if base else None


def _split(ca: float, ma: float, cb: float, mb: float) -> tuple[float, float]:
    """(more launches, slower kernels) of new − base, as the gap ledger splits a gap
    (`core.compare.split`: extra launches at their own mean)."""
    return parts_of(cb, cb * mb, ca, ca * ma)


def _cause(launches: float | None, speed: float | None, la: float | None = None, lb: float | None = None) -> str:
    if launches is None or speed is None:
        return ""
    parts = []
    # a part under 2% of the two is rounding, not a cause (−0.07 µs of slower kernels beside −633 µs)
    least = max(0.005, 0.02 * (abs(launches) + abs(speed)))
    if abs(launches) >= least:
        more = "more" if launches > 0 else "fewer"
        counts = f" ({la:,.1f} → {lb:,.1f} per pass)" if la is not None and lb is not None else ""
        parts.append(f"{more} launches {fmt.gap(launches)}{counts}")
    if abs(speed) >= least:
        parts.append(f"{'slower' if speed > 0 else 'faster'} kernels {fmt.gap(speed)}")
    return "; ".join(parts)


def changes(cmp) -> list[Change]:
    """Every operation, ledger idle cause, layer and same kernel, new − base per pass."""
    na, nb = max(cmp.a.passes, 1), max(cmp.b.passes, 1)
    div = 1 if cmp.basis == "per_pass" else na   # the ledger's basis: totals when the pass counts agree
    out: list[Change] = []
    ledger = {e.cause: e for e in cmp.ledger}
    # rows that gave a fused operation's kernels to a row of its own: their split is of the rest only
    moved = {r for e in cmp.ledger if e.finding >= 0 for s in "ab" for r in e.from_rows.side(s)}
    for r in cmp.operations:
        base, new = r.a.total_us / na, r.b.total_us / nb
        e = ledger.get(r.category) if r.category not in moved else None
        lc = -e.count_gap_us / div if e is not None and e.count_gap_us is not None else None
        sp = -e.speed_gap_us / div if e is not None and e.speed_gap_us is not None else None
        la = e.a_launches / (1 if cmp.basis == "per_pass" else na) if e is not None and e.a_launches is not None else None
        lb = e.b_launches / (1 if cmp.basis == "per_pass" else nb) if e is not None and e.b_launches is not None else None
        out.append(Change("operation", r.category, base, new, new - base, _pct(base, new - base),
                          _cause(lc, sp, la, lb), lc, sp))
    for e in cmp.ledger:
        if e.kind in ("idle", "overlap"):
            base, new = e.a_us / div, e.b_us / div
            # the ledger's gap is A − B of the wall clock; overlap is time the wall clock does not pay,
            # so more of it is an improvement (its delta_pct, of the overlap itself, would read backwards)
            delta = -e.gap_us / div
            out.append(Change(e.kind, e.cause, base, new, delta,
                              _pct(base, delta) if e.kind == "idle" else None, e.detail))
    if cmp.layers_from == "both":
        for r in cmp.layers:
            if r.layer >= 0 and r.a.passes and r.b.passes:
                d = r.b.median_us - r.a.median_us
                out.append(Change("layer", f"layer {r.layer}", r.a.median_us, r.b.median_us, d, _pct(r.a.median_us, d)))
    for s in cmp.same_kernels[:200]:
        if s.shapes_differ:     # one name, different recorded shapes: not the same work to compare
            continue
        ca, cb = s.a.count / na, s.b.count / nb
        base, new = s.a.total_us / na, s.b.total_us / nb
        lc, sp = _split(ca, s.a.mean_us, cb, s.b.mean_us)
        out.append(Change("kernel", s.name, base, new, new - base, _pct(base, new - base), _cause(lc, sp, ca, cb), lc, sp))
    return out


def _top(all_changes: list[Change], sign: int) -> list[Change]:
    out = []
    for kind in ("operation", "idle", "overlap", "layer", "kernel"):
        mine = [c for c in all_changes if c.kind == kind and sign * c.delta > 0]
        mine.sort(key=lambda c: -sign * c.delta)
        out += mine[:TOP]
    out.sort(key=lambda c: -abs(c.delta))
    return out


def _side(side, path: str) -> GateSide:
    return GateSide(path=path, label=side.label, gpu=side.gpu, passes=side.passes, phases=side.phases,
                    kernels=side.kernels, fingerprint=fingerprint(path), excluded=side.excluded)


LAUNCH_BOUND_SHARE = 0.5   # a wall clock more than half launch-bound idle hides a kernel slowdown


def launch_bound(cmp) -> str:
    """"base 91 % idle waiting for launches" where a side's wall clock is mostly launch-bound idle; ""."""
    out = []
    for key, e in (("base", "a"), ("new", "b")):
        wall = getattr(cmp.wall, f"{e}_wall_us", 0.0) if cmp.wall is not None else 0.0
        idle = next((getattr(x, f"{e}_us") for x in cmp.ledger if x.cause == "idle: launch-bound"), 0.0)
        if wall > 0 and idle / wall > LAUNCH_BOUND_SHARE:
            out.append(f"{key} {100 * idle / wall:.0f} % idle waiting for launches")
    return ", ".join(out)


def hardware_reasons(gpu_a: str, gpu_b: str) -> list[str]:
    """Why a pair on two different GPUs cannot judge a code change (empty when the GPUs agree or a
    name is unknown)."""
    if gpu_a and gpu_b and gpu_a != gpu_b:
        return [f"hardware changed: base ran on {gpu_a}, new on {gpu_b}: the change measured is the GPU's, "
                f"not the code's (--allow-hardware-change to gate it anyway)"]
    return []


def comparability_of(c, extra: list[str]) -> GateComparability:
    """The pair's comparability for the gate's result, with the gate's own reasons about the pair
    (another GPU, another world size) among its reasons, and a verdict no better than they allow:
    a "comparable" above a reason against it would contradict it."""
    if c is None and not extra:
        return GateComparability()
    verdict = c.verdict if c is not None else "comparable"
    reasons = (list(c.reasons) if c is not None else []) + list(extra)
    if extra and verdict == "comparable":
        verdict = "partly"
    return GateComparability(verdict, reasons, list(c.notes) if c is not None else [])


def judge(cmp, models, paths: list[str], checks: list[Check], classifier, phase: str = "all",
          max_slowdown: str = "3%", allow_hardware_change: bool = False, repeats=None) -> GateResult:
    """The gate's result for a comparison of base (side a) against new (side b). `repeats`: more
    recordings of each side's workload, ([(model, timeline)…] of base, […] of new), for a noise floor
    from the spread between runs (`kerneldiff.core.gate.repeats`)."""
    da = SideData(models[0], phase, cmp.a.timeline, classifier)
    db = SideData(models[1], phase, cmp.b.timeline, classifier)
    for c in checks:
        if c.metric == "op":
            have = da.operations() | db.operations()
            if c.arg.lower() not in {h.lower() for h in have} and not any(
                    cat.lower() == c.arg.lower() for m in models for cat in m.categories):
                raise ValueError(f"--gate {c.name}: no operation named {c.arg!r} in either trace "
                                 f"(operations: {', '.join(sorted(have)) or 'none'})")
    notes = []
    checks = list(checks)
    bound = launch_bound(cmp)
    if bound and any(c.metric == "wall" and c.default for c in checks) and not any(c.metric == "kernels" for c in checks):
        wall = next(c for c in checks if c.metric == "wall")
        checks.append(Check("kernels", "", wall.limit, default=True))
        notes.append(f"kernel time checked too: the wall clock is launch-bound ({bound}), so a slower kernel "
                     f"hides in idle time the wall does not show")
    extra = repeats or ([], [])
    sides = ([da] + [SideData(m, phase, tl, classifier) for m, tl in extra[0]],
             [db] + [SideData(m, phase, tl, classifier) for m, tl in extra[1]])
    several = len(sides[0]) > 1 or len(sides[1]) > 1
    results = [_judge(c, _series(da, c), _series(db, c),
                      ([_series(d, c).value for d in sides[0]], [_series(d, c).value for d in sides[1]])
                      if several else None) for c in checks]
    comp = cmp.comparability
    if comp is not None and "recording" in comp.codes:
        # profiler options cost host time: wall and idle moved by the recording, not by the code
        why = comp.reasons[comp.codes.index("recording")]
        for r in results:
            if r.metric in RECORDING_BOUND and r.status != "inconclusive":
                r.status, r.ok, r.note = "inconclusive", False, why
    notes.append(f"noise floor between runs: {len(sides[0])} recording(s) of base, {len(sides[1])} of new; "
                 f"each check compares the recordings' mean figures" if several else WITHIN_ONLY)
    pair = _pair_reasons(cmp, models, phase)
    hw = hardware_reasons(cmp.a.gpu, cmp.b.gpu)
    if hw and allow_hardware_change:
        notes += [f"{r} (allowed: --allow-hardware-change)" for r in hw]
    else:
        pair += hw
    verdict, reasons = _verdict(pair, results)
    if any(c.metric == "comm" for c in checks):
        notes.append("comm is exposed communication on each trace's own GPU timeline (collective kernels "
                     "while no other kernel runs); one trace is one rank, so the slowest rank is not sought")
    c = cmp.comparability
    if c is not None:
        notes += list(c.notes)
    # no gated figure is a throughput, but a reader of the result should know when a trace's shapes
    # claim more than the hardware can do (its recorded shapes or times are wrong)
    notes += [w for w in cmp.warnings if "above the GPU's peak" in w]
    # a pair that ran different work has no changes worth ranking (its gaps rank nothing)
    every = changes(cmp) if c is None or c.verdict != "not comparable" else []
    return GateResult(
        verdict=verdict, reasons=reasons,
        comparability=comparability_of(c, hw),
        base=_side(cmp.a, paths[0]), new=_side(cmp.b, paths[1]), phase=phase, checks=results,
        regressions=_top(every, 1), improvements=_top(every, -1),
        thresholds={"max_slowdown": max_slowdown, "checks": {x.name: x.limit.text for x in checks},
                    "noise_z": nz.Z, "min_repeats": nz.MIN_REPEATS},
        notes=notes)
