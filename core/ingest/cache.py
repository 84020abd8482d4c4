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
import re
import struct
import time
import zlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from kerneldiff.core.model import (ANNOTATION_COLUMNS, CPU_OP_COLUMNS, KERNEL_COLUMNS, LAUNCH_COLUMNS, PYTHON_COLUMNS,
                    Step, Table, TraceModel)
from kerneldiff.core.names.visible import visible
from kerneldiff.core.cache_keys import cache_dir, code_fingerprint, file_identity, read_entry, write_entry
from kerneldiff.core.strings import StringTable

try:  # ISA-L's CRC32 is several times faster than zlib's
    from isal.isal_zlib import crc32
except ImportError:  # pragma: no cover
    crc32 = zlib.crc32

FORMAT_VERSION = 3   # 2: cpu_ops.comm (a collective's parameters); 3: annotations.dims/types
MAGIC, END = b"KDCACHE1", b"KDCEND01"
TRAILER = struct.Struct("<QI8s")          # header length, header CRC32, END
DEFAULT_MAX = 4 * 10**9
# The names go into the entry's JSON header, written and read whole: a trace of a million distinct
# 1 KB names would cost gigabytes to encode (and decode on every reopen). Reading such a trace
# again is cheaper than that; it is not cached. Real traces hold a few MB of names.
MAX_NAME_CHARS = 128 << 20
TABLES = {"kernels": KERNEL_COLUMNS, "cpu_ops": CPU_OP_COLUMNS, "launches": LAUNCH_COLUMNS,
          "python": PYTHON_COLUMNS, "annotations": ANNOTATION_COLUMNS}
# the code that decides what a loaded model contains: every module of these packages (a new or
# moved module is included without being listed, so the key never ignores code that shapes a model)
_SOURCE_PACKAGES = ("ingest", "analysis", "names")   # names: cuts the classifier's match text
_SOURCE_MODULES = ("model.py", "strings.py", "errors.py", "gzip_stream.py")
_MODEL_FIELDS = {f.name for f in dataclasses.fields(TraceModel)}
_ARRAY_FIELDS = set(TABLES) | {"strings", "layers", "info", "path", "steps"}


_SIZE = re.compile(r"([0-9]{1,15}(?:\.[0-9]{0,6})?)\s*(B|K|KB|M|MB|G|GB|T|TB)?", re.ASCII | re.IGNORECASE)
_UNITS = {"": 1, "B": 1, "K": 10**3, "KB": 10**3, "M": 10**6, "MB": 10**6, "G": 10**9, "GB": 10**9,
          "T": 10**12, "TB": 10**12}


def parse_size(text: str) -> int:
    """Bytes from "4000000000", "500MB", "1.5 GB"; anything else (inf, 1e400, -1, nan, Unicode
    digits) is a ValueError: a limit is never guessed."""
    m = _SIZE.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"KERNELDIFF_CACHE_MAX={visible(text)!r} is not a size (bytes, or with a unit: "
                         f"500MB, 4GB; 0 turns cache writing off)")
    return int(Decimal(m.group(1)) * _UNITS[(m.group(2) or "").upper()])


def setting_problem() -> str | None:
    """Why KERNELDIFF_CACHE_MAX cannot be used, or None (the CLI refuses to start with it)."""
    try:
        max_bytes(strict=True)
    except ValueError as e:
        return str(e)
    return None


def max_bytes(strict: bool = False) -> int:
    """KERNELDIFF_CACHE_MAX: bytes, or with a unit (500MB, 4GB); 0 disables writing. An invalid
    value turns writing off (or raises ValueError with `strict`)."""
    text = os.environ.get("KERNELDIFF_CACHE_MAX", "")
    if not text.strip():
        return DEFAULT_MAX
    try:
        return parse_size(text)
    except ValueError:
        if strict:
            raise
        return 0


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
    files += sorted((core / "ingest").glob("_fastscan*.so"))   # the compiled scanner, where built
    return files


