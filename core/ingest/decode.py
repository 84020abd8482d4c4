"""msgspec decoding of a slice of events: the typed fast path that keeps only the fields kerneldiff
uses, the lenient path for the rare slice it rejects (numbers as strings, nulls, odd types),
and the Failure that tells the cutter where a slice stopped being JSON."""

from __future__ import annotations

import re
from operator import attrgetter
from typing import Any, ClassVar, Union

from kerneldiff.core.msgspec_import import msgspec

from kerneldiff.core.ingest import schema
from kerneldiff.core.lazy_pattern import LazyPattern


# --- decoded event shapes (fields from kerneldiff.core.ingest.schema) -------------------------

FastArgs = schema.struct("FastArgs", schema.ARG_FIELDS, gc=False)
COMM_FIELDS = schema.COMM_FIELDS

# A complete event ("ph": "X") with the fields kerneldiff uses. Decoded with strict=False:
# numbers written as strings ("correlation": "505113") and integer timestamps are converted by
# the C decoder.
XEvent = schema.struct("XEvent", schema.EVENT_FIELDS, extra=((schema.ARGS_KEY, FastArgs | None, None),),
                       tag_field=schema.PHASE_KEY, tag=schema.COMPLETE, gc=False)


class Skipped(msgspec.Struct, tag_field=schema.PHASE_KEY, gc=False):
    """Any other phase (flows, instants, counters, metadata): decoded to an empty object — the
    phase is the union's tag, so none of its fields are even read."""

    cat: ClassVar[None] = None


_SKIP_TYPES = tuple(msgspec.defstruct(f"Skipped_{i}", [], bases=(Skipped,), tag=ph, tag_field=schema.PHASE_KEY, gc=False)
                    for i, ph in enumerate(schema.OTHER_PHASES))
_SKIP = _SKIP_TYPES[0]()
Event = Union[(XEvent, *_SKIP_TYPES)]  # noqa: UP007 - a runtime union of many types


_LooseArgs = schema.struct("_LooseArgs", schema.ARG_FIELDS, loose=True)
_LooseEvent = schema.struct("_LooseEvent", schema.EVENT_FIELDS, loose=True,
                            extra=((schema.ARGS_KEY, _LooseArgs | None, None),))


class _LooseX(_LooseEvent, tag_field=schema.PHASE_KEY, tag=schema.COMPLETE):
    """A complete event read without type expectations (the second try for a slice)."""


_typed = msgspec.json.Decoder(list[Event], strict=False)
_loose = msgspec.json.Decoder(list[Union[(_LooseX, *_SKIP_TYPES)]])  # noqa: UP007
_untyped = msgspec.json.Decoder()
_EMPTY_ARGS = FastArgs()


