"""One kernel as it crosses from a session to the front ends: a typed handle, not a bare row number.
Low in core's layers so that the session implementations (below the facade, kerneldiff.core.session)
can hand it out."""

from __future__ import annotations

from kerneldiff.core.lazy_dataclass import dataclass   # made on first use (start-up)

SIDES = ("a", "b")


@dataclass(frozen=True)
class KernelRef:
    """One kernel of a loaded trace as it crosses to the front ends: the trace (`index`, 0 for A,
    1 for B) and the kernel's row in that trace's model, a handle only the session reads."""

    index: int
    row: int

    @property
    def side(self) -> str:
        return SIDES[self.index]
