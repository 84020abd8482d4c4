"""AIE (NPU) traces in the explorer: launcher options, the loader the app runs, kind routing.

Kept free of Textual imports: the app consults `route_kinds` before its first frame, and the
loader runs in a thread worker in place of the Kineto loader (same signature, same progress and
cancel protocol), returning an `AieRun` as the trace's "model".
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

AIE = "aie"
# keys of the optional `aie=` dict that cli/app_launch passes through run_app
OPTION_KEYS = ("M", "K", "N", "rows", "cols", "warmup", "iterations", "clock_mhz")
SHAPE_KEYS = ("M", "K", "N", "rows", "cols")

KIND_NAMES = {
    AIE: "AMD AIE (NPU) trace",
    "kineto": "PyTorch profiler (Kineto) GPU trace",
    "chrome-array": "Chrome-trace event array (GPU)",
    "unknown": "trace of unknown kind",
}


@dataclass(frozen=True)
class AieSettings:
    """What the analysis needs beyond the trace: GEMM shape (optional), iteration counts, clock."""

    shape: Any = None                  # kerneldiff.core.aie.analysis.GemmShape or None (then no GMAC/s)
    warmup: int = 0
    iterations: int | None = None      # None: every iteration after the warm-up is perf
    params: Any = field(default=None)  # kerneldiff.core.aie.analysis.AieParams

    @property
    def has_shape(self) -> bool:
        return self.shape is not None


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


def make_loader(options: dict[str, Any] | None) -> Callable[..., Any]:
    """A `load`-compatible callable: analyse one AIE trace, reporting start and end as progress.
    Bad options surface as the trace's load error (the launcher checks them before starting)."""

    def load_aie(path, *, progress=None, cancel=None, info=None, **_kw):
        from kerneldiff.core.aie.analysis import analyze_aie
        from kerneldiff.core.errors import LoadCancelled, TraceError

        try:
            settings = aie_settings(options)
        except ValueError as e:
            raise TraceError(path, f"AIE options: {e}") from None
        size = getattr(info, "size", 0) or 0
        if progress is not None and progress(0.0, "analysing AIE cores", 0, size) is False:
            raise LoadCancelled(path)
        run = analyze_aie(path, settings.shape, settings.warmup, settings.iterations, settings.params)
        # the analysis cannot stop midway (AIE traces are small); a cancel still discards it
        if (cancel is not None and cancel.is_set()) or (progress is not None
                                                       and progress(1.0, "done", size, size) is False):
            raise LoadCancelled(path)
        return run

    return load_aie


def card_summary(run) -> str:
    """The start screen's one-line result for an analysed AIE trace."""
    used = [c for c in run.cores if c.iterations]
    iters = max((c.detected_iterations for c in used), default=0)
    s = f"analysed: {len(run.cores)} AIE cores · {iters} iterations · {len(run.aggregate.indices)} perf on every core"
    n = count_notes(run)
    if n:
        s += f" · {n} notes"
    return s


def count_notes(run) -> int:
    return len(run.notes) + sum(len(c.notes) for c in run.cores) + len(run.aggregate.notes)


def kind_name(kind: str | None) -> str:
    return KIND_NAMES.get(kind or "unknown", f"{kind} trace")


def route_kinds(paths: list[str], infos: list[Any], errors: list[str | None]) -> tuple[bool, list[str | None]]:
    """(AIE mode?, errors). AIE mode when every trace is an AIE trace; an AIE trace next to one of
    another kind cannot be compared, so it gets an error naming both kinds (the other stays loadable
    and browsable from the error screen)."""
    kinds = [info.kind if info is not None else None for info in infos]
    if AIE not in kinds:
        return False, errors
    if all(k == AIE for k in kinds):
        return True, errors
    out = list(errors)
    for i, k in enumerate(kinds):
        if k != AIE:
            continue
        others = [j for j in range(len(paths)) if j != i]
        j = others[0]
        other_name = os.path.basename(paths[j]) or paths[j]
        if kinds[j] is None:
            what = "the other trace, which could not be read"
        else:
            what = f"{other_name}, a {kind_name(kinds[j])}"
        out[i] = (f"{paths[i]}: this {kind_name(AIE)} cannot be compared with {what}: the two kinds measure "
                  f"different hardware; open it on its own (kerneldiff {paths[i]})")
    return False, out
