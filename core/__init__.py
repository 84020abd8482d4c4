"""kerneldiff core: pure analysis of GPU profiler traces (no UI code).

Read top-down: probe → reader/loader → classify → phases → layers → attribution → compare.
"""

from .errors import LoadCancelled, TraceError
from .probe import TraceInfo, probe


def load(path, **kwargs):
    """Load a trace into a TraceModel (see core.loader.load)."""
    from .loader import load as _load

    return _load(path, **kwargs)


__all__ = ["LoadCancelled", "TraceError", "TraceInfo", "load", "probe"]
