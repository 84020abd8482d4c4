"""Moved to kerneldiff.core.names (display, visible). Kept only for tui/text.py, which this
package's owner may not edit: delete when it imports kerneldiff.core.names."""

from kerneldiff.core.names.display import distinct_short_names, short_name
from kerneldiff.core.names.visible import visible

__all__ = ["distinct_short_names", "short_name", "visible"]
