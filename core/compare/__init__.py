"""Comparing two loaded traces: the one entry point `compare(a, b, phase)`, the result types,
kernel alignment inside a layer and fusion findings.

`compare` is imported on first use: a front end that checks its options against a submodule
(`fusion_model`, `result`) before any trace is read does not pay for the engine and numpy then."""

__all__ = ["compare"]


def __getattr__(name: str):
    if name == "compare":
        from kerneldiff.core.compare.engine import compare

        return compare
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
