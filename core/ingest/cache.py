"""On-disk cache of loaded TraceModels: reopening a 1 GB trace reads ~150 MB of columns instead
of parsing 1 GB of JSON.

One file per entry, `<key>.kdc` in $XDG_CACHE_HOME/kerneldiff/models (~/.cache/... by default):

    b"KDCACHE1" | numpy arrays, each an .npy record (np.lib.format, never pickled)
               | header: JSON (strings, steps, warnings, info, ...; array offsets and CRC32s)
               | u64 header length | u32 header CRC32 | b"KDCEND01"

The key hashes the format version, the source of the modules that build a model, the file's
absolute path, size and mtime_ns, and the effective classifier rules (a user registry changes
categories). Entries are written to a temporary file and renamed into place (two writers of one
key leave one complete file); any mismatch — magic, length, CRC, key — makes `get` drop the entry
and the caller rebuild it. The directory is kept under KERNELDIFF_CACHE_MAX bytes (default 4 GB;
"0" turns writing off) by deleting the least recently used entries.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import struct
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from kerneldiff.core.model import (ANNOTATION_COLUMNS, CPU_OP_COLUMNS, KERNEL_COLUMNS, LAUNCH_COLUMNS, PYTHON_COLUMNS,
                    LayerSpan, Step, Table, TraceModel)
from kerneldiff.core.strings import StringTable

try:  # ISA-L's CRC32 is several times faster than zlib's
    from isal.isal_zlib import crc32
except ImportError:  # pragma: no cover
    crc32 = zlib.crc32

FORMAT_VERSION = 1
MAGIC, END = b"KDCACHE1", b"KDCEND01"
TRAILER = struct.Struct("<QI8s")          # header length, header CRC32, END
DEFAULT_MAX = 4 * 10**9
TABLES = {"kernels": KERNEL_COLUMNS, "cpu_ops": CPU_OP_COLUMNS, "launches": LAUNCH_COLUMNS,
          "python": PYTHON_COLUMNS, "annotations": ANNOTATION_COLUMNS}
# the code that decides what a loaded model contains: every module of these packages (a new one
# is included without being listed: a listed name that moved once made the key ignore its code)
_SOURCE_PACKAGES = ("ingest", "analysis")
_SOURCE_MODULES = ("model.py", "strings.py", "errors.py")
_MODEL_FIELDS = {f.name for f in dataclasses.fields(TraceModel)}
_ARRAY_FIELDS = set(TABLES) | {"strings", "layers", "info", "path", "steps"}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kerneldiff" / "models"


def max_bytes() -> int:
    """KERNELDIFF_CACHE_MAX: bytes, or with a unit (500MB, 4GB); 0 disables writing."""
    text = os.environ.get("KERNELDIFF_CACHE_MAX", "").strip().upper()
    if not text:
        return DEFAULT_MAX
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "K": 10**3, "M": 10**6, "G": 10**9, "B": 1}
    for u in sorted(units, key=len, reverse=True):
        if text.endswith(u):
            try:
                return int(float(text[: -len(u)]) * units[u])
            except ValueError:
                return DEFAULT_MAX
    try:
        return int(float(text))
    except ValueError:
        return DEFAULT_MAX


_code_hash: str | None = None


def _code_fingerprint() -> str:
    global _code_hash
    if _code_hash is None:
        _code_hash = code_fingerprint(_sources())
    return _code_hash


def _sources() -> list[Path]:
    core = Path(__file__).resolve().parents[1]
    files = [core / name for name in _SOURCE_MODULES]
    for pkg in _SOURCE_PACKAGES:
        files += sorted((core / pkg).glob("*.py"))
    return files


def code_fingerprint(files: list[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0")
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(b"missing")
    return h.hexdigest()


def classifier_fingerprint(classifier) -> str:
    """Hash of the effective rules and category metadata (categories decide classes, roles decide
    layers). Rules are dataclasses: their repr lists every field."""
    blob = repr((list(getattr(classifier, "rules", [])), getattr(classifier, "_meta", None),
                 list(getattr(classifier, "categories", [])), list(getattr(classifier, "op_rules", [])),
                 list(getattr(classifier, "inductor_rules", [])), getattr(classifier, "inductor_groups", None)))
    return hashlib.sha256(blob.encode()).hexdigest()


def key_for(path: str | os.PathLike, classifier) -> str | None:
    """The entry key for a trace file, or None when the file cannot be stat'ed."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return None
    parts = [FORMAT_VERSION, _code_fingerprint(), real, st.st_size, st.st_mtime_ns,
             classifier_fingerprint(classifier)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:40]


def entry_path(key: str) -> Path:
    return cache_dir() / f"{key}.kdc"


# --- writing ------------------------------------------------------------------------------------

