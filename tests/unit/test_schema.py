"""The event schema (core/ingest/schema.py) against the places that cannot or do not import it:
the compiled scanner's key tables and enums in _fastscan.c (parsed from the C text), the msgspec
structs decode.py builds, and the scanner's column constants in scan.py."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from kerneldiff.core.ingest import decode, scan, schema
from kerneldiff.core.ingest.columns import SPECS

C_TEXT = Path(schema.__file__).with_name("_fastscan.c").read_text()


def _function(text: str, name: str) -> str:
    """The body of the C function `name` (up to the closing brace at column 0)."""
    m = re.search(r"static inline int " + name + r"\(.*?\n\}\n", text, re.S)
    assert m, f"{name} not found in _fastscan.c"
    return m.group(0)


def key_table(text: str, name: str) -> dict[str, str]:
    """key -> the constant `name` returns for it: KEY_IS(..., "key") and the hand-unrolled
    two-character tests (b[s] == 'p' && b[s + 1] == 'h'). Each key must sit under the `case` of
    its length (the switch is on the key's length: elsewhere it would never match)."""
    table: dict[str, str] = {}
    length = None
    for line in _function(text, name).splitlines():
        if m := re.match(r"\s*case (\d+):", line):
            length = int(m.group(1))
        chars = re.findall(r"b\[s(?: \+ \d+)?\] == '(.)'", line)
        lit = re.search(r'KEY_IS\(b, s, e, "([^"]*)"\)', line)
        key = lit.group(1) if lit else "".join(chars) if chars else None
        if key is None:
            continue
        ret = re.search(r"return (\w+);", line)
        assert ret, line
        assert len(key) == length, f"{key!r} under case {length}"
        assert key not in table, f"{key!r} twice in {name}"
        table[key] = ret.group(1)
    return table


def enum_of(text: str, first: str) -> list[str]:
    """The names of the C enum whose first member starts with `first`."""
    m = re.search(r"enum \{ (" + re.escape(first) + r"[^}]*)\}", text)
    assert m, first
    return [x.split("=")[0].strip() for x in m.group(1).split(",") if x.strip()]


def expected_event_keys() -> dict[str, str]:
    keys = {schema.PHASE_KEY: "K_PH", schema.ARGS_KEY: "K_ARGS"}
    keys.update({f.key: "K_" + f.key.upper() for f in schema.EVENT_FIELDS})
    return keys


def expected_arg_keys() -> dict[str, str]:
    def c_name(f: schema.Field) -> str:
        if f.scan == "COMM":
            return "K_COMM_KEY"     # a collective's key: the whole args object goes to Python
        return "A_" + f.scan if f.loose == "text" else f.scan
    return {f.key: c_name(f) for f in schema.ARG_FIELDS}


def check_c(text: str) -> None:
    assert key_table(text, "event_key") == expected_event_keys()
    assert key_table(text, "arg_key") == expected_arg_keys()
    assert enum_of(text, "PID") == [*schema.SCAN_INTS, "NINTS"]
    assert enum_of(text, "A_DIMS") == ["A_" + s for s in schema.SCAN_TEXTS]
    assert re.search(r"enum \{ NRAW = (\d+) \}", text).group(1) == str(len(schema.SCAN_TEXTS))


def test_c_key_tables_hold_exactly_the_schema():
    check_c(C_TEXT)


@pytest.mark.parametrize("plant", [
    # an arg the scanner would read that the schema does not list
    lambda t: t.replace('        if (KEY_IS(b, s, e, "Seq")) return K_COMM_KEY;\n',
                        '        if (KEY_IS(b, s, e, "Seq")) return K_COMM_KEY;\n'
                        '        if (KEY_IS(b, s, e, "Raw")) return K_COMM_KEY;\n'),
    # an extra event key
    lambda t: t.replace('        if (KEY_IS(b, s, e, "args")) return K_ARGS;\n',
                        '        if (KEY_IS(b, s, e, "args")) return K_ARGS;\n'
                        '        if (KEY_IS(b, s, e, "flow")) return K_ARGS;\n'),
    # a schema key dropped from the C table
    lambda t: t.replace('        if (KEY_IS(b, s, e, "dtype")) return K_COMM_KEY;\n', ""),
    # a key read into the wrong column
    lambda t: t.replace('"Python id")) return PYID;', '"Python id")) return PARENT;'),
    # a key under the wrong length: the scanner would never match it
    lambda t: t.replace('    case 9:\n        if (KEY_IS(b, s, e, "Python id"))', '    case 8:\n        if (KEY_IS(b, s, e, "Python id"))'),
    # the integer columns reordered
    lambda t: t.replace("enum { PID, TID, CORR, EXT,", "enum { PID, TID, EXT, CORR,"),
])
def test_a_planted_difference_in_the_c_text_fails(plant):
    planted = plant(C_TEXT)
    assert planted != C_TEXT, "the plant did not apply: update this test's copy of the C text"
    with pytest.raises(AssertionError):
        check_c(planted)


def test_scan_constants_follow_the_schema():
    assert [getattr(scan, c) for c in schema.SCAN_INTS] == list(range(scan.NINTS))
    assert [getattr(scan, c) for c in schema.SCAN_TEXTS] == list(range(scan.NRAW))
    phase = scan.tables({})[3]   # the scanner's phase table: 1 skipped, 2 read
    assert {chr(i) for i in range(128) if phase[i] == 1} == set(schema.OTHER_PHASES)
    assert [chr(i) for i in range(128) if phase[i] == 2] == [schema.COMPLETE]


@pytest.mark.parametrize("struct, fields, loose", [
    (decode.FastArgs, schema.ARG_FIELDS, False), (decode._LooseArgs, schema.ARG_FIELDS, True),
    (decode.XEvent, schema.EVENT_FIELDS, False), (decode._LooseEvent, schema.EVENT_FIELDS, True),
])
def test_structs_are_the_schema(struct, fields, loose):
    names = [f.attr for f in fields] + ([schema.ARGS_KEY] if "Event" in struct.__name__ else [])
    keys = [f.key for f in fields] + ([schema.ARGS_KEY] if "Event" in struct.__name__ else [])
    assert list(struct.__struct_fields__) == names
    assert list(struct.__struct_encode_fields__) == keys
    if not loose:
        hints = msgspec.structs.fields(struct)
        assert [h.type for h in hints[:len(fields)]] == [f.fast for f in fields]


def test_each_field_has_its_column_in_the_tables_that_read_it():
    for f in schema.EVENT_FIELDS + schema.ARG_FIELDS:
        for g in f.tables:
            assert f.column is None or f.column in dict(SPECS[g]), (f.key, g)
    assert len({f.key for f in schema.EVENT_FIELDS + schema.ARG_FIELDS} | {schema.PHASE_KEY, schema.ARGS_KEY}) == \
        len(schema.EVENT_FIELDS) + len(schema.ARG_FIELDS) + 2   # every key once


def test_every_field_decodes_by_its_key_on_both_paths():
    """One event carrying every schema field by its JSON key: the typed decode and the lenient one
    (a numeric string where an int goes sends it there) read each field under its attribute."""
    args = {f.key: i + 1 for i, f in enumerate(schema.ARG_FIELDS) if f.loose in ("id", "opt_int")}
    args.update({f.key: [i] for i, f in enumerate(schema.ARG_FIELDS) if f.loose == "text"})
    args.update({f.key: f"v{i}" for i, f in enumerate(schema.ARG_FIELDS) if f.loose == "any"})
    ev = {"ph": "X", "cat": "kernel", "name": "k", "ts": 1.5, "dur": 2, "pid": 3, "tid": 4, "args": args}
    odd = {**ev, "args": {**args, "correlation": "1.0e0"}}   # not an integer: the lenient path
    for doc in (ev, odd):
        (e,) = decode.try_decode(msgspec.json.encode([doc]))
        assert (e.cat, e.name, e.ts, e.dur, e.pid, e.tid) == ("kernel", "k", 1.5, 2, 3, 4)
        for i, f in enumerate(schema.ARG_FIELDS):
            v = getattr(e.args, f.attr)
            if f.loose == "text":
                assert bytes(v) == f"[{i}]".encode()
            elif f.loose == "any":
                assert v == f"v{i}"
            elif f.attr != "correlation" or doc is ev:
                assert v == i + 1, f.key
