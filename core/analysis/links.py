"""Peak GPU-to-GPU link bandwidth per GPU (links.toml), found through the compute peaks' GPU match."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

_TABLE = Path(__file__).with_name("links.toml")


@dataclass(frozen=True)
class LinkPeak:
    key: str          # the GPU's key in peaks.toml
    link: str         # the fabric
    gbps: float       # GB/s per direction
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@cache
def _entries() -> dict[str, LinkPeak]:
    doc = tomllib.loads(_TABLE.read_text(encoding="utf-8"))
    return {e["key"]: LinkPeak(e["key"], e["link"], float(e["gbps"]), e["source"]) for e in doc.get("link", [])}


def link_peak(info: Any, peaks=None) -> LinkPeak | None:
    """The link peak of a trace's GPU (`info`: its TraceInfo), None when the GPU or its link is unknown."""
    from kerneldiff.core.analysis.peaks import default_table

    found = (peaks or default_table()).match(info)
    return _entries().get(found.key) if found is not None else None
