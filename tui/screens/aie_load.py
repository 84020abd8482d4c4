"""AIE (NPU) traces in the explorer: launcher options, the loader the app runs, kind routing.

Kept free of Textual imports: the app consults `route_kinds` before its first frame, and the
loader runs in a thread worker in place of the Kineto loader (same signature, same progress and
cancel protocol), returning an `AieRun` as the trace's "model".
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

# the options, settings and kind routing are core's (kerneldiff.core.aie.session); re-exported
# here for the screens
from kerneldiff.core.aie.session import (AIE, KIND_NAMES, OPTION_KEYS, SHAPE_KEYS, AieSettings,  # noqa: F401
                                         aie_settings, kind_name)
from kerneldiff.core.aie.session import mixed_kind_errors as route_kinds  # noqa: F401


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
