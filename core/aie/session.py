"""AMD AIE (NPU) traces behind the same session interface as Kineto traces: paths → probe → load
(analyse each run) → compare (two runs). The launcher's AIE options (GEMM shape, warm-up,
iterations, clock) become `AieSettings` here, so the CLI and the explorer read them alike."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

AIE = "aie"
# keys of the optional AIE options dict the launcher passes through
OPTION_KEYS = ("M", "K", "N", "rows", "cols", "warmup", "iterations", "clock_mhz")
SHAPE_KEYS = ("M", "K", "N", "rows", "cols")

KIND_NAMES = {
    AIE: "AMD AIE (NPU) trace",
    "kineto": "PyTorch profiler (Kineto) GPU trace",
    "chrome-array": "Chrome-trace event array (GPU)",
    "unknown": "trace of unknown kind",
}


def kind_name(kind: str | None) -> str:
    return KIND_NAMES.get(kind or "unknown", f"{kind} trace")


@dataclass(frozen=True)
class AieSettings:
    """What the analysis needs beyond the trace: GEMM shape (optional), iteration counts, clock."""

    shape: Any = None                  # kerneldiff.core.aie.analysis.GemmShape or None (then no GMAC/s)
    warmup: int = 0
    iterations: int | None = None      # None: every iteration after the warm-up is perf
    params: Any = field(default=None)  # kerneldiff.core.aie.analysis.AieParams


def aie_settings(options: dict[str, Any] | None) -> AieSettings:
    """Settings from the launcher's options. Raises ValueError for a partial or invalid shape."""
    from kerneldiff.core.aie.analysis import AieParams, GemmShape

    opts = {k: v for k, v in (options or {}).items() if v is not None}
    unknown = set(opts) - set(OPTION_KEYS)
    if unknown:
        raise ValueError(f"unknown AIE option(s): {', '.join(sorted(unknown))}")
    given = [k for k in SHAPE_KEYS if k in opts]
    if given and len(given) != len(SHAPE_KEYS):
        raise ValueError("--M, --K, --N, --rows and --cols go together (give all five or none)")
    shape = GemmShape(*(int(opts[k]) for k in SHAPE_KEYS)) if given else None
    warmup = int(opts.get("warmup", 0))
    iterations = opts.get("iterations")
    if warmup < 0 or (iterations is not None and int(iterations) < 0):
        raise ValueError("--warmup and --iterations must be >= 0")
    params = AieParams(clock_mhz=float(opts["clock_mhz"])) if "clock_mhz" in opts else AieParams()
    return AieSettings(shape, warmup, None if iterations is None else int(iterations), params)


def mixed_kind_errors(paths: list[str], infos: list[Any], errors: list[str | None]) -> tuple[bool, list[str | None]]:
    """(every trace AIE?, errors). An AIE trace next to one of another kind cannot be compared, so
    it gets an error naming both kinds (the other stays loadable and browsable)."""
    kinds = [info.kind if info is not None else None for info in infos]
    if AIE not in kinds:
        return False, errors
    if all(k == AIE for k in kinds):
        return True, errors
    out = list(errors)
    for i, k in enumerate(kinds):
        if k != AIE:
            continue
        j = next(j for j in range(len(paths)) if j != i)
        other_name = os.path.basename(paths[j]) or paths[j]
        what = ("the other trace, which could not be read" if kinds[j] is None
                else f"{other_name}, a {kind_name(kinds[j])}")
        out[i] = (f"{paths[i]}: this {kind_name(AIE)} cannot be compared with {what}: the two kinds measure "
                  f"different hardware; open it on its own (kerneldiff {paths[i]})")
    return False, out


@dataclass
class AieResult:
    """What an AIE session shows: one run, or two runs and their comparison."""

    runs: list[Any]                  # kerneldiff.core.aie.analysis.AieRun, one or two
    settings: AieSettings
    comparison: Any = None           # kerneldiff.core.aie.analysis.AieComparison when two runs


