"""The event schema, written once: each field kerneldiff reads from a Kineto event or its `args`,
with its JSON key, the attribute it has on the decoded structs, its typed (fast) decode type, how
the lenient path converts an odd value, its column in the compiled scanner and the tables that
read it. decode.py builds its msgspec structs from this list; scan.py and columns.py take their
field lists from it. The C scanner (_fastscan.c) cannot import it: tests/unit/test_schema.py
parses the C key tables and holds them to exactly these keys."""

from __future__ import annotations

from typing import Any, NamedTuple

from kerneldiff.core.msgspec_import import msgspec


class Field(NamedTuple):
    key: str            # the JSON key
    attr: str           # the attribute on the decoded structs (and in the schema's lookups)
    fast: Any           # its type in the typed decode (msgspec, strict=False)
    loose: str          # how the lenient path converts it (decode._LOOSE): str, num, id, opt_int, text, any
    scan: str | None    # the scanner's column: an int column (scan.py PID..OCC), a raw text column
    #                     (DIMS..BLOCK; C: A_DIMS..), "COMM" (C: K_COMM_KEY) or None (not a column)
    column: str | None  # its column in those tables (columns.SPECS; None: none, it picks the table)
    tables: str         # the tables that read it (columns.SPECS: k kernels, p python, c cpu_ops,
    #                     l launches, a annotations)


# The phase is the tag of the decoded union, not a field: only complete events ("X") are read.
PHASE_KEY = "ph"
COMPLETE = "X"
# Every other phase the Chrome trace format defines. An unknown or missing "ph" makes the slice
# take the lenient path.
OTHER_PHASES = ("B", "E", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "O", "N", "D", "M", "V",
                "v", "R", "c", "(", ")", "T", "S", "F", "p")

_RAW = msgspec.Raw   # kept as JSON text (absent: the empty Raw, which cannot be in a union with None)

# (a kernel stores no pid / tid: they stand in for a missing device / stream, columns.py)
EVENT_FIELDS: tuple[Field, ...] = (
    Field("cat", "cat", str | None, "str", None, None, "kplca"),    # the group (decode.GROUP_OF)
    Field("name", "name", str | None, "str", None, "name", "kplca"),
    Field("ts", "ts", float | None, "num", None, "ts", "kplca"),
    Field("dur", "dur", float | None, "num", None, "dur", "kplca"),
    Field("pid", "pid", int | str | None, "id", "PID", "pid", "plca"),
    Field("tid", "tid", int | str | None, "id", "TID", "tid", "plca"),
)
ARGS_KEY = "args"

ARG_FIELDS: tuple[Field, ...] = (
    Field("correlation", "correlation", int | None, "id", "CORR", "corr", "kl"),
    Field("External id", "external_id", int | None, "id", "EXT", "ext", "kcl"),
    # ROCm runtime events write their stream as a pointer ("stream": "0x0"): keep such strings
    # (they read as -1) rather than send every slice down the lenient path
    Field("device", "device", int | str | None, "opt_int", "DEVICE", "device", "k"),
    Field("stream", "stream", int | str | None, "opt_int", "STREAM", "stream", "k"),
    Field("Python id", "python_id", int | None, "id", "PYID", "pyid", "p"),
    Field("Python parent id", "python_parent", int | None, "id", "PARENT", "parent", "p"),
    # record_shapes: an operator's input dimensions and dtypes, kept as raw JSON text (interned
    # later; most operators repeat a handful of shapes) and parsed only where a reading needs them
    Field("Input Dims", "input_dims", _RAW, "text", "DIMS", "dims", "ca"),
    Field("Input type", "input_type", _RAW, "text", "TYPES", "types", "ca"),
    # a kernel's launch configuration (CUPTI; ROCm traces often lack it)
    Field("registers per thread", "registers", int | None, "opt_int", "REGS", "regs", "k"),
    Field("shared memory", "shared_memory", int | None, "opt_int", "SMEM", "smem", "k"),
    Field("est. achieved occupancy %", "occupancy", int | None, "opt_int", "OCC", "occupancy", "k"),
    Field("grid", "grid", _RAW, "text", "GRID", "grid", "k"),
    Field("block", "block", _RAW, "text", "BLOCK", "block", "k"),
    # record_shapes: an operator's scalar arguments as text (SDPA's dropout_p, is_causal, scale),
    # kept raw like the dims; read for attention (flops: causality from what the op was given)
    Field("Concrete Inputs", "concrete", _RAW, "text", "CONCRETE", "concrete", "c"),
    # a collective's parameters (record_param_comms, newer PyTorch): any JSON type, judged by
    # decode.comm_text (a junk type must not send the slice down the lenient path)
    Field("Collective name", "coll_name", Any, "any", "COMM", "comm", "c"),
    Field("Seq", "seq", Any, "any", "COMM", "comm", "c"),
    Field("Process Group Name", "pg_name", Any, "any", "COMM", "comm", "c"),
    Field("Group size", "group_size", Any, "any", "COMM", "comm", "c"),
    Field("In msg nelems", "in_nelems", Any, "any", "COMM", "comm", "c"),
    Field("Out msg nelems", "out_nelems", Any, "any", "COMM", "comm", "c"),
    Field("dtype", "dtype", Any, "any", "COMM", "comm", "c"),
    Field("Process Group Ranks", "pg_ranks", Any, "any", "COMM", "comm", "c"),
)

# the scanner's columns, in order: integer fields (rows of scan.Out.ints) and raw texts
# (columns of scan.Out.shape; the last, COMM, is the whole args object of a collective)
SCAN_INTS: tuple[str, ...] = tuple(f.scan for f in EVENT_FIELDS + ARG_FIELDS if f.loose in ("id", "opt_int"))
SCAN_TEXTS: tuple[str, ...] = tuple(f.scan for f in ARG_FIELDS if f.loose == "text") + ("COMM",)
COMM_FIELDS: tuple[str, ...] = tuple(f.attr for f in ARG_FIELDS if f.scan == "COMM")


def read_by(table: str, fields: tuple[Field, ...] = ARG_FIELDS, loose: tuple[str, ...] = ("id", "opt_int")) -> tuple[str, ...]:
    """Attributes of the fields (integer ones by default) that `table` reads, in schema order."""
    return tuple(f.attr for f in fields if table in f.tables and f.loose in loose)


def _spec(f: Field, typ: Any) -> tuple:
    default = msgspec.Raw() if typ is _RAW else None
    return (f.attr, typ, default if f.key == f.attr else msgspec.field(default=default, name=f.key))


def struct(name: str, fields: tuple[Field, ...], loose: bool = False, extra: tuple = (), **kw) -> type:
    """A msgspec struct of `fields` (every value Any with `loose`), each renamed to its JSON key."""
    specs = [_spec(f, Any) if loose else _spec(f, f.fast) for f in fields]
    return msgspec.defstruct(name, specs + list(extra), module="kerneldiff.core.ingest.decode", **kw)
