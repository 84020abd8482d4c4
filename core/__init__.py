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


__all__ = ["KernelDetail", "LoadCancelled", "Session", "TraceError", "TraceInfo", "load", "open_session", "probe"]
