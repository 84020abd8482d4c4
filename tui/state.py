"""The explorer's per-trace state, as the start screen shows it (kept in `KernelDiffApp.traces`).

Free of Textual: the app builds it before its first frame.
"""

from __future__ import annotations

from dataclasses import dataclass

WAITING, LOADING, LOADED, FAILED, CANCELLED = "waiting", "loading", "loaded", "failed", "cancelled"


@dataclass(frozen=True)
class TraceState:
    """Where one trace is: waiting, loading (with progress), loaded, failed or cancelled."""

    status: str = WAITING
    fraction: float = 0.0
    stage: str = ""
    done: int = 0               # bytes read
    total: int = 0              # bytes to read
    message: str = ""           # failed: the one-line error; loaded: the one-line summary

    @classmethod
    def loading(cls, fraction: float, stage: str, done: int, total: int) -> TraceState:
        return cls(LOADING, fraction, stage, done, total)

    @classmethod
    def loaded(cls, summary: str) -> TraceState:
        return cls(LOADED, 1.0, message=summary)

    @classmethod
    def failed(cls, message: str) -> TraceState:
        return cls(FAILED, message=message)


def initial_states(errors: list[str | None]) -> tuple[TraceState, ...]:
    """Before loading: a trace the probe refused has failed already, the others wait."""
    return tuple(TraceState.failed(e) if e is not None else TraceState() for e in errors)