def _jsonable(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return dataclasses.asdict(v)
    return v


def put(key: str, model: TraceModel) -> bool:
    """Store `model` under `key`. Never raises for I/O problems (a cache is optional)."""
    limit = max_bytes()
    if limit <= 0:
        return False
    extra = {}
    for name in _MODEL_FIELDS - _ARRAY_FIELDS:
        extra[name] = _jsonable(getattr(model, name))
    d = cache_dir()
    tmp = None
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=d)
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC)
            arrays = {}
            for table in TABLES:
                for col, arr in getattr(model, table).columns.items():
                    arrays[f"{table}.{col}"] = _write_array(f, arr)
            spans = np.array([[s.step, s.layer, s.start, s.end] for s in model.layers], dtype=np.int64).reshape(-1, 4)
            arrays["layers"] = _write_array(f, spans)
            header = {
                "format": FORMAT_VERSION, "key": key, "arrays": arrays,
                "strings": model.strings.strings,
                "info": model.info.to_dict() if hasattr(model.info, "to_dict") else None,
                "steps": [dataclasses.asdict(s) for s in model.steps],
                "fields": extra,
            }
            blob = json.dumps(header, ensure_ascii=False, allow_nan=True).encode()
            f.write(blob)
            f.write(TRAILER.pack(len(blob), crc32(blob), END))
        os.replace(tmp, entry_path(key))
        tmp = None
    except (OSError, TypeError, ValueError):
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _evict(d, limit)
    return True


def _write_array(f, arr: np.ndarray) -> dict[str, Any]:
    arr = np.ascontiguousarray(arr)
    offset = f.tell()
    np.lib.format.write_array(f, arr, allow_pickle=False)
    return {"offset": offset, "length": f.tell() - offset, "crc": crc32(memoryview(arr).cast("B"))}


def _evict(d: Path, limit: int) -> None:
    """Delete least recently used entries (and stale temporary files) beyond `limit` bytes."""
    try:
        entries = []
        now = time.time()
        for p in d.iterdir():
            st = p.stat()
            if p.suffix == ".tmp":
                if now - st.st_mtime > 3600:  # left by a killed writer
                    p.unlink(missing_ok=True)
                continue
            if p.suffix == ".kdc":
                entries.append((st.st_mtime, st.st_size, p))
        total = sum(size for _, size, _ in entries)
        for _, size, p in sorted(entries):
            if total <= limit:
                break
            p.unlink(missing_ok=True)
            total -= size
    except OSError:
        pass


# --- reading ------------------------------------------------------------------------------------

class _Corrupt(Exception):
    pass


def get(key: str) -> TraceModel | None:
    """The cached model for `key`, or None (absent, stale format, or damaged: then deleted)."""
    p = entry_path(key)
    try:
        f = open(p, "rb")
    except OSError:
        return None
    try:
        with f:
            model = _read(f, key)
    except (_Corrupt, OSError, ValueError, KeyError, TypeError, IndexError, struct.error):
        try:
            p.unlink()
        except OSError:
            pass
        return None
    try:
        os.utime(p)  # most recently used: evicted last
    except OSError:
        pass
    return model


def _read(f, key: str) -> TraceModel:
    from kerneldiff.core.ingest.probe import TraceInfo

    size = os.fstat(f.fileno()).st_size
    if size < len(MAGIC) + TRAILER.size or f.read(len(MAGIC)) != MAGIC:
        raise _Corrupt("not a cache entry")
    f.seek(size - TRAILER.size)
    hlen, hcrc, end = TRAILER.unpack(f.read(TRAILER.size))
    if end != END or hlen > size - TRAILER.size - len(MAGIC):
        raise _Corrupt("bad trailer")
    f.seek(size - TRAILER.size - hlen)
    blob = f.read(hlen)
    if len(blob) != hlen or crc32(blob) != hcrc:
        raise _Corrupt("header checksum")
    header = json.loads(blob)
    if header.get("format") != FORMAT_VERSION or header.get("key") != key:
        raise _Corrupt("other format or key")
    arrays = {}
    for name, where in header["arrays"].items():
        f.seek(where["offset"])
        arr = np.lib.format.read_array(f, allow_pickle=False)
        if f.tell() - where["offset"] != where["length"] or crc32(memoryview(arr).cast("B")) != where["crc"]:
            raise _Corrupt(f"array {name}")
        arrays[name] = arr
    tables = {}
    for table, spec in TABLES.items():
        cols = {c: arrays[f"{table}.{c}"] for c, _, _ in spec}
        tables[table] = Table(spec, cols)
    info = TraceInfo(**header["info"]) if header.get("info") is not None else None
    fields = header["fields"]
    model = TraceModel(path=info.path if info is not None else "", info=info,
                       strings=StringTable(header["strings"]), **tables,
                       categories=fields.pop("categories"), rules=fields.pop("rules"))
    model.steps = [Step(**s) for s in header["steps"]]
    model.layers = [LayerSpan(*map(int, row)) for row in arrays["layers"].tolist()]
    for name, value in fields.items():
        if name in _MODEL_FIELDS:
            setattr(model, name, value)
    return model