@dataclass
class AieSession:
    """One or two AIE runs; `models` hold `AieRun`s, `compare()` gives an `AieComparison`."""

    paths: list[str]
    options: dict[str, Any] | None = None
    kind: str = AIE
    infos: list[Any] = field(init=False)
    errors: list[str | None] = field(init=False)
    models: list[Any] = field(init=False)
    # per trace, settings the CLI builds itself (all of AieParams, a shape per trace); None: from `options`
    run_settings: list[AieSettings] | None = None

    def __post_init__(self) -> None:
        self.paths = [os.fspath(p) for p in self.paths]
        n = len(self.paths)
        self.infos, self.errors, self.models = [None] * n, [None] * n, [None] * n

    @property
    def single(self) -> bool:
        return len(self.paths) == 1

    @property
    def settings(self) -> AieSettings:
        return aie_settings(self.options)

    def load(self, index: int, progress: Callable[..., Any] | None = None,
             cancel: threading.Event | None = None):
        """Analyse one AIE run, reporting start and end as progress. Bad options surface as the
        trace's load error (the launcher checks them before starting)."""
        from kerneldiff.core.aie.analysis import analyze_aie
        from kerneldiff.core.errors import LoadCancelled, TraceError

        path = self.paths[index]
        info = self.infos[index]
        if info is not None and info.kind != AIE:
            raise TraceError(path, f"this {kind_name(info.kind)} is not an AMD AIE (NPU) trace: open it on its own "
                                   f"(kerneldiff {path})")
        try:
            settings = self.run_settings[index] if self.run_settings is not None else self.settings
        except ValueError as e:
            raise TraceError(path, f"AIE options: {e}") from None
        size = getattr(self.infos[index], "size", 0) or 0
        if progress is not None and progress(0.0, "analysing AIE cores", 0, size) is False:
            raise LoadCancelled(path)
        run = analyze_aie(path, settings.shape, settings.warmup, settings.iterations, settings.params)
        # the analysis cannot stop midway (AIE traces are small); a cancel still discards it
        if (cancel is not None and cancel.is_set()) or (progress is not None
                                                       and progress(1.0, "done", size, size) is False):
            raise LoadCancelled(path)
        self.models[index] = run
        return run

    def warm_up(self) -> None:
        """Nothing to start: AIE traces are analysed in this process."""

    def load_all(self, progress: Callable[..., Any] | None = None,
                 cancel: threading.Event | None = None) -> list[Any]:
        """Analyse every run not analysed yet, in turn (progress(index, fraction, stage, done, total))."""
        for i in range(len(self.paths)):
            if self.models[i] is None:
                step = None if progress is None else (lambda *a, i=i: progress(i, *a))
                self.load(i, step, cancel)
        return self.models

    def run(self, index: int):
        """The analysed run of trace `index` (`kerneldiff.core.aie.analysis.AieRun`)."""
        if self.models[index] is None:
            raise ValueError(f"trace {self.paths[index]} is not loaded")
        return self.models[index]

    def label(self, index: int) -> str:
        return self.run(index).label

    def compare(self, phase: str = "all"):
        """AIE runs have no phases; two runs give their AieComparison."""
        from kerneldiff.core.aie.analysis import compare_aie

        if self.single:
            raise ValueError("a one-trace session has nothing to compare")
        return compare_aie(self.models[0], self.models[1])

    def phases(self) -> list[str]:
        return ["all"]

    def result(self, phase: str = "all", index: int | None = None) -> AieResult:
        """Both runs and their comparison (`index` None), or run `index` alone."""
        if index is None:
            return AieResult([self.run(i) for i in range(len(self.paths))], self.settings, self.compare())
        return AieResult([self.run(index)], self.settings)

    def stored_comparison(self, phase: str = "all") -> None:
        """Nothing is stored: AIE runs are analysed in moments."""
        return None

    def loaded_trace(self, index: int):
        """Loaded run `index`: its analysis (an AieRun)."""
        return self.run(index)
