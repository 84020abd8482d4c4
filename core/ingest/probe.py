"""Instant metadata probe: what a trace is, read from the head of the file only.

Kineto writes its metadata (device properties, runtime versions, distributed info) before
`traceEvents`, so a few hundred KB of the head tell us GPU, vendor and trace kind in milliseconds,
whatever the file size. The probe never reads further than `HEAD_BYTES` of (decompressed) data.
"""

from __future__ import annotations

import io
import math
import os
import re
from dataclasses import dataclass, field, fields
from typing import Any

import ijson

from kerneldiff.core.errors import TraceError, file_error
from kerneldiff.core.ingest import document
from kerneldiff.core.fileio import open_regular
from kerneldiff.core.gzip_stream import GZIP_MAGIC, inflate
from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.names.gpus import gpu_name as _gpu_name

HEAD_BYTES = 256 * 1024
TAIL_BYTES = 256 * 1024
# a gzip trace this small is decompressed whole to find metadata written after traceEvents
SMALL_GZIP = 4 * 1024 * 1024
TAIL_INFLATE = 128 * 1024 * 1024   # ... but never more than this much output (a gzip of blanks)
HEAD_INPUT = 16 * 1024 * 1024      # compressed bytes read at most for the head (empty members)
# Metadata and the first events are read to this depth; a value nested deeper is skipped (not
# built): args nested 10^6 deep would otherwise cost gigabytes.
MAX_DEPTH = 64
UTF8_BOM = b"\xef\xbb\xbf"

AMD_KEYS = ("roctracer_version", "hip_runtime_version", "hip_driver_version")
NVIDIA_KEYS = ("cupti_version", "cuda_runtime_version", "cuda_driver_version")

# (computeMajor, computeMinor) -> what HIP calls the architecture; device names are empty in some
# ROCm traces (e.g. the vLLM MI300X one), so this is the best name we can give.
@dataclass
class TraceInfo:
    """What the instant probe read of a trace file: its kind, GPU and device, what the recording holds."""

    path: str
    size: int                                   # bytes on disk
    compressed: bool
    kind: str                                   # kineto | chrome-array | aie | unknown
    vendor: str = "other"                       # AMD | NVIDIA | other
    gpu: str = ""                               # best display name
    gpu_source: str = ""                        # where the name came from
    device_count: int = 0
    device: dict[str, Any] = field(default_factory=dict)   # properties of the first device
    devices: list[dict[str, Any]] = field(default_factory=list)   # properties of every device, in order
    runtime: dict[str, Any] = field(default_factory=dict)  # *_version keys
    distributed: dict[str, Any] = field(default_factory=dict)  # rank, world_size, backend
    with_stack: bool | None = None
    record_shapes: bool | None = None
    profile_memory: bool | None = None          # the metadata's profile_memory (None: not said)
    metadata_complete: bool = True              # False if traceEvents came before the metadata
    aie_cores: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """dataclasses.asdict's result, without its deep copy of every value (~1 ms of an `info`:
        the values are JSON's, and only the containers need copying)."""
        return {f.name: _copied(getattr(self, f.name)) for f in fields(self)}

    @property
    def memory_gb(self) -> float | None:
        mem = self.device.get("totalGlobalMem")
        return round(mem / 2**30) if isinstance(mem, (int, float)) and mem > 0 else None