# A number inside a string, in JSON's own grammar. Python's int() and float() also take "1_000",
# blanks, "+5", "nan" and digits of every script (full-width, Arabic-Indic): none of them is a
# number to a JSON reader, so none is one here (the compiled scanner agrees byte for byte).
_JSON_NUMBER = LazyPattern(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?\Z")
_JSON_INTEGER = LazyPattern(r"-?(?:0|[1-9][0-9]*)\Z")

# What `_int` returns for a number that is not an integer (an id of 0.5 or "1.5"): an id must
# never be rounded into another event's id. Columns count these and store -1 (no id).
NOT_INTEGER = -(2**63) + 1


def _num(v: Any, default: float | None = -1) -> float | None:
    """Numbers arrive as ints, floats or strings depending on the writer; anything else -> default."""
    if v is None:
        return default
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    if isinstance(v, str) and len(v) < 400 and _JSON_NUMBER.match(v):
        try:
            return int(v) if _JSON_INTEGER.match(v) else float(v)
        except ValueError:
            return default
    return default


def _int(v: Any) -> int:
    x = _num(v, -1)
    if x != x or x in (float("inf"), float("-inf")):
        return -1
    if isinstance(x, float) and not x.is_integer():
        return NOT_INTEGER
    try:
        x = int(x)
    except (OverflowError, ValueError):
        return -1
    return x if -(2**63) <= x < 2**63 else -1


def _opt_int(v: Any) -> int | None:
    return None if v is None else _int(v)


def _reencode(v: Any) -> msgspec.Raw:
    return msgspec.Raw() if v is None else msgspec.Raw(msgspec.json.encode(v))


_canonical: dict[bytes, str] = {}


def shape_text(raw) -> str | None:
    """The canonical (compact) JSON text of a recorded shape or dtype list, whichever way the
    trace spaced it, so both readers intern the same string. Cached: shapes repeat."""
    if raw is None or len(raw) == 0:   # absent: the empty Raw (or nothing at all)
        return None
    key = bytes(raw)
    text = _canonical.get(key)
    if text is None:
        try:
            v = msgspec.json.decode(key)
            text = None if v is None else msgspec.json.encode(v).decode()   # null: not recorded
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            text = None
        if len(_canonical) < 1_000_000:   # bounded: a trace of unique shapes must not hoard memory
            _canonical[key] = text
    return text


# --- a collective's parameters --------------------------------------------------------------

COMM_TEXT_CAP = 256   # characters of a collective, group or dtype name; longer ones are junk, not read


# the collective fields of an args object (the compiled scanner hands over the whole object)
_CommArgs = schema.struct("_CommArgs", tuple(f for f in schema.ARG_FIELDS if f.attr in COMM_FIELDS), loose=True)


_comm_args = msgspec.json.Decoder(_CommArgs)


_quoted_cache: dict[str, str] = {}


def _quoted(v: str) -> str:
    """A string as JSON text (names repeat: each is encoded once; bounded)."""
    q = _quoted_cache.get(v)
    if q is None:
        q = msgspec.json.encode(v).decode()
        if len(_quoted_cache) < 100_000:
            _quoted_cache[v] = q
    return q


def _count_text(v: Any) -> str | None:
    """A count or sequence number: a JSON integer or an integer in a string, 0 <= v < 2**62."""
    if type(v) is str:
        if len(v) > 20 or not _JSON_INTEGER.match(v):
            return None
        v = int(v)
    if type(v) is not int or not 0 <= v < 2**62:
        return None
    return str(v)


def _name_text(v: Any, numbered: bool = False) -> str | None:
    """A name: a string (with `numbered`, a process group named by a number: its decimal text)."""
    if type(v) is str:
        return _quoted(v) if 0 < len(v) <= COMM_TEXT_CAP else None
    if numbered and type(v) is int and -(2**63) <= v < 2**63:
        return _quoted(str(v))
    return None


_NAMES, _COUNTS = (str, type(None)), (int, type(None))
_comm_parts: dict[tuple, tuple[list[str], list[str]]] = {}


MAX_GROUP_RANKS = 1 << 16   # a process group's listed ranks beyond this: junk, not read


def _ranks_text(v: Any) -> str | None:
    """A process group's global ranks: a JSON list of integers, or such a list written as a string
    ("[0, 1, 2, 3]", as PyTorch writes it); an empty list says nothing."""
    if type(v) is str:
        if len(v) > 16 * MAX_GROUP_RANKS:
            return None
        try:
            v = msgspec.json.decode(v)
        except (msgspec.DecodeError, RecursionError):
            return None
    if type(v) is not list or not 0 < len(v) <= MAX_GROUP_RANKS or \
            not all(type(x) is int and 0 <= x < 2**31 for x in v):
        return None
    return "[" + ",".join(map(str, v)) + "]"


def _parts(name, pg, group, n_in, n_out, dtype, ranks) -> tuple[list[str], list[str]]:
    head = [] if (t := _name_text(name)) is None else [f'"name":{t}']
    tail = [f'"{key}":{t}' for key, t in (("pg", _name_text(pg, True)), ("group", _count_text(group)),
                                          ("in", _count_text(n_in)), ("out", _count_text(n_out)),
                                          ("dtype", _name_text(dtype)), ("ranks", _ranks_text(ranks)))
            if t is not None]
    return head, tail


def comm_text(values) -> str | None:
    """A collective's parameters as one compact JSON object (`{"name":"allreduce","seq":12,"pg":"0",
    "group":8,"in":1024,"out":1024,"dtype":"BFloat16","ranks":[0,1]}`: the fields that are readable, in this
    order; None when none is), from the values of COMM_FIELDS. The one reading of those fields:
    both readers call it, so they store the same text. A trace may hold many thousands, which
    differ in their sequence number only: the rest is read once per distinct set of plain values."""
    name, seq, pg, group, n_in, n_out, dtype, ranks = values
    key = (name, pg, group, n_in, n_out, dtype, ranks)
    # only exact types make a key: True == 1 and 1.0 == 1 would share another value's entry
    plain = (type(name) in _NAMES and type(pg) in _NAMES and type(dtype) in _NAMES and type(group) in _COUNTS
             and type(n_in) in _COUNTS and type(n_out) in _COUNTS and type(ranks) in _NAMES)
    parts = _comm_parts.get(key) if plain else None
    if parts is None:
        parts = _parts(*key)
        if plain and len(_comm_parts) < 100_000:
            _comm_parts[key] = parts
    head, tail = parts
    s = _count_text(seq)
    items = head + [f'"seq":{s}'] + tail if s is not None else head + tail
    return "{" + ",".join(items) + "}" if items else None


_comm_values = attrgetter(*COMM_FIELDS)


def comm_text_of_args(raw) -> str | None:
    """comm_text of a raw args object (the compiled scanner's A_COMM range)."""
    try:
        a = _comm_args.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
        return None
    return comm_text(_comm_values(a))


def _text_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _num_or_none(v: Any) -> float | None:
    return _num(v, None)


def _same(v: Any) -> Any:
    return v


# the lenient path's conversion of each kind of field (schema.Field.loose)
_LOOSE = {"str": _text_or_none, "num": _num_or_none, "id": _int, "opt_int": _opt_int, "text": _reencode, "any": _same}
_EVENT_LOOSE = tuple((f.attr, _LOOSE[f.loose]) for f in schema.EVENT_FIELDS)
_ARGS_LOOSE = tuple((f.attr, _LOOSE[f.loose]) for f in schema.ARG_FIELDS)
_EVENT_KEYS = tuple(f.key for f in schema.EVENT_FIELDS)


def _normalize(e: _LooseEvent) -> XEvent:
    """A complete event whose fields had unexpected types, read with the loose rules of `_num`."""
    a = e.args
    args = None if a is None else FastArgs(*[conv(getattr(a, attr)) for attr, conv in _ARGS_LOOSE])
    return XEvent(*[conv(getattr(e, attr)) for attr, conv in _EVENT_LOOSE], args)


_UNREADABLE = object()   # the category of items that are not events at all (counted as dropped)
_BAD_EVENT = XEvent(cat=_UNREADABLE)  # type: ignore[arg-type]


def _lenient(raw: list[Any]) -> list[XEvent | Skipped]:
    """Convert events one by one, with the loose rules of `_num` / `_int` where types differ."""
    out: list[XEvent | Skipped] = []
    bad = _BAD_EVENT
    for item in raw:
        if not isinstance(item, dict):
            out.append(bad)
        elif item.get("ph") != "X":
            # an event of a kind kerneldiff reads but without its phase is broken, not foreign
            out.append(bad if "ph" not in item and item.get("cat") in GROUP_OF else _SKIP)
        else:
            try:
                out.append(msgspec.convert(item, XEvent, strict=False))
                continue
            except (msgspec.ValidationError, TypeError):
                pass
            try:
                loose = msgspec.convert(item, _LooseEvent, strict=False)
            except (msgspec.ValidationError, TypeError):  # "args" is not an object
                loose = _LooseEvent(*(item.get(k) for k in _EVENT_KEYS))
            out.append(_normalize(loose))
    return out


class Failure:
    """Why a slice did not decode: `truncated` (it ends inside a string or an event — the cut
    was not a real boundary) or invalid content at byte `pos` of the slice (None: unknown)."""

    __slots__ = ("truncated", "pos", "trailing")

    def __init__(self, truncated: bool, pos: int | None = None, trailing: bool = False) -> None:
        self.truncated = truncated
        self.pos = pos
        self.trailing = trailing   # a complete array ends before `pos`: the events array ended


_BYTE_POS = re.compile(r"\(byte (\d+)\)")


def _failure(e: msgspec.DecodeError) -> Failure:
    msg = str(e)
    if "truncated" in msg:
        return Failure(True)
    m = _BYTE_POS.search(msg)
    return Failure(False, int(m.group(1)) if m else None, trailing=m is not None and "trailing characters" in msg)


# msgspec lets these escape for invalid UTF-8, nesting deeper than the recursion limit and
# numbers beyond float range: they mean "invalid content, position unknown"
_ODD_ERRORS = (UnicodeDecodeError, RecursionError, msgspec.ValidationError)


def try_decode(buf) -> list | Failure:
    """Decode a JSON array of events (any buffer)."""
    if isinstance(buf, memoryview):
        # Raw fields (shapes, grid, block) point into the decoded buffer: decode a copy (~1% of
        # the decode time for a 1 MB slice) so the reader's own buffer is free again at once
        buf = bytes(buf)
    try:
        return _typed.decode(buf)
    except msgspec.ValidationError:
        pass  # valid JSON with values of unexpected types somewhere
    except msgspec.DecodeError as e:
        return _failure(e)
    except (UnicodeDecodeError, RecursionError):
        return Failure(False)
    try:  # the same shapes, any value types: only the odd events cost a Python call
        return [_normalize(e) if type(e) is _LooseX else e for e in _loose.decode(buf)]
    except msgspec.ValidationError:
        pass  # an unknown or missing phase, args that are not an object: event by event
    except msgspec.DecodeError as e:
        return _failure(e)
    except (UnicodeDecodeError, RecursionError):
        return Failure(False)
    try:
        raw = _untyped.decode(buf)
    except msgspec.DecodeError as e:
        return _failure(e)
    except _ODD_ERRORS:
        return Failure(False)
    if not isinstance(raw, list):
        return Failure(False)
    return _lenient(raw)


# event category -> group code; kernels, memcpy and memset share one table (code - 1 = kind)
G_KERNEL, G_MEMCPY, G_MEMSET, G_PYTHON, G_CPU, G_LAUNCH, G_ANNOT, G_GPU_ANNOT, G_UNREADABLE = range(1, 10)
GROUP_OF: dict[Any, int] = {
    "kernel": G_KERNEL, "gpu_memcpy": G_MEMCPY, "gpu_memset": G_MEMSET,
    # older Kineto / HTA spellings
    "Kernel": G_KERNEL, "Memcpy": G_MEMCPY, "Memset": G_MEMSET, "gpu_memcpy_async": G_MEMCPY,
    "python_function": G_PYTHON,
    "cpu_op": G_CPU, "operator": G_CPU, "Operator": G_CPU,
    "cuda_runtime": G_LAUNCH, "cuda_driver": G_LAUNCH, "hip_runtime": G_LAUNCH, "hip_api": G_LAUNCH,
    "Runtime": G_LAUNCH, "cuda_api": G_LAUNCH,
    "user_annotation": G_ANNOT, "gpu_user_annotation": G_GPU_ANNOT,
    _UNREADABLE: G_UNREADABLE,
}
