"""The host time behind each side's launch-bound idle as a comparison carries it (`Comparison.host`;
`kerneldiff.core.analysis.host_time` computes it, `kerneldiff.core.compare.ledger.host_time` puts it
on the comparison's basis).

A side without passes has no host time: its JSON is `{}`, as it always was, so a side is a msgspec
Struct whose `to_json()` (what `kerneldiff.core.numbers.strict_json` and `json_ready` write for it)
says so. The pair is one too: a comparison whose host time was not read (one built by hand; the
engine always reads it) holds `HostTimes()`, written `{}` as it always was.
"""

from __future__ import annotations

from typing import Any

from kerneldiff.core.msgspec_import import msgspec


class HostTime(msgspec.Struct, frozen=True):
    """One side's host time over the compared passes, split so the parts never overlap."""

    passes: int = 0                    # 0: no passes, so no host time (JSON {})
    host_us: float = 0.0
    launch_calls_us: float = 0.0
    sync_waits_us: float = 0.0
    guard_checks_us: float = 0.0       # TorchDynamo cache lookups
    compiled_regions_us: float = 0.0   # compiled-region calls, outside the parts above
    python_dispatch_us: float = 0.0    # the rest
    compile_ids: list[str] = []
    recompiles: int = 0

    def __bool__(self) -> bool:
        return self.passes > 0

    def to_json(self) -> dict[str, Any]:
        if not self:
            return {}
        from kerneldiff.core.numbers import _scalar

        return msgspec.to_builtins(self, enc_hook=_scalar)


class HostTimes(msgspec.Struct, frozen=True):
    """Both sides' host time; None for both when it was not read."""

    a: HostTime | None = None
    b: HostTime | None = None

    def __bool__(self) -> bool:
        return self.a is not None

    def side(self, key: str) -> HostTime | None:
        return self.a if key == "a" else self.b

    def to_json(self) -> dict[str, Any]:
        if not self:
            return {}
        return {"a": self.a.to_json(), "b": self.b.to_json()}
