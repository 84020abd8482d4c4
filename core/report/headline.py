"""What every front end says first about a comparison, in words: wall clock before kernel time,
whether they point the same way, whether the traces are comparable, what was left out, and the
host time behind launch-bound idle. Plain strings (the CLI, the explorer and the reports style them)."""

from __future__ import annotations

from dataclasses import dataclass

from kerneldiff.core.report import format as fmt


@dataclass
class Headline:
    wall: str              # "wall clock  A 1.33s  B 1.86s  A/B 0.72×  gap −527.32ms (A − B)"
    kernels: str           # the same for kernel time
    verdict: str           # one sentence: who is faster for the user, and whether the kernels agree
    comparability: str     # "comparable" | "partly: reason; reason" | "not comparable: reason; …"
    left_out: list[str]    # one line per side with work left out


def headline(cmp) -> Headline:
    w = cmp.wall
    per = " per pass" if cmp.basis == "per_pass" else ""
    kernel_line = (f"kernel time{per}  A {fmt.us(_kernel(cmp, 'a'))}  "
                   f"B {fmt.us(_kernel(cmp, 'b'))}  A/B {fmt.ratio(cmp.ratio)}  gap {fmt.gap(cmp.gap_us)}")
    wall_line = (f"wall clock{per}  A {fmt.us(w.a_wall_us)}  B {fmt.us(w.b_wall_us)}  "
                 f"A/B {fmt.ratio(w.wall_ratio)}  gap {fmt.gap(w.wall_gap_us)} (A − B)")
    verdict = _verdict(cmp)
    c = cmp.comparability
    if c is not None and "recording" in c.codes:
        verdict = ("wall clock and idle are inconclusive: the traces were recorded with different profiler "
                   f"options (see below); kernel time A/B {fmt.ratio(cmp.ratio)}")
    if c is not None and c.verdict == "not comparable":
        verdict = "not comparable (see why below): these figures set different work side by side. " + verdict
    comp = "—" if c is None else c.verdict + (": " + "; ".join(c.reasons) if c.reasons else "")
    out = [s for s in (cmp.a, cmp.b) if s.excluded is not None]
    if len(out) == 2 and out[0].excluded.why == out[1].excluded.why:   # one line when the reason is the same
        a, b = (s.excluded for s in out)
        left = [f"A left out {a.kernels:,} kernels ({fmt.us(a.time_us)}), B {b.kernels:,} ({fmt.us(b.time_us)}): {a.why}"]
    else:
        left = [f"{s.key.upper()} left out {s.excluded.kernels:,} kernels ({fmt.us(s.excluded.time_us)}): "
                f"{s.excluded.why}" for s in out]
    left += [f"{s.key.upper()}: {s.passes_left_out.line}" for s in (cmp.a, cmp.b)
             if getattr(s, "passes_left_out", None)]
    if getattr(w, "window_note", ""):
        left.append(w.window_note)
    return Headline(wall_line, kernel_line, verdict, comp, left)


def _kernel(cmp, side: str) -> float:
    s = getattr(cmp, side)
    return s.gpu_time_us / max(s.passes, 1) if cmp.basis == "per_pass" else s.gpu_time_us


def _verdict(cmp) -> str:
    """Who the user waits longer for, and whether kernel time says the same."""
    w = cmp.wall
    wg, kg = w.wall_gap_us, cmp.gap_us
    floor = 0.005 * max(w.a_wall_us, w.b_wall_us)   # under 0.5% of the wall clock: even
    if abs(wg) < floor:
        text = "end to end the two are even (wall clock within 0.5%)"
    else:
        slow = "A" if wg > 0 else "B"
        text = f"{slow} is slower end to end by {fmt.us(abs(wg))} ({fmt.ratio(w.wall_ratio)} A/B)"
    if abs(kg) < 0.005 * max(_kernel(cmp, "a"), _kernel(cmp, "b")) or abs(wg) < floor:
        return text
    if (wg > 0) != (kg > 0):
        kslow = "A" if kg > 0 else "B"
        lead = max(cmp.ledger, key=lambda e: abs(e.gap_us), default=None)
        why = f"; the largest cause is {lead.cause} ({fmt.gap(lead.gap_us)})" if lead is not None else ""
        return (f"{text}, although {kslow}'s kernels take longer ({fmt.ratio(cmp.ratio)} A/B): wall clock and "
                f"kernel time disagree{why}")
    return text + f"; kernel time agrees ({fmt.ratio(cmp.ratio)} A/B)"


HOST_PARTS = (("launch_calls_us", "launch calls"), ("sync_waits_us", "sync waits"),
              ("guard_checks_us", "guard checks (TorchDynamo)"), ("compiled_regions_us", "compiled-region calls"),
              ("python_dispatch_us", "Python and dispatch"), ("host_us", "host time of the passes"))
