"""Comparisons kept on disk beside the models they were made from, so that the explorer shows a pair
it has compared before at once: read back without numpy, the analyses or either trace loaded
(the explorer loads the traces behind its first frame, for the drill-downs).

One file per entry, `<key>.kdr` in the model cache's directory (kerneldiff.core.cache_keys):

    header line: JSON {"format", "key", "length", "crc"} | payload: JSON {"phases", "comparison"}

Never pickled: each result dataclass is a JSON object with its class name under "~", and reading
builds back only the result types (`_TYPES`). Writing refuses what JSON would not give back as it
was (a tuple, a numpy number, a key that is not a string, an attribute outside the fields), so a
comparison read back equals the one computed; such a comparison is simply not kept.

The key hashes this format, both trace files as they are now (`file_identity`: path, inode, size,
times, sampled content), the user registry's bytes, every source and data file of kerneldiff.core
(the reader, the analyses, the comparison, the shipped rules and peaks), Python's and numpy's
versions, and what the session was asked (phase, device, fusion-model overrides). Any damage to an
entry makes `get` drop it (the comparison is then computed again); a cache is optional, so
nothing here raises for I/O.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import sys
import zlib
from pathlib import Path
from typing import Any

from kerneldiff.core.cache_keys import cache_dir, file_identity, read_entry, write_entry
from kerneldiff.core.errors import TraceError
from kerneldiff.core.fileio import open_regular

FORMAT = 1
SUFFIX = ".kdr"
TAG = "~"
MAX_ENTRIES = 64                 # the newest kept (a real pair's entry is ~1 MB; models are 100s)
MAX_BYTES = 256 << 20            # an entry claiming more is damaged: never read whole
_CODE_SUFFIXES = (".py", ".so", ".toml", ".json")   # what decides a comparison (not the demo traces)


class _NotPlain(Exception):
    """A value that JSON would not give back as it was."""


# --- the key ------------------------------------------------------------------------------------

_code_hash: str | None = None


def _code() -> str:
    global _code_hash
    if _code_hash is None:
        _code_hash = code_stamp(os.path.dirname(os.path.abspath(__file__)))
    return _code_hash


def code_stamp(root: str) -> str:
    """Every source and data file under `root` by path, size and mtime: the check Python makes of
    its own bytecode caches (hashing core's 1.3 MB would cost ~4 ms of every start; a stat each, <1 ms)."""
    h = hashlib.sha256()
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(_CODE_SUFFIXES):
                st = os.stat(os.path.join(top, name))
                h.update(f"{os.path.relpath(top, root)}/{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def _numpy_version() -> str:
    """numpy's version file, found without importing numpy (its sort and sum orders are ours too)."""
    try:
        spec = importlib.util.find_spec("numpy")
        origin = spec.origin if spec is not None else None
        return Path(origin).with_name("version.py").read_text() if origin else "absent"
    except (OSError, ImportError, ValueError):
        return "unknown"


def _registry(path: str | None) -> str | None:
    """The user registry's bytes, hashed ("" without one); None when it cannot be read (then the
    load says why, and nothing is cached)."""
    if path is None:
        return ""
    try:
        f, _ = open_regular(path, what="registry file")
        with f:
            return hashlib.sha256(f.read()).hexdigest()
    except (OSError, TraceError):
        return None


def key_for(paths: list[str], phase: str, *, registry: str | None = None, device: int | None = None,
            fusion_overrides: dict[str, float] | None = None, identities: list | None = None) -> str | None:
    """The entry key for the comparison of `paths` (A, B) in `phase` with these options; None when a
    file cannot be read as it is. `identities`: the files as they were when loaded (`file_identity`),
    when a comparison of loaded models is being stored."""
    if identities is None:
        identities = [file_identity(p) for p in paths]
    reg = _registry(registry)
    if any(i is None for i in identities) or reg is None:
        return None
    parts = [FORMAT, _code(), sys.version, _numpy_version(), identities, reg, phase, device,
             sorted((fusion_overrides or {}).items())]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:40]


def entry_path(key: str) -> Path:
    return cache_dir() / f"{key}{SUFFIX}"


# --- values to JSON and back --------------------------------------------------------------------

def _types() -> dict[str, type]:
    from kerneldiff.core.analysis.peaks import Peaks
    from kerneldiff.core.analysis.stats import Stats
    from kerneldiff.core.compare import fusion_params, host_result, result, side_timeline, work_result

    types = {"Peaks": Peaks, "Stats": Stats}
    for mod in (result, work_result, side_timeline, host_result, fusion_params):
        for name, obj in vars(mod).items():
            if isinstance(obj, type) and (dataclasses.is_dataclass(obj) or _is_struct(obj)) \
                    and obj.__module__ == mod.__name__:
                types[name] = obj
    return types


_TYPES: dict[str, type] = {}
_FIELDS: dict[type, tuple[str, ...]] = {}


def _known() -> dict[str, type]:
    if not _TYPES:
        _TYPES.update(_types())
        _FIELDS.update({t: t.__struct_fields__ if _is_struct(t) else tuple(f.name for f in dataclasses.fields(t))
                        for t in _TYPES.values()})
    return _TYPES


def plain(value: Any) -> Any:
    """`value` as JSON values, result dataclasses tagged with their class; _NotPlain for anything
    that would not come back as it was."""
    t = type(value)
    if value is None or t is str or t is int or t is float or t is bool:
        return value
    if t is list:
        return [plain(v) for v in value]
    if t is dict:
        if TAG in value or not all(type(k) is str for k in value):
            raise _NotPlain("a dict key")
        return {k: plain(v) for k, v in value.items()}
    names = _FIELDS.get(t) if _known().get(t.__name__) is t else None
    if names is None:
        raise _NotPlain(t.__name__)
    # an attribute set outside the fields would be lost (a Struct has no room for one)
    if not _is_struct(t) and vars(value).keys() != set(names):
        raise _NotPlain(f"{t.__name__} attributes")
    out = {TAG: t.__name__}
    for name in names:
        out[name] = plain(getattr(value, name))
    return out


def _build(d: dict[str, Any]) -> Any:
    name = d.pop(TAG, None)
    if name is None:
        return d
    cls = _known().get(name)
    if cls is None or d.keys() != set(_FIELDS[cls]):
        raise ValueError(f"not a result type: {name!r}")
    if _is_struct(cls):
        return cls(**d)      # a Struct's __init__ only assigns
    obj = cls.__new__(cls)
    obj.__dict__.update(d)   # the values as they were computed: no __init__ to run again
    return obj


def _is_struct(t: type) -> bool:
    """A msgspec Struct (a result type whose JSON renames a field: side_timeline.PassTimeline)."""
    from kerneldiff.core.msgspec_import import msgspec

    return issubclass(t, msgspec.Struct)


def loads(blob: bytes) -> Any:
    return json.loads(blob, object_hook=_build)


def dumps(value: Any) -> bytes:
    return json.dumps(plain(value), ensure_ascii=False, allow_nan=True, separators=(",", ":")).encode()


# --- the entries --------------------------------------------------------------------------------

def get(key: str):
    """(Comparison, phases) stored under `key`, or None (absent or damaged: then deleted)."""
    return read_entry(entry_path(key), lambda f, size: _read(f, key, size))


def _read(f, key: str, size: int):
    if size > MAX_BYTES:
        raise ValueError("not an entry")
    head = json.loads(f.readline(4096))
    length, crc = head["length"], head["crc"]
    if head.get("format") != FORMAT or head.get("key") != key or type(length) is not int \
            or type(crc) is not int:
        raise ValueError("other format or key")
    blob = f.read(length + 1)
    if len(blob) != length or zlib.crc32(blob) != crc:
        raise ValueError("length or checksum")
    doc = loads(blob)
    comparison, phases = doc["comparison"], doc["phases"]
    from kerneldiff.core.compare.result import Comparison

    if type(comparison) is not Comparison or type(phases) is not list or not all(type(x) is str for x in phases):
        raise ValueError("not a comparison")
    return comparison, phases


def put(key: str, comparison, phases: list[str]) -> bool:
    """Store the comparison and the session's phases under `key`; False when it is not kept (writing
    is off, a value JSON would not give back as it was, or the disk refused)."""
    from kerneldiff.core.ingest.cache import max_bytes

    if max_bytes() <= 0:   # KERNELDIFF_CACHE_MAX=0 turns all cache writing off
        return False
    try:
        blob = dumps({"phases": list(phases), "comparison": comparison})
    except (_NotPlain, ValueError, RecursionError):
        return False
    head = json.dumps({"format": FORMAT, "key": key, "length": len(blob), "crc": zlib.crc32(blob)}).encode()
    if not write_entry(entry_path(key), lambda f: f.write(head + b"\n" + blob)):
        return False
    _evict(cache_dir())
    return True


def _evict(d: Path) -> None:
    """Keep the MAX_ENTRIES most recently used entries (the model cache's size limit counts models)."""
    try:
        entries = sorted((p.stat().st_mtime, p) for p in d.glob(f"*{SUFFIX}"))
        for _, p in entries[:-MAX_ENTRIES]:
            p.unlink(missing_ok=True)
    except OSError:
        pass
