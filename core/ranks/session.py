"""Two runs of rank traces behind a session interface, as `Session` is for two traces: the ranks
load through `Session` (kerneldiff.core.ranks.summary), so this sits above it, not inside it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from kerneldiff.core.errors import TraceError
from kerneldiff.core.trace_session import Session, probe_trace


@dataclass
class RunSession:
    """Two runs of rank traces (each a directory, a glob or comma-joined files): every rank reduced to
    its summary (in parallel), the representative rank of each run compared as a pair of traces, and
    the ranks, collectives and stragglers of both runs (`kerneldiff.core.ranks`)."""

    runs: list[str]
    registry: str | None = None
    use_cache: bool = True
    device: int | None = None
    rank: int | None = None          # the representative rank (None: each run's slowest)
    peaks: Any = None
    fusion_overrides: dict[str, float] = field(default_factory=dict)
    jobs: int | None = None          # processes loading ranks (None: CPUs and memory decide)
    scheduler: str | None = None     # a Dask scheduler (tcp://HOST:PORT, "local") mapping the ranks (ranks/cluster.py;
                                     # None: $KERNELDIFF_SCHEDULER, else the local process pool)
    sides: list[Any] = field(init=False, default_factory=list)
    pair: Session | None = field(init=False, default=None)
    kind: str = field(init=False, default="runs")

    # --- the session protocol (kerneldiff.core.session.TraceSession) ----------------------------
    @property
    def paths(self) -> list[str]:
        return self.runs

    @property
    def single(self) -> bool:
        return False

    def warm_up(self) -> None:
        """Nothing to start ahead: the ranks are loaded by a process pool when `load` runs."""

    def load_all(self, progress=None, cancel=None) -> list[Any]:
        """Every rank of both runs (`load`); a run's ranks report no progress of their own."""
        return self.load()

    def label(self, index: int) -> str:
        """Run `index` as the reports name it: its directory or glob, as given."""
        from kerneldiff.core.ranks.identify import run_name

        return run_name(self.runs[index])

    def phases(self) -> list[str]:
        """The phases the representative ranks' pair may be compared in ("all" before it is loaded)."""
        return self.pair.phases() if self.pair is not None else ["all"]

    def files(self) -> list[list[str]]:
        """Each run's trace files, read from the file system only (no trace is opened): a TraceError
        for an argument that names none, before anything is loaded."""
        from kerneldiff.core.ranks.identify import run_files

        return [run_files(arg) for arg in self.runs]

    def load(self) -> list[Any]:
        """Identify and summarise every rank of both runs (a bad file is reported before any load)."""
        from kerneldiff.core.ranks.cluster import scheduler_address
        from kerneldiff.core.ranks.identify import RankFile, identify, is_run, not_a_trace, other_files, run_files
        from kerneldiff.core.ranks.run import Run, load_ranks

        scheduler = scheduler_address(self.scheduler)   # a bad address: one line, before any load

        listed = []
        for arg in self.runs:
            files = run_files(arg)
            for f in files:
                info = probe_trace(f)
                if info.kind == "aie":
                    raise TraceError(info.path, "this is an AMD AIE (NPU) trace, not a rank of a GPU run")
            listed.append((arg, files))
        found = []
        for arg, files in listed:
            skipped = other_files(arg)
            # a JSON file that is no trace, found by a directory or glob: skipped and said
            tolerant = is_run(arg) and "," not in arg
            summaries = load_ranks([RankFile(i, f) for i, f in enumerate(files)], self.registry, self.use_cache,
                                   self.device, self.jobs,
                                   skip=(lambda path, problem: not_a_trace(problem)) if tolerant else None,
                                   scheduler=scheduler)
            skipped += [f for f, s in zip(files, summaries) if s is None]
            summaries = [s for s in summaries if s is not None]
            if not summaries:
                raise TraceError(arg, "holds no trace files (" + ", ".join(os.path.basename(f) for f in skipped[:3])
                                 + " are not traces)")
            kept = [s.file for s in summaries]
            # ranks are named once every file is read: distributedInfo may follow the events
            ranked, source = identify(kept, [getattr(s.info, "distributed", {}) or {} for s in summaries])
            by_path = {s.file: s for s in summaries}
            for rf in ranked:
                by_path[rf.path].rank = rf.rank
            found.append(Run(arg, ranked, source, [by_path[rf.path] for rf in ranked], skipped))
        self.sides = found
        return found

    @staticmethod
    def names_runs(*args: str) -> bool:
        """Whether any argument names a run (a directory, a glob, comma-joined files) rather than one trace."""
        from kerneldiff.core.ranks.identify import is_run

        return any(is_run(a) for a in args)

    def findings(self):
        """What the pair of runs adds to the comparison of their representative ranks: ranks,
        collectives, stragglers (`kerneldiff.core.ranks.run.RunFindings`; loads first if needed)."""
        from kerneldiff.core.ranks.run import findings

        if not self.sides:
            self.load()
        return findings(*self.sides, self.rank, self.peaks)

    def rank_files(self, side: str | None = None, rank: int | None = None) -> list[str]:
        """The trace files (A's, B's) of the ranks to compare. Without `side`: each run's representative
        (`self.rank`, else its slowest; a TraceError when a run lacks that rank). With `side` ("a" or
        "b") and `rank`: that rank of that run, against the same rank of the other run, else the
        other run's slowest."""
        from kerneldiff.core.ranks.run import pick

        if not self.sides:
            self.load()
        a, b = self.sides
        if side is None:
            return [pick(a, self.rank).file, pick(b, self.rank).file]
        mine, other = (a, b) if side == "a" else (b, a)
        chosen = mine.rank(rank)
        if chosen is None:
            raise TraceError(mine.arg, f"has no rank {rank}")
        against = other.rank(rank) or other.slowest()
        return [chosen.file, against.file] if side == "a" else [against.file, chosen.file]

    def load_pair(self) -> Session:
        """The representative ranks' two files, loaded as a pair of traces (`self.pair`)."""
        pair = self.rank_files()
        if self.pair is None or self.pair.paths != pair:
            self.pair = Session(pair, registry=self.registry, use_cache=self.use_cache,
                                peaks=self.peaks, fusion_overrides=self.fusion_overrides, device=self.device,
                                fork_pair=True)
            self.pair.load_all()
        return self.pair

    def compare(self, phase: str = "all"):
        """(the representative ranks' Comparison, the runs' RunFindings)."""
        pair = self.load_pair()
        cmp = pair.compare(phase)
        self.name_sides(cmp)
        return cmp, self.findings()

    def name_sides(self, cmp) -> None:
        """The compared ranks named by their run (its directory or glob) and rank, not by a file name
        every rank shares ("rank0.json.gz")."""
        from kerneldiff.core.ranks.identify import run_name

        for side, run, path in zip((cmp.a, cmp.b), self.sides, self.pair.paths):
            rank = next((r for r in run.ranks if r.file == path), None)
            base = os.path.basename(path)
            if rank is not None and side.label.endswith(base):   # a file name ("A: rank0.json.gz"), not a GPU's
                side.label = side.label[: len(side.label) - len(base)] + f"{run_name(run.arg)} rank {rank.rank}"

    def gate(self, checks: list, phase: str = "all", max_slowdown: str = "3%", allow_hardware_change: bool = False):
        """The regression gate's verdict on run A (the base) against run B (the new run): the
        representative ranks' checks, the ranks' spread and the runs' own reasons
        (`kerneldiff.core.gate.runs`); a `kerneldiff.core.gate.result.GateResult`."""
        from kerneldiff.core.gate.runs import judge_runs

        cmp, found = self.compare(phase)
        return judge_runs(cmp, self.pair, self.sides, found, checks, phase, max_slowdown, allow_hardware_change)
