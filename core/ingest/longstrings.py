"""Strings too long to hold: an event whose strings run to hundreds of MB (a 600 MB kernel name)
is read with each such string cut to its first KEEP bytes, in the reader's buffer as the bytes
arrive, so the buffer never holds more than the event's other content; the rest of the string is
read and dropped. Names are cut again to NAME_CAP characters when stored (see columns.py)."""

from __future__ import annotations

import re
from collections.abc import Callable

from kerneldiff.core.lazy_pattern import LazyPattern

LONG_STRING = 1 << 20     # in an event too big for the buffer, strings longer than this are cut
KEEP = 64 << 10           # ... to this many bytes (at a character and escape boundary)
NAME_CAP = 64 << 10       # characters of a name that are stored; a longer one is cut, with a mark
CUT_MARK = "\u2026[cut]"

_PLAIN = LazyPattern(rb'[^"]*+')
_BODY = LazyPattern(rb'(?:[^"\\]++|\\.)*+', re.S)    # a string's content, up to its quote or the end
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def cut_name(name: str) -> str:
    return name[:NAME_CAP] + CUT_MARK


def _boundary(buf, s: int, p: int) -> int:
    """A cut point at or before p in the string content starting at s: not inside a UTF-8
    character, an escape, or between the two escapes of a surrogate pair."""
    j = s
    last_escape = -1
    while j < p:
        if buf[j] == _BACKSLASH:
            last_escape = j
            j += 6 if buf[j + 1] == ord("u") else 2
        else:
            j += 1
    if j > p:          # p splits an escape
        p = last_escape
    if p - 6 >= s and buf[p - 6] == _BACKSLASH and buf[p - 5] == ord("u") and \
            bytes(buf[p - 4:p - 2]).lower() in (b"d8", b"d9", b"da", b"db"):
        p -= 6         # a high surrogate whose low half would be cut off
    while p > s and 0x80 <= buf[p] <= 0xBF:   # a UTF-8 continuation byte
        p -= 1
    return p


def _drop_rest(read: Callable[[int], bytes], escaped: bool) -> bytes:
    """Read and drop the rest of a string; returns the bytes from its closing quote on."""
    while True:
        chunk = read(1 << 20)
        if not chunk:
            return b""
        i = 1 if escaped else 0
        if i >= len(chunk):
            escaped = False
            continue
        e = _BODY.match(chunk, i).end()
        if e < len(chunk) and chunk[e] == _QUOTE:
            return chunk[e:]
        escaped = chunk.endswith(b"\\") and e == len(chunk) - 1


def shorten(buf: bytearray, start: int, n: int, read: Callable[[int], bytes]) -> tuple[int, int]:
    """Cut every string of buf[start:n] longer than LONG_STRING to KEEP bytes, moving what follows
    down; a string still open at n is cut and its rest read from `read` and dropped. Returns
    (the new end of the data, strings cut). The buffer must have room for one read past n."""
    cut = 0
    i = start
    while True:
        i = _PLAIN.match(buf, i, n).end()
        if i >= n:
            return n, cut
        s = i + 1
        e = _BODY.match(buf, s, n).end()
        closed = e < n and buf[e] == _QUOTE
        if e - s <= LONG_STRING:
            if not closed:
                return n, cut
            i = e + 1
            continue
        keep = _boundary(buf, s, s + KEEP)
        cut += 1
        if closed:
            rest = n - e
            buf[keep:keep + rest] = buf[e:n]
            n = keep + rest
            i = keep + 1
            continue
        escaped = e == n - 1 and buf[e] == _BACKSLASH
        tail = _drop_rest(read, escaped)
        buf[keep:keep + len(tail)] = tail
        n = keep + len(tail)
        if not tail:
            return n, cut
        i = keep + 1
