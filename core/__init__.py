"""kerneldiff core: pure analysis of GPU profiler traces (never imports Textual or Rich).

Read top-down: ingest (probe → read → load) → analysis (classify → phases → layers → attribution)
→ compare → report. `Session` runs those steps from file paths; every front end goes through it.
"""

from kerneldiff.core.errors import LoadCancelled, TraceError
from kerneldiff.core.ingest.probe import TraceInfo, probe
from kerneldiff.core.session import KernelDetail, Session, open_session


def load(path, **kwargs):
    """Load one trace into a TraceModel with its readings (see kerneldiff.core.orchestration.load)."""
    from kerneldiff.core.orchestration import load as _load

    return _load(path, **kwargs)


def __getattr__(name: str):
    """RunSession (two runs of rank traces) sits above Session: loaded when first asked for."""
    if name == "RunSession":
        from kerneldiff.core.ranks.session import RunSession

        return RunSession
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["KernelDetail", "LoadCancelled", "RunSession", "Session", "TraceError", "TraceInfo", "load", "open_session",
           "probe"]
