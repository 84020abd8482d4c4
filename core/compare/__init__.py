"""Comparing two loaded traces: the one entry point `compare(a, b, phase)`, the result types,
kernel alignment inside a layer and fusion findings."""
from kerneldiff.core.compare.engine import compare

__all__ = ["compare"]
