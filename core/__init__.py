"""kerneldiff core: pure analysis of GPU profiler traces (no UI code).

Read top-down: probe → reader/loader → classify → phases → layers → attribution → compare.
"""

from kerneldiff.core.errors import LoadCancelled, TraceError
from kerneldiff.core.ingest.probe import TraceInfo, probe


def load(path, **kwargs):
    """Load a trace into a TraceModel (see kerneldiff.core.ingest.loader.load)."""
    from kerneldiff.core.ingest.loader import load as _load

    return _load(path, **kwargs)


__all__ = ["LoadCancelled", "TraceError", "TraceInfo", "load", "probe"]