def _copied(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copied(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copied(x) for x in v]
    if isinstance(v, (str, int, float, type(None))):
        return v
    from copy import deepcopy   # not a value a trace's JSON holds: as asdict would

    return deepcopy(v)


# deviceProperties fields every reader takes for integers (names as Kineto writes them)
DEVICE_INTS = frozenset(("id", "computeMajor", "computeMinor", "numSms", "warpSize", "totalGlobalMem",
                         "maxThreadsPerBlock", "maxThreadsPerMultiprocessor", "maxThreadsPerMultiProcessor",
                         "regsPerBlock", "regsPerMultiprocessor", "sharedMemPerBlock",
                         "sharedMemPerMultiprocessor", "sharedMemPerBlockOptin", "maxSharedMemoryPerMultiProcessor"))
_INT64 = 2**63


def _count(v: Any) -> int | None:
    """A non-negative 64-bit integer (an integral float such as 9.0 counts), else None."""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < _INT64 else None


def clean_device(dev: dict) -> dict[str, Any]:
    """A device's properties with the values no reader can use dropped: lists, objects, numbers
    that are not finite or beyond 64 bits, and known integer fields given as anything but a
    non-negative integer (an integral float such as 9.0 counts). Metadata of the wrong type must
    cost that one value, never the trace (docs/ERRORS.md: the bad parts are ignored)."""
    out: dict[str, Any] = {}
    for k, v in dev.items():
        if not isinstance(k, str) or isinstance(v, (dict, list)):
            continue
        if k in DEVICE_INTS:
            v = _count(v)
            if v is None:
                continue
        elif k == "name" and not isinstance(v, str):
            continue
        elif isinstance(v, float) and not math.isfinite(v):
            continue
        elif isinstance(v, int) and not isinstance(v, bool) and not -_INT64 <= v < _INT64:
            continue
        out[k] = v
    return out


def clean_distributed(dist: dict) -> dict[str, Any]:
    """rank, world_size (non-negative 64-bit integers), backend (text) and the sizes of its process
    groups of 2 ranks or more (group_sizes) where they are usable."""
    out: dict[str, Any] = {}
    for k in ("rank", "world_size"):
        v = _count(dist.get(k))
        if v is not None:
            out[k] = v
    if isinstance(dist.get("backend"), str):
        out["backend"] = dist["backend"]
    # the sizes of the process groups (pg_config's pg_size) that span 2 ranks or more: where they are
    # all one size, every collective's group has it (analysis.collectives.group_of_world)
    cfg = dist.get("pg_config")
    if isinstance(cfg, list):
        sizes = {_count(p.get("pg_size")) for p in cfg if isinstance(p, dict)}
        sizes = sorted(x for x in sizes if x is not None and x >= 2)
        if sizes:
            out["group_sizes"] = sizes
    return out


def read_head(path: str, limit: int = HEAD_BYTES) -> tuple[bytes, bool, int]:
    """Return (decompressed head bytes, compressed?, size on disk). Only a regular file is read
    (kerneldiff.core.fileio); gzip members are one stream, so a blank first member does not
    hide the trace behind it."""
    f, st = open_regular(path)
    try:
        with f:
            raw = f.read(limit)
            if raw[:2] != GZIP_MAGIC:
                return raw, False, st.st_size
            f.seek(0)
            out = b"".join(inflate(f, path, limit, HEAD_INPUT))
    except OSError as e:
        raise file_error(path, e) from None
    return out[:limit], True, st.st_size


def _vendor(meta: dict[str, Any], dev: dict[str, Any]) -> str:
    if any(k in meta for k in AMD_KEYS):
        return "AMD"
    if any(k in meta for k in NVIDIA_KEYS):
        return "NVIDIA"
    name = str(dev.get("name") or "").lower()
    if any(s in name for s in ("amd", "instinct", "radeon", "mi300", "mi250", "mi355")):
        return "AMD"
    if any(s in name for s in ("nvidia", "tesla", "geforce", "quadro", "a100", "h100", "b200")):
        return "NVIDIA"
    warp = dev.get("warpSize")
    if warp == 64:
        return "AMD"
    if warp == 32:
        return "NVIDIA"
    return "other"


def _truthy(v: Any) -> bool | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes")
    return bool(v)


class _Head:
    """What the head of a trace told us: top-level metadata and the first few events."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.first_events: list[Any] = []
        self.top: str | None = None         # object | array | scalar | invalid
        self.saw_events_key = False


# A JSON string, or (group 1) a value the probe's parser (yajl) refuses and stops at: the
# literals Python's json writes for non-finite floats, integers beyond 64 bits, exponents that
# overflow a double. The quick test finds whether a head holds any such thing at all.
_STRING_OR_UNREADABLE = LazyPattern(
    rb'"(?:[^"\\]++|\\.)*+"|(-?Infinity|NaN|-?[0-9]{19,}+(?:\.[0-9]*+)?(?:[eE][-+]?[0-9]++)?'
    rb'|-?[0-9]++(?:\.[0-9]*+)?[eE][-+]?[0-9]{3,}+)', re.S)
_MAYBE_UNREADABLE = LazyPattern(rb"NaN|Infinity|[0-9]{19}|[eE][-+]?[0-9]{3}")


def _unreadable_as_null(head: bytes) -> bytes:
    """Such values read as null: one of them must not cost every metadata key after it (a NaN
    memory size made the GPU unknown, a 10**400 one crashed the comparison)."""
    if not _MAYBE_UNREADABLE.search(head):
        return head
    return _STRING_OR_UNREADABLE.sub(lambda m: m.group(0) if m.group(1) is None else b"null", head)


def _scan_head(head: bytes, max_events: int = 64) -> _Head:
    """Top-level metadata and the first events of a (possibly cut) JSON document. A head the
    parser stopped in, at a value it cannot hold, is read again with such values as null."""
    h, stopped = _parse_head(head, max_events)
    if stopped:
        fixed = _unreadable_as_null(head)
        if fixed != head:
            h = _parse_head(fixed, max_events)[0]
    return h


def _parse_head(head: bytes, max_events: int) -> tuple[_Head, bool]:
    """(what the head holds, whether the parser stopped before its end for another reason than
    the cut). basic_parse has no prefix strings (ijson's prefixes grow with the depth: quadratic
    on deep nesting), and values nested beyond MAX_DEPTH are skipped, so time and memory stay
    linear in the head's size."""
    h = _Head()
    depth = 0                  # nesting depth after the current parse event
    key: str | None = None     # current top-level key (object traces)
    builder: ijson.ObjectBuilder | None = None
    dropping = False           # inside a value nested too deeply: skipped until it ends
    try:
        for event, value in ijson.basic_parse(io.BytesIO(head), use_float=True):
            opening = event in ("start_map", "start_array")
            closing = event in ("end_map", "end_array")
            if h.top is None:
                h.top = {"start_map": "object", "start_array": "array"}.get(event, "scalar")
                if h.top == "scalar":
                    break
                depth = 1
                continue
            if opening:
                depth += 1
            elif closing:
                depth -= 1
            if builder is not None and depth > MAX_DEPTH:
                builder, dropping = None, True
            if h.top == "object" and depth == 1 and event == "map_key":
                key = value
                h.saw_events_key |= key == "traceEvents"
                continue
            in_events = h.top == "array" or key == "traceEvents"
            if in_events:
                item_depth = 2 if h.top == "array" else 3
                if dropping:
                    dropping = depth > item_depth - 1
                elif builder is None and opening and depth == item_depth and len(h.first_events) < max_events:
                    builder = ijson.ObjectBuilder()
                if builder is not None:
                    builder.event(event, value)
                    if depth == item_depth - 1:
                        h.first_events.append(builder.value)
                        builder = None
                if depth == 0 or len(h.first_events) >= max_events:
                    break  # enough events; metadata after traceEvents comes from the tail
                if h.top == "object" and depth == 1 and closing:
                    key = None
                continue
            if h.top == "object" and key is not None:
                if dropping:
                    if depth == 1:
                        dropping, key = False, None
                    continue
                if builder is None and not opening and depth == 1:
                    h.meta[key] = value          # scalar value
                    key = None
                    continue
                if builder is None:
                    builder = ijson.ObjectBuilder()
                builder.event(event, value)
                if depth == 1:
                    h.meta[key] = builder.value
                    builder = None
                    key = None
    except ijson.IncompleteJSONError as e:
        # the head ends mid-document: expected for any real trace; yajl's overflows land here too
        return h, "premature EOF" not in str(e)
    except (ijson.JSONError, ValueError, UnicodeDecodeError):
        if h.top is None or not (h.meta or h.first_events):
            h.top = "invalid"
        return h, True
    return h, False


def read_tail(path: str, compressed: bool, size: int, limit: int = TAIL_BYTES) -> bytes:
    """The last `limit` decompressed bytes, or b"" when that would cost more than the probe budget
    (a gzip must be inflated from its start: only small ones, and never more than TAIL_INFLATE
    bytes of output, so a small gzip of gigabytes of blanks costs milliseconds, not seconds)."""
    try:
        f, _ = open_regular(path)
        with f:
            if not compressed:
                f.seek(max(0, size - limit))
                return f.read(limit)
            if size > SMALL_GZIP:
                return b""
            tail = bytearray()
            produced = 0
            for piece in inflate(f, path, TAIL_INFLATE + 1, SMALL_GZIP):
                produced += len(piece)
                tail += piece
                del tail[:-limit]
            return b"" if produced > TAIL_INFLATE else bytes(tail)
    except (OSError, TraceError):
        return b""


# the events array's ']' is one of these: a ']' before the next member or the object's end
_ARRAY_CLOSE = LazyPattern(rb"\][ \t\r\n]*+(?=[,}])")


def _tail_metadata(path: str, compressed: bool, size: int) -> dict[str, Any]:
    """Metadata keys Kineto sometimes writes after traceEvents (e.g. HF traces). The tail is read
    by structure, not by a byte search for key names: the events array ends at the first ']' after
    which the rest of the tail is the top-level object's last members and its end (document.py), so
    a key written with escapes (`"\\u0064eviceProperties"`) still counts and a key of the same name
    nested in another member does not."""
    tail = read_tail(path, compressed, size)
    n = len(tail)
    for m in _ARRAY_CLOSE.finditer(tail):
        try:
            end = document.document_end(tail, m.end(), n, in_object=True, eof=True)
        except (document.Incomplete, document.Malformed, document.DuplicateEvents):
            continue
        if end.trailing:
            continue   # a ']' inside an event: its object closes before the document does
        if tail[m.end()] != ord(","):
            return {}  # nothing after the events
        # the members again through the head's parser: its handling of values no reader can hold
        return _scan_head(b"{" + tail[m.end() + 1:]).meta
    return {}


def _arg_text(event: dict, key: str) -> str:
    """event["args"][key] as text; "" when args is absent, null or not an object."""
    args = event.get("args")
    return str(args.get(key, "")) if isinstance(args, dict) else ""


def _looks_aie(events: list[dict]) -> bool:
    try:
        from kerneldiff.core.aie.detect import is_aie_events
    except ImportError:  # pragma: no cover - AIE module absent
        return False
    try:
        return bool(is_aie_events(events))
    except Exception:  # a detector must never break the probe
        return False


# What a file that is not JSON most often is, by its first bytes (after any gzip layer)
_MAGIC = ((b"BZh", "bzip2-compressed data (kerneldiff reads plain or gzip JSON: decompress it first)"),
          (b"\xfd7zXZ\x00", "xz-compressed data (kerneldiff reads plain or gzip JSON: decompress it first)"),
          (b"\x28\xb5\x2f\xfd", "zstd-compressed data (kerneldiff reads plain or gzip JSON: decompress it first)"),
          (b"PK\x03\x04", "a zip archive (extract the trace from it first)"),
          (b"\x00\x00\xfe\xff", "UTF-32 text (save the trace as UTF-8)"),
          (b"\xff\xfe\x00\x00", "UTF-32 text (save the trace as UTF-8)"),
          (b"\xff\xfe", "UTF-16 text (save the trace as UTF-8)"),
          (b"\xfe\xff", "UTF-16 text (save the trace as UTF-8)"))


def _foreign_format(head: bytes) -> str | None:
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    if len(head) >= 4 and head[1:4:2] == b"\x00\x00" and head[0] and head[2]:
        return "UTF-16 text (save the trace as UTF-8)"    # no byte order mark, '{' then NUL
    return None


def probe(path: str | os.PathLike) -> TraceInfo:
    """Identify a trace from its head. Raises TraceError for files that cannot be a trace."""
    import time

    t0 = time.perf_counter()
    path = os.fspath(path)
    head, compressed, size = read_head(path)
    head = head.removeprefix(UTF8_BOM)  # Windows tools write one; JSON parsers may ignore it (RFC 8259)
    if size == 0:
        raise TraceError(path, "file is empty")
    if not head.strip():
        raise TraceError(path, "no JSON content (file is blank" + (" after decompression)" if compressed else ")"))
    b = _scan_head(head)
    info = TraceInfo(path=path, size=size, compressed=compressed, kind="unknown")
    if b.top in (None, "invalid", "scalar"):
        raise TraceError(path, "not JSON: " + (_foreign_format(head) or "a Chrome/Kineto trace must start with "
                                                                          "'{' or '['"))
    meta = b.meta
    if b.top == "object" and b.saw_events_key and "deviceProperties" not in meta:
        meta = {**_tail_metadata(path, compressed, size), **meta}
    if b.top == "array" or (b.top == "object" and b.saw_events_key):
        evs = [e for e in b.first_events if isinstance(e, dict)]
        if _looks_aie(evs):
            info.kind = "aie"
            info.vendor = "AMD"
            info.gpu = "AMD AIE (NPU)"
            info.gpu_source = "AIE trace events"
            info.aie_cores = sorted({name for e in evs if e.get("ph") == "M" and e.get("name") == "process_name"
                                     and "core" in (name := _arg_text(e, "name"))})
        else:
            info.kind = "kineto" if b.top == "object" else "chrome-array"
    devs = meta.get("deviceProperties")
    devs = [d for d in devs if isinstance(d, dict)] if isinstance(devs, list) else []
    info.device_count = len(devs)
    info.device = clean_device(devs[0]) if devs else {}
    info.devices = [clean_device(d) for d in devs]
    if info.kind != "aie":
        info.vendor = _vendor(meta, info.device)
        info.gpu, info.gpu_source = _gpu_name(info.vendor, info.device)
    info.runtime = {k: v for k, v in meta.items() if k.endswith("_version") and not isinstance(v, (dict, list))}
    dist = meta.get("distributedInfo")
    if isinstance(dist, dict):
        info.distributed = clean_distributed(dist)
    info.with_stack = _truthy(meta.get("with_stack"))
    info.record_shapes = _truthy(meta.get("record_shapes"))
    info.profile_memory = _truthy(meta.get("profile_memory"))
    info.metadata_complete = bool(devs) or info.kind != "kineto"
    info.seconds = time.perf_counter() - t0
    return info


def json_bytes(info: TraceInfo) -> int:
    """The size of the JSON a trace holds: a plain file's size, or what a gzip's trailer says it
    inflates to (modulo 4 GiB, as the format stores it; ten times the file if unreadable)."""
    if not info.compressed:
        return info.size
    try:
        with open(info.path, "rb") as f:
            f.seek(-4, os.SEEK_END)
            inflated = int.from_bytes(f.read(4), "little")
    except OSError:
        return 10 * info.size
    return inflated if inflated >= info.size else 10 * info.size
