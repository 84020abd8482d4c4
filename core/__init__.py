"""kerneldiff core: pure analysis of GPU profiler traces (never imports Textual or Rich).

Read top-down: ingest (probe → read → load) → analysis (classify → phases → layers → attribution)
→ compare → report. `Session` runs those steps from file paths; every front end goes through
`kerneldiff.core.session`, the one way in (the session protocol, `open_session`, the result types).
"""

from kerneldiff.core.errors import LoadCancelled, TraceError

# imported when first asked for (PEP 562): `import kerneldiff.core.x` runs this file, and the probe
# and the session (with what they import) cost ~40 ms that `kerneldiff --version` or a module's
# own import has no use for
_LAZY = {"TraceInfo": "kerneldiff.core.ingest.probe", "probe": "kerneldiff.core.ingest.probe",
         "KernelDetail": "kerneldiff.core.session", "KernelRef": "kerneldiff.core.session",
         "RunSession": "kerneldiff.core.session", "Session": "kerneldiff.core.session",
         "open_session": "kerneldiff.core.session"}


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(mod), name)


def load(path, **kwargs):
    """Load one trace into a TraceModel with its readings (see kerneldiff.core.orchestration.load)."""
    from kerneldiff.core.orchestration import load as _load

    return _load(path, **kwargs)


__all__ = ["KernelDetail", "KernelRef", "LoadCancelled", "RunSession", "Session", "TraceError", "TraceInfo", "load",
           "open_session", "probe"]
