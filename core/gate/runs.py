"""The gate on two runs of rank traces (each a directory, a glob or comma-joined rank files).

A run's verdict covers three things:
- its **representative rank** (the slowest by wall clock, or `--rank N`): every check of a pair of
  traces (`wall`, `kernels`, `op`, `layer`, `idle`, `comm`: exposed communication) is judged on the
  two representative ranks' files, exactly as `gate A B` judges two traces (`verdict.judge`);
- the **spread across its ranks**, `skew`: in each pass, the slowest rank's compute less the fastest
  rank's (compute = the union of the rank's compute kernels in that pass). Ranks that meet at every
  collective end each pass together, so their wall clocks agree and the imbalance shows as compute
  on one rank and waiting on the others; the per-pass spread is its figure, and the passes are the
  repeats its noise floor is read from (`noise.floor`, as for every metric);
- the **pair of runs**: runs of different world sizes give each rank a different share of the work:
  inconclusive, as two traces of different work are.

- the **meeting of its ranks at collectives**, `late` (the last rank's start after the others'
  median) and `wait` (the ranks' time beyond the fastest's), per validated collective: a straggler
  growing later shows here even where compute does not (a late host launch);

`wall`, `skew`, `late`, `wait` and `comm` are checked by default on runs (`spec.RUN_DEFAULTS`); a
run of one rank has no spread, so those defaults are dropped with a note (asked for, inconclusive).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from kerneldiff.core.gate.fingerprint import fingerprint
from kerneldiff.core.gate.rank_floor import few_passes, series_from_ranks
from kerneldiff.core.gate.repeats import WITHIN_ONLY
from kerneldiff.core.gate.result import GateResult
from kerneldiff.core.gate.series import MIN_REPEATS
from kerneldiff.core.gate.series import PassSeries
from kerneldiff.core.gate.spec import RUN_METRICS, Check
from kerneldiff.core.gate.verdict import _judge, _pair_reasons, _verdict, comparability_of, judge

ONE_TRACE_COMM = "comm is exposed communication on each trace's own GPU timeline"


def skew_series(ranks: list, phase: str = "all") -> PassSeries:
    """The ranks' spread of compute in each pass of `phase` (slowest − fastest rank), and its mean
    per pass. Passes are lined up by their order on each rank; None when they cannot be."""
    if len(ranks) < 2:
        return PassSeries(None, missing="one rank: no spread across ranks")
    counts = sorted({len(r.pass_compute_us) for r in ranks})
    if len(counts) != 1 or counts[0] == 0:
        return PassSeries(None, missing=f"the ranks hold different numbers of passes ({counts[0]}–{counts[-1]}): "
                                        f"their passes cannot be lined up" if len(counts) > 1 else "no passes")
    phases = ranks[0].pass_phases
    idx = [i for i, p in enumerate(phases) if phase == "all" or p == phase]
    m = np.array([r.pass_compute_us for r in ranks], dtype=float)[:, idx]
    keep = m.max(axis=0) > 0          # a pass whose work was all cut (before the profiler's window)
    if not keep.any():
        return PassSeries(None, missing=f"no compute in phase {phase}")
    m = m[:, keep]
    per = m.max(axis=0) - m.min(axis=0)
    return PassSeries(float(per.mean()), per, [phases[i] for i, k in zip(idx, keep) if k])


def collective_series(ranks: list, metric: str) -> PassSeries:
    """`late` or `wait` per validated collective instance (analysis/collective_pairs): the
    collectives are the repeats its noise floor is read from, so a run of one step still has them.
    late: the last rank's start after the median of the others'; wait: the mean over the ranks of
    each one's duration beyond the shortest."""
    from kerneldiff.core.analysis.collectives import MIN_VALIDATED, match

    if len(ranks) < 2:
        return PassSeries(None, missing="one rank: nobody to be late for or to wait on")
    inst = [x for x in match([r.collectives for r in ranks], [r.rank for r in ranks]).instances if len(x.ranks) > 1]
    if len(inst) < MIN_VALIDATED:
        return PassSeries(None, missing=f"only {len(inst)} collective(s) validated across the ranks "
                                        f"(at least {MIN_VALIDATED} needed)")
    if metric == "late":
        per = [max(x.starts) - float(np.median(sorted(x.starts)[:-1])) for x in inst]
    else:
        per = [float(np.mean(x.durs)) - min(x.durs) for x in inst]
    return PassSeries(float(np.mean(per)), np.asarray(per, float), ["collective"] * len(per))


def skew_detail(ranks: list) -> dict[str, Any] | None:
    """Which rank computes longest and which shortest (their compute per pass), for the report."""
    if len(ranks) < 2:
        return None

    def per_pass(r) -> float:
        # the passes' own compute, as the skew reads it (kernels outside every pass left out)
        if r.pass_compute_us:
            return sum(r.pass_compute_us) / len(r.pass_compute_us)
        return r.compute_us / max(r.passes, 1)

    hi = max(ranks, key=lambda r: (per_pass(r), -r.rank))
    lo = min(ranks, key=lambda r: (per_pass(r), r.rank))
    return {"slowest_rank": hi.rank, "slowest_compute_us": per_pass(hi), "fastest_rank": lo.rank,
            "fastest_compute_us": per_pass(lo)}


