"""What a gate says: a plain, JSON-serialisable result that every format renders (schema below).

    gate_schema   1 (raised when a key changes meaning or goes away; new keys may be added)
    verdict       pass | improvement | regression | inconclusive
    reasons       why the verdict is inconclusive (the pair's, then the checks'), [] otherwise
    comparability {verdict, reasons, notes} of the pair (kerneldiff.core.compare.comparability)
    base, new     {path, label, gpu, passes, phases, fingerprint {path, size, sha256, method}, excluded}
    phase         the phase gated ("all" unless --phase)
    checks        [{metric, what, base, new, delta, delta_pct, limit, allowed, noise, ok, status, note,
                  noise_from}]
                  (µs per pass; delta = new − base; ok: the check passes or improves)
    regressions, improvements   the largest changes per pass, by kind: operation (with the gap ledger's
                  split into more launches and slower kernels), idle and overlap (the ledger's other
                  causes; more overlap is a negative delta), layer (median per pass), kernel (the same
                  kernel on both sides)
    thresholds    {max_slowdown, checks: {metric: limit}, noise_z, min_repeats}
    tool          {name, version}
    notes         what the reader should know (work left out, per-pass basis, metric caveats)
    runs          null for two traces; for two runs of rank traces {base, new: {run, ranks, world_size,
                  rank_source, representative, spread {ranks, wall_min_us, wall_median_us, wall_max_us,
                  exposed_comm_min_us, exposed_comm_max_us}, skew {slowest_rank, slowest_compute_us,
                  fastest_rank, fastest_compute_us} | null, files [{rank, path, size, sha256, method}]},
                  representative: how the ranks were picked}; base/new above are then the
                  representative ranks' files (kerneldiff.core.gate.runs)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from kerneldiff.core.msgspec_import import msgspec

from kerneldiff.core.gate.fingerprint import Fingerprint

if TYPE_CHECKING:
    from kerneldiff.core.compare.result import Excluded

GATE_SCHEMA = 1
VERDICTS = ("pass", "improvement", "regression", "inconclusive")


@dataclass
class CheckResult:
    metric: str                  # as given: wall, kernels, op:Attention, layer:median, layer:3, comm, idle
    what: str                    # in words: "wall clock per pass"
    base: float | None           # µs per pass
    new: float | None
    delta: float | None          # new − base
    delta_pct: float | None      # of base, in percent
    limit: str                   # as given: "3%", "+2ms"
    allowed: float | None        # the limit in µs for this base
    noise: float | None          # the noise floor in µs (None: too few passes to read one)
    ok: bool                     # pass or improvement
    status: str                  # pass | improvement | regression | inconclusive
    note: str = ""
    noise_from: str = ""         # "passes" (repeated passes), the layers ("36 layer repeats (…)"), or
    #                              "" (no floor); base's and new's when they differ ("passes / …")


@dataclass
class Change:
    kind: str                    # operation | idle | overlap | layer | kernel
    name: str
    base: float                  # µs per pass
    new: float
    delta: float
    delta_pct: float | None
    cause: str = ""              # in words: more launches / slower kernels
    launches_delta: float | None = None   # the part of delta from more (or fewer) launches, µs per pass
    speed_delta: float | None = None      # the part from slower (or faster) kernels


@dataclass(frozen=True)
class GateSide:
    """One trace the gate judged, base or new (its JSON: these fields, in order)."""

    path: str
    label: str
    gpu: str
    passes: int
    phases: list[str]
    kernels: int
    fingerprint: Fingerprint
    excluded: Excluded | None    # work cut by the profiler's window (`Side.excluded`)


class GateComparability(msgspec.Struct, frozen=True):
    """The pair's comparability as the gate judged it (`verdict.comparability_of`); without a
    comparison or a reason of the gate's own it is `GateComparability()`, written `{}`."""

    verdict: str = ""            # comparable | partly | not comparable ("": not judged)
    reasons: list[str] = []
    notes: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.verdict)

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "reasons": list(self.reasons), "notes": list(self.notes)} if self else {}


@dataclass
class GateResult:
    verdict: str
    reasons: list[str]
    comparability: GateComparability
    base: GateSide
    new: GateSide
    phase: str
    checks: list[CheckResult]
    regressions: list[Change] = field(default_factory=list)
    improvements: list[Change] = field(default_factory=list)
    thresholds: dict[str, Any] = field(default_factory=dict)
    tool: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    runs: dict[str, Any] | None = None
    gate_schema: int = GATE_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["comparability"] = self.comparability.to_json()
        return {"gate_schema": d.pop("gate_schema"), **d}

    @property
    def exit_code(self) -> int:
        """0 for pass or improvement; 1 for regression or inconclusive."""
        return 0 if self.verdict in ("pass", "improvement") else 1
