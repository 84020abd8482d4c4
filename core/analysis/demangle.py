"""Moved to kerneldiff.core.names.demangle. Kept only for tui/text.py and tui/screens/kernel.py,
which this package's owner may not edit: delete when they import kerneldiff.core.names.demangle."""

from kerneldiff.core.names.demangle import demangle, readable

__all__ = ["demangle", "readable"]