def _from_ranks(c: Check, r, base_ranks: list, new_ranks: list):
    """A representative ranks' check that had no floor (too few passes and layers) judged again with
    the floor of the spread across each run's ranks (gate/rank_floor); else it stays, saying why the
    ranks could not give one."""
    if r.noise is not None or r.status != "inconclusive" or r.base is None or r.new is None:
        return r
    got = [series_from_ranks(v, c.metric, rs) for v, rs in ((r.base, base_ranks), (r.new, new_ranks))]
    if any(s is None for s, _ in got):
        why = next(w for s, w in got if s is None)
        r.note = f"{r.note}; nor from the ranks ({why})" if r.note else why
        return r
    return _judge(c, got[0][0], got[1][0])


def run_reasons(base, new) -> list[str]:
    """Why two runs did different work per rank (the gate is then inconclusive)."""
    if base.world_size != new.world_size:
        return [f"different work: world sizes differ (base {base.world_size}, new {new.world_size}): each rank "
                f"runs a different share of the model, so no per-rank figure compares like with like"]
    return []


def _run(run, found, key: str) -> dict[str, Any]:
    given = len(run.ranks)
    return {"run": run.arg, "ranks": given, "world_size": run.world_size, "rank_source": run.rank_source,
            "representative": found.representative.side(key), "spread": asdict(found.spread[key]),
            "skew": skew_detail(run.ranks),
            "files": [{"rank": f.rank, **asdict(fingerprint(f.path))} for f in run.files]}


def judge_runs(cmp, pair, runs: list, found, checks: list[Check], phase: str = "all",
               max_slowdown: str = "3%", allow_hardware_change: bool = False) -> GateResult:
    """The gate's result for run `runs[0]` (base) against `runs[1]` (new): `cmp` is the comparison of
    their representative ranks, loaded in `pair` (a `Session`); `found` the runs' findings."""
    base, new = runs
    notes: list[str] = []
    kept = []
    short = {k: few_passes(x.ranks) for k, x in (("base", base), ("new", new))}
    for c in checks:
        if c.metric in RUN_METRICS and c.default and min(len(base.ranks), len(new.ranks)) < 2:
            notes.append(f"{c.metric} not checked: a run of one rank has no spread across ranks")
            continue
        if c.metric == "skew" and c.default and any(v is not None for v in short.values()):
            which = ", ".join(f"{k} {v} pass{'es' if v != 1 else ''}" for k, v in short.items() if v is not None)
            notes.append(f"skew not checked: {which} (at least {MIN_REPEATS} needed to read the noise of the ranks' "
                         f"spread per pass; the spread is the figure itself, so the ranks cannot give it); the "
                         f"ranks' meeting is judged per collective by late and wait")
            continue
        kept.append(c)
    result = judge(cmp, pair.models, pair.paths, [c for c in kept if c.metric not in RUN_METRICS],
                   pair.classifier, phase, max_slowdown, allow_hardware_change)
    judged = iter(result.checks)
    checks_out = []
    for c in kept:
        if c.metric == "skew":
            r = _judge(c, skew_series(base.ranks, phase), skew_series(new.ranks, phase))
            if r.status in ("regression", "improvement"):
                d = [skew_detail(x.ranks) for x in (base, new)]
                r.note = "; ".join(f"{k}: rank {x['slowest_rank']} computes longest, rank {x['fastest_rank']} "
                                   f"shortest" for k, x in zip(("base", "new"), d) if x)
            checks_out.append(r)
        elif c.metric in ("late", "wait"):
            checks_out.append(_judge(c, collective_series(base.ranks, c.metric), collective_series(new.ranks, c.metric)))
        else:
            checks_out.append(_from_ranks(c, next(judged), base.ranks, new.ranks))
    world = run_reasons(base, new)
    verdict, reasons = _verdict(_pair_reasons(cmp, pair.models, phase) + run_reasons(base, new)
                                + [r for r in result.reasons if r.startswith("hardware changed")], checks_out)
    if world:   # the comparability shown must not say "comparable" above a reason against it
        result.comparability = comparability_of(cmp.comparability, [*world, *[
            r for r in result.comparability.reasons if r not in (cmp.comparability.reasons
                                                                             if cmp.comparability else [])]])
    rep = found.representative
    if any(c.metric == "comm" for c in kept):
        result.notes = [n for n in result.notes if not n.startswith(ONE_TRACE_COMM)]
        notes.append(f"comm is the representative ranks' exposed communication (base rank {rep.a}, new rank "
                     f"{rep.b}: {rep.how}); the ranks' spread of it is in `runs`")
    notes += [n for n in found.notes]
    result.verdict, result.reasons, result.checks = verdict, reasons, checks_out
    result.notes = notes + result.notes
    ranked = [c.metric for c in checks_out if c.noise_from.startswith("the spread across")]
    if ranked:   # the floor was not read within each trace for these: say where it came from
        result.notes = [f"noise floor of {', '.join(ranked)} from the spread across each run's ranks (too few passes "
                        f"and layers to read one within a trace; ranks that do unequal work widen it); "
                        f"{WITHIN_ONLY.split(': ', 1)[1]}" if n == WITHIN_ONLY else n for n in result.notes]
    result.thresholds["checks"] = {x.name: x.limit.text for x in kept}
    result.runs = {"base": _run(base, found, "a"), "new": _run(new, found, "b"), "representative": rep.how}
    return result
