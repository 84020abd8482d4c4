"""The top level of a trace document, walked as JSON: where the top-level `traceEvents` array
starts, and what follows the array (the rest of the object, then nothing but blanks).

A byte search for `"traceEvents"` also matches inside another key (`"x\\"traceEvents"`), a
nested object or a list; here only a key of the top-level object counts, keys are compared after
their JSON escapes are decoded (`"trace\\u0045vents"` is the same key), and nested values are
skipped by tracking strings and brackets alone — one pass over the bytes (anchored regexes with
possessive repeats: no backtracking), whatever the values hold. Nothing here validates numbers or
literals: msgspec reads the metadata and the events, with all of JSON's rules.

Every function takes (buf, i, n): look at buf[i:n]. `Incomplete` means "more bytes are needed";
`Malformed` that the bytes cannot be the document's top level.
"""

from __future__ import annotations

import re
from typing import Any

from kerneldiff.core.msgspec_import import msgspec

_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.S)
_PLAIN = re.compile(rb'[^"\[\]{}]*+')          # anything but strings and brackets
_WS = re.compile(rb"[ \t\r\n]*+")
_SCALAR = re.compile(rb"[^,\]}\s]*+")           # a number or literal, up to what ends it
_OPEN, _CLOSE = {ord("{"): ord("}"), ord("["): ord("]")}, {ord("}"), ord("]")}
_QUOTE, _COLON, _COMMA = ord('"'), ord(":"), ord(",")
EVENTS_KEY = "traceEvents"


class Incomplete(Exception):
    """The bytes end before the value or document does."""


class Malformed(ValueError):
    """Not the structure of a JSON document at this point."""


class DuplicateEvents(ValueError):
    """`traceEvents` appears twice at the top level."""


def ws(buf, i: int, n: int) -> int:
    if i >= n:   # past the bytes at hand (a pattern matched beyond endpos gives no match at all)
        return i
    return _WS.match(buf, i, n).end()


def skip_string(buf, i: int, n: int) -> int:
    """End (after the closing quote) of the string at buf[i]."""
    m = _STRING.match(buf, i, n)
    if m is None:
        raise Incomplete
    return m.end()


def skip_value(buf, i: int, n: int) -> int:
    """End of the JSON value at buf[i] (tracked by strings and brackets only)."""
    if i >= n:
        raise Incomplete
    c = buf[i]
    if c == _QUOTE:
        return skip_string(buf, i, n)
    if c not in _OPEN:
        end = _SCALAR.match(buf, i, n).end()
        if end >= n:
            raise Incomplete   # a number may go on in the next bytes
        if end == i:
            raise Malformed
        return end
    stack = [_OPEN[c]]
    i += 1
    while True:
        i = _PLAIN.match(buf, i, n).end()
        if i >= n:
            raise Incomplete
        c = buf[i]
        if c == _QUOTE:
            i = skip_string(buf, i, n)
            continue
        if c in _OPEN:
            stack.append(_OPEN[c])
        elif c != stack.pop():
            raise Malformed
        elif not stack:
            return i + 1
        i += 1


def key_text(raw) -> str:
    """A key's text from its quoted bytes, JSON escapes decoded."""
    raw = bytes(raw)
    if b"\\" not in raw:
        return raw[1:-1].decode("utf-8", "replace")
    try:
        return msgspec.json.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError):
        raise Malformed from None


def _member(buf, i: int, n: int) -> tuple[str, int]:
    """The member at buf[i] (a key): (key, where its value starts)."""
    if i >= n:
        raise Incomplete
    if buf[i] != _QUOTE:
        raise Malformed
    k = skip_string(buf, i, n)
    key = key_text(buf[i:k])
    j = ws(buf, k, n)
    if j >= n:
        raise Incomplete
    if buf[j] != _COLON:
        raise Malformed
    v = ws(buf, j + 1, n)
    if v >= n:
        raise Incomplete
    return key, v


def find_events(buf, i: int, n: int) -> tuple[int, int] | None:
    """buf[i] is the top-level object's '{': (where the `traceEvents` key starts, the index
    just after the '[' of its array); None when the object ends without such a key, (-1, -1)
    when its value is not a list. DuplicateEvents when the key is there twice before its array
    starts (a first value that is not a list, then another)."""
    seen = False
    i = ws(buf, i + 1, n)
    while True:
        if i >= n:
            raise Incomplete
        if buf[i] == ord("}"):
            return (-1, -1) if seen else None
        key, v = _member(buf, i, n)
        if key == EVENTS_KEY:
            if seen:
                raise DuplicateEvents
            seen = True
            if buf[v] == ord("["):
                return i, v + 1
        i = ws(buf, skip_value(buf, v, n), n)
        if i >= n:
            raise Incomplete
        if buf[i] == _COMMA:
            i = ws(buf, i + 1, n)
        elif buf[i] != ord("}"):
            raise Malformed


def events_end(buf, i: int, n: int) -> int:
    """buf[i:] holds events of the array (blanks, then an event or the ']'): the index of the
    array's ']'. Each event is skipped by structure, so a string holding '}, {' or ']' is no end."""
    i = ws(buf, i, n)
    while True:
        if i >= n:
            raise Incomplete
        if buf[i] == ord("]"):
            return i
        i = ws(buf, skip_value(buf, i, n), n)
        if i >= n:
            raise Incomplete
        if buf[i] == _COMMA:
            i = ws(buf, i + 1, n)
        elif buf[i] != ord("]"):
            raise Malformed


class DocumentEnd:
    """What followed the events array: the rest of the top-level object's members (`meta`), and
    `trailing`: 0 when only blanks follow the document, else the bytes after it ('second' when
    they start another JSON document)."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.trailing = 0
        self.second = False


def document_end(buf, i: int, n: int, in_object: bool, eof: bool) -> DocumentEnd:
    """buf[i] is just after the events array's ']'. Reads the rest of the top-level object (when
    the document is one) and looks at what follows it. Incomplete until the object is closed and,
    unless `eof`, a byte after the blanks that follow it is in view."""
    end = DocumentEnd()
    i = ws(buf, i, n)
    if in_object:
        while True:
            if i >= n:
                raise Incomplete
            c = buf[i]
            if c == ord("}"):
                i += 1
                break
            if c != _COMMA:
                raise Malformed
            key, v = _member(buf, ws(buf, i + 1, n), n)
            e = skip_value(buf, v, n)
            if key == EVENTS_KEY:
                raise DuplicateEvents
            try:
                end.meta[key] = msgspec.json.decode(bytes(buf[v:e]))
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
                pass   # metadata is optional: an unreadable value is left out
            i = ws(buf, e, n)
    i = ws(buf, i, n)
    if i >= n:
        if not eof:
            raise Incomplete
        return end
    end.trailing = n - i
    end.second = buf[i] in _OPEN
    return end
