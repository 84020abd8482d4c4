"""Peak throughput of the GPU a trace ran on: the data in `peaks.toml`, matched by device name.

`PeakTable.load(path=None, overrides=None)` reads the shipped table (and a user file, whose entries
are tried first; an entry with a shipped key replaces it), `table.match(info, side)` picks the entry
for a trace's TraceInfo and applies the user's `--peak KEY=VALUE` overrides:

* `FIELD=VALUE` sets a figure on both sides (`hbm=3.0`, `bf16=900`), `a.FIELD=VALUE` /
  `b.FIELD=VALUE` on one side;
* `gpu=KEY` (or `a.gpu=KEY`) picks a table entry by its key instead of matching the name (a VF,
  an unnamed device, a clock-limited part).

Figures are TFLOP/s and TB/s, as in the file; `Peaks.flops(cls)` and `Peaks.bandwidth()` give
FLOP/s and bytes/s. A GPU the table does not know has no peaks: the throughput figures are still
given, the percentages of peak and the bound are not (and a warning says why).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import field
from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use (lazy_dataclass.py)
from typing import TYPE_CHECKING, Any

from kerneldiff.core.analysis.linear_regex import UnsafeRegex, compile_linear
from kerneldiff.core.errors import TraceError
from kerneldiff.core.fileio import read_config
from kerneldiff.core.numbers import number

if TYPE_CHECKING:
    from pathlib import Path

FIGURES = ("bf16", "fp16", "fp8", "fp4", "int8", "tf32", "fp32", "fp64", "hbm")
# What a figure may be, in the file or on the command line: below 1 GFLOP/s (1 GB/s) is no GPU, and
# a thousand times the largest shipped part (~20,000 TFLOP/s fp4, ~8 TB/s) is a typo. Bounded both
# ways because the percentages of peak divide by it: inf, NaN or 1e-320 would print inf or NaN.
_TFLOPS = dict(lo=1e-3, hi=1e6)
_BOUNDS = {**{f: _TFLOPS for f in FIGURES}, "hbm": dict(lo=1e-3, hi=1e4)}
_KEYS = {"key", "name", "match", "source", *FIGURES}
SIDES = ("a", "b")
SHIPPED = "core/analysis/peaks.toml"


@dataclass(frozen=True)
class GpuPeaks:
    """One entry of the table."""

    key: str
    name: str
    match: tuple[str, ...]
    source: str
    figures: tuple[tuple[str, float], ...]      # (figure, value) for the figures given
    origin: str = SHIPPED                        # the file it comes from

    def value(self, figure: str) -> float | None:
        return dict(self.figures).get(figure)


@dataclass
class Peaks:
    """The peaks one side is measured against (what the comparison reports as `peaks.a` / `.b`)."""

    key: str
    name: str
    matched: str                  # how: "name: <regex>" or "override: gpu=<key>"
    source: str
    tflops: dict[str, float]      # bf16, fp16, fp8, fp4, int8, tf32, fp32, fp64 (those known)
    hbm_tbps: float | None
    overridden: list[str] = field(default_factory=list)   # figures the user set

    def flops(self, cls: str) -> float | None:
        """Peak FLOP/s of one class ("bf16", "fp8", "fp32", ...), None when unknown."""
        v = self.tflops.get(cls)
        return v * 1e12 if v else None

    def bandwidth(self) -> float | None:
        """Peak device-memory bandwidth, bytes/s."""
        return self.hbm_tbps * 1e12 if self.hbm_tbps else None


def _entries(doc: dict[str, Any], origin: str) -> list[GpuPeaks]:
    bad_top = set(doc) - {"gpu"}
    if bad_top:
        raise ValueError(f"{origin}: unknown top-level key(s) {', '.join(sorted(bad_top))}; expected [[gpu]] entries")
    out = []
    for i, e in enumerate(doc.get("gpu", [])):
        where = f"{origin}: [[gpu]] #{i + 1}"
        if not isinstance(e, dict):
            raise ValueError(f"{where}: not a table")
        bad = set(e) - _KEYS
        if bad:
            raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(bad))}; known: {', '.join(sorted(_KEYS))}")
        key = e.get("key")
        if not isinstance(key, str) or not key:
            raise ValueError(f"{where}: needs a key")
        match = e.get("match", [])
        if isinstance(match, str):
            match = [match]
        for rx in match if origin != SHIPPED else ():   # the shipped patterns: checked by the tests, compiled when matched
            try:
                compile_linear(rx, re.IGNORECASE)
            except (re.error, TypeError) as err:
                raise ValueError(f"{where} ({key}): bad match regex {rx!r}: {err}") from None
            except UnsafeRegex as err:
                raise ValueError(f"{where} ({key}): {err}") from None
        figs = []
        for f in FIGURES:
            if f in e:
                try:
                    if isinstance(e[f], str):   # a TOML string is not a figure, even "900"
                        raise ValueError(f"not a number: {e[f]!r}")
                    figs.append((f, float(number(e[f], **_BOUNDS[f]))))
                except ValueError as err:   # a bool, 0, inf, nan (TOML has both)
                    raise ValueError(f"{where} ({key}): {f}: {err}") from None
        out.append(GpuPeaks(key, str(e.get("name", key)), tuple(match), str(e.get("source", "")), tuple(figs),
                            origin))
    return out


# (computeMajor, computeMinor) -> architecture, spelled as the probe spells it in the names it
# makes up for unnamed devices (the data-centre parts the table holds)
_ARCH = {"AMD": {(9, 4): "gfx942 (MI300 series)", (9, 5): "gfx950 (MI350 series)", (9, 0): "gfx90a (MI200 series)"},
         "NVIDIA": {(7, 0): "Volta (sm_70)", (8, 0): "Ampere (sm_80)", (8, 9): "Ada (sm_89)", (9, 0): "Hopper (sm_90)",
                    (10, 0): "Blackwell (sm_100)"}}


def match_text(info: Any) -> str:
    """What the `match` regexes are searched in: name | architecture | memory | SMs/CUs, lower case."""
    dev = getattr(info, "device", None) or {}
    cc = (dev.get("computeMajor"), dev.get("computeMinor"))
    arch = _ARCH.get(getattr(info, "vendor", ""), {}).get(cc, "")
    mem = getattr(info, "memory_gb", None)
    sms = dev.get("numSms")
    parts = [str(getattr(info, "gpu", "") or dev.get("name") or ""), arch, f"{mem} gb" if mem else "",
             f"{sms} cu" if isinstance(sms, int) else ""]
    return " | ".join(parts).lower()


@dataclass
class PeakTable:
    entries: list[GpuPeaks]
    # side ("" for both, "a", "b") -> figure -> value; "gpu" -> an entry key
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None = None, overrides: list[str] | dict[str, Any] | None = None) -> "PeakTable":
        """The shipped table, a user file's entries first, and `--peak` overrides. Raises ValueError
        on a malformed file or override (the message names it)."""
        # os.path, not pathlib: a comparison imports nothing else of it (~2.5 ms with urllib, ipaddress)
        with open(os.path.join(os.path.dirname(__file__), "peaks.toml"), encoding="utf-8") as f:
            text = f.read()
        entries = _entries(tomllib.loads(text), SHIPPED)
        if path is not None:
            try:
                doc = tomllib.loads(read_config(str(path), "peaks file"))
            except TraceError as e:
                raise ValueError(str(e)) from None
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
                raise ValueError(f"{path}: not valid TOML ({e})") from None
            mine = _entries(doc, str(path))
            keys = {e.key for e in mine}
            entries = mine + [e for e in entries if e.key not in keys]
        table = cls(entries)
        table.overrides = table._parse(overrides or {})
        return table

    def entry(self, key: str) -> GpuPeaks | None:
        return next((e for e in self.entries if e.key == key), None)

    def _parse(self, items: list[str] | dict[str, Any]) -> dict[str, dict[str, Any]]:
        pairs = list(items.items()) if isinstance(items, dict) else []
        if not isinstance(items, dict):
            for it in items:
                k, sep, v = str(it).partition("=")
                if not sep:
                    raise ValueError(f"--peak wants KEY=VALUE, got {it!r}")
                pairs.append((k.strip(), v.strip()))
        out: dict[str, dict[str, Any]] = {}
        for k, v in pairs:
            side, _, name = k.rpartition(".")
            if side not in ("", *SIDES):
                raise ValueError(f"--peak {k}: the side is a or b (a.{name}, b.{name}), got {side!r}")
            if name == "gpu":
                if self.entry(str(v)) is None:
                    raise ValueError(f"--peak {k}={v}: no GPU with that key; known: "
                                     f"{', '.join(e.key for e in self.entries)}")
                out.setdefault(side, {})[name] = str(v)
                continue
            if name not in FIGURES:
                raise ValueError(f"--peak {k}: unknown figure {name!r}; known: gpu, {', '.join(FIGURES)}")
            try:
                x = float(number(v, **_BOUNDS[name]))
            except ValueError as err:
                raise ValueError(f"--peak {k}: {err}") from None
            out.setdefault(side, {})[name] = x
        return out

    def find(self, info: Any) -> tuple[GpuPeaks, str] | None:
        """The first entry whose regex matches the trace's device, and the regex."""
        text = match_text(info)
        for e in self.entries:
            for rx in e.match:
                if compile_linear(rx, re.IGNORECASE).search(text):   # the device text is the trace's
                    return e, rx
        return None

    def match(self, info: Any, side: str = "") -> Peaks | None:
        """The peaks for one side's trace (None when no entry matches and no override names one)."""
        over = {**self.overrides.get("", {}), **self.overrides.get(side, {})}
        entry, how = None, ""
        if "gpu" in over:
            entry = self.entry(over["gpu"])
            how = f"override: gpu={over['gpu']}"
        else:
            found = self.find(info)
            if found is not None:
                entry, rx = found
                how = f"name: {rx}"
        figs = {f: v for f, v in over.items() if f != "gpu"}
        if entry is None and not figs:
            return None
        base = dict(entry.figures) if entry is not None else {}
        base.update(figs)
        src = entry.source if entry is not None else ""
        if entry is not None and entry.origin != SHIPPED:
            src = f"{entry.origin}: {src}" if src else entry.origin
        if figs:
            src = (src + "; " if src else "") + "overridden: " + ", ".join(f"{k}={v:g}" for k, v in sorted(figs.items()))
        return Peaks(key=entry.key if entry is not None else "user", name=entry.name if entry is not None else "user figures",
                     matched=how or "override", source=src,
                     tflops={f: v for f, v in base.items() if f != "hbm"}, hbm_tbps=base.get("hbm"),
                     overridden=sorted(figs))


_DEFAULT: PeakTable | None = None


def default_table() -> PeakTable:
    """The shipped table without overrides (read once)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = PeakTable.load()
    return _DEFAULT