def classifier_fingerprint(classifier) -> str:
    """Hash of the effective rules and category metadata (categories decide classes, roles decide
    layers). Rules are NamedTuples: their repr lists every field."""
    blob = repr((list(getattr(classifier, "rules", [])), getattr(classifier, "_meta", None),
                 list(getattr(classifier, "categories", [])), list(getattr(classifier, "op_rules", [])),
                 list(getattr(classifier, "inductor_rules", [])), getattr(classifier, "inductor_groups", None)))
    return hashlib.sha256(blob.encode()).hexdigest()


def key_for(path: str | os.PathLike, classifier) -> str | None:
    """The entry key for a trace file, or None when it cannot be opened as a regular file: the
    file as it is now (`file_identity`), the code that builds a model and the classifier's rules."""
    identity = file_identity(path)
    if identity is None:
        return None
    parts = [FORMAT_VERSION, _code_fingerprint(), *identity, classifier_fingerprint(classifier)]
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
    if sum(map(len, model.strings.strings)) > MAX_NAME_CHARS:
        return False
    extra = {}
    for name in _MODEL_FIELDS - _ARRAY_FIELDS:
        extra[name] = _jsonable(getattr(model, name))

    def write(f) -> None:
        f.write(MAGIC)
        arrays = {}
        for table in TABLES:
            for col, arr in getattr(model, table).columns.items():
                arrays[f"{table}.{col}"] = _write_array(f, arr)
        arrays["layers"] = _write_array(f, model.layer_rows())
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

    if not write_entry(entry_path(key), write, (OSError, TypeError, ValueError, MemoryError)):
        return False
    _evict(cache_dir(), limit)
    return True


def _write_array(f, arr: np.ndarray) -> dict[str, Any]:
    arr = np.ascontiguousarray(arr)
    offset = f.tell()
    np.lib.format.write_array(f, arr, allow_pickle=False)
    return {"offset": offset, "length": f.tell() - offset, "crc": _crc(arr)}


def _crc(arr: np.ndarray) -> int:
    # an empty column (a trace without Python stacks, CPU ops or layers) has a zero in its shape,
    # which memoryview cannot cast: without this such traces would silently never be cached
    return crc32(memoryview(arr).cast("B")) if arr.size else crc32(b"")


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


def has(path: str | os.PathLike, classifier) -> bool:
    """Is there an entry for this trace file as it is now (whether it reads back is get's to say)?"""
    key = key_for(path, classifier)
    return key is not None and entry_path(key).is_file()


def get(key: str) -> TraceModel | None:
    """The cached model for `key`, or None (absent, stale format, or damaged: then deleted). A
    cache is optional: whatever is wrong with an entry (a symlink, a FIFO, a header that lies)
    only costs a rebuild, never a hang or an error."""
    return read_entry(entry_path(key), lambda f, size: _read(f, key, size))


def _read_array(f, where: Any, size: int) -> np.ndarray:
    """One .npy record, its header checked against the entry before anything is allocated (a
    header claiming 2^40 rows must not cost an allocation attempt on every run)."""
    if not isinstance(where, dict):
        raise _Corrupt("array entry")
    off, length, crc = where.get("offset"), where.get("length"), where.get("crc")
    if not all(type(v) is int for v in (off, length, crc)) or off < len(MAGIC) or length <= 0 \
            or off + length > size - TRAILER.size:
        raise _Corrupt("array bounds")
    f.seek(off)
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    else:
        raise _Corrupt("array version")
    count = 1
    for n in shape:
        count *= n
    if dtype.hasobject or fortran or f.tell() - off + count * dtype.itemsize != length:
        raise _Corrupt("array header")
    arr = np.fromfile(f, dtype=dtype, count=count).reshape(shape)
    if _crc(arr) != crc:
        raise _Corrupt("array checksum")
    return arr


def _read(f, key: str, size: int) -> TraceModel:
    from kerneldiff.core.ingest.probe import TraceInfo

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
    if not isinstance(header, dict) or not isinstance(header.get("arrays"), dict):
        raise _Corrupt("header is not an object")
    if header.get("format") != FORMAT_VERSION or header.get("key") != key:
        raise _Corrupt("other format or key")
    arrays = {name: _read_array(f, where, size) for name, where in header["arrays"].items()}
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
    model.set_layer_rows(arrays["layers"])
    for name, value in fields.items():
        if name in _MODEL_FIELDS:
            setattr(model, name, value)
    return model
