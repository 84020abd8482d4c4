"""The compiled half of kerneldiff.core.ingest.scan (numba, imported only when a big trace is read): a strict
byte-level walk over Kineto events. See kerneldiff.core.ingest.scan for what it accepts and what it leaves."""

from __future__ import annotations

import numpy as np
from numba import njit

from kerneldiff.core.ingest.scan import (NINTS, NRAW, OCC, REGS, SMEM,  # noqa: I001
                                         ARRAY_END, BAIL, CORR, DEVICE, EXT, FLOAT_DUR, FLOAT_TS, FULL, LIMIT, MISSING, PARENT, PID, PYID,
                   STREAM, TID)

_jit = njit(cache=True, nogil=True, boundscheck=False)

# sentinels returned by the helpers instead of a position
_INCOMPLETE, _INVALID, _BAILED = -1, -2, -3   # _BAILED: valid JSON, but left to msgspec
_POW10 = np.array([10.0 ** k for k in range(23)])
_STACK = 64   # nesting deeper than this is left to msgspec


@_jit
def _ws(buf, i, n):
    while i < n:
        c = buf[i]
        if c != 32 and c != 10 and c != 13 and c != 9:
            return i
        i += 1
    return i


_NUMCHAR = np.zeros(256, np.bool_)   # characters a number string may hold (int(" 1_0"), float("-1e5"))
for _c in b"0123456789+-._eEiInNfFaAtTyY \t\n\r\f\v":
    _NUMCHAR[_c] = True


@_jit
def _string(buf, i, n):
    """buf[i] is the opening quote. Returns (end after the closing quote or a sentinel,
    FNV-1a hash of the raw bytes, has escapes, all ASCII, may be a number: has a digit and
    only characters Python's int() or float() accept)."""
    h = np.uint64(0xCBF29CE484222325)
    prime = np.uint64(0x100000001B3)
    esc = False
    ascii_ = True
    digit = False
    odd = False
    i += 1
    while i < n:
        c = buf[i]
        if c == 34:
            return i + 1, h, esc, ascii_, digit and not odd
        h = (h ^ np.uint64(c)) * prime
        if c == 92:
            esc = True
            if i + 1 >= n:
                return _INCOMPLETE, h, esc, ascii_, digit
            e = buf[i + 1]
            if e == 117:  # \uXXXX; surrogates are left to msgspec
                if i + 6 > n:
                    return _INCOMPLETE, h, esc, ascii_, digit
                v = 0
                for k in range(i + 2, i + 6):
                    d = buf[k]
                    h = (h ^ np.uint64(d)) * prime
                    if 48 <= d <= 57:
                        v = v * 16 + d - 48
                    elif 97 <= d <= 102:
                        v = v * 16 + d - 87
                    elif 65 <= d <= 70:
                        v = v * 16 + d - 55
                    else:
                        return _INVALID, h, esc, ascii_, digit
                if 0xD800 <= v <= 0xDFFF:
                    return _INVALID, h, esc, ascii_, digit
                ascii_ = False
                i += 6
                continue
            if e == 34 or e == 92 or e == 47 or e == 98 or e == 102 or e == 110 or e == 114 or e == 116:
                h = (h ^ np.uint64(e)) * prime
                ascii_ = False
                i += 2
                continue
            return _INVALID, h, esc, ascii_, digit
        if c < 32:
            return _INVALID, h, esc, ascii_, digit
        if c >= 128:  # UTF-8: exact validation (no overlongs, surrogates, > U+10FFFF)
            ascii_ = False
            if 0xC2 <= c <= 0xDF:
                k = 1
                lo, hi = 0x80, 0xBF
            elif 0xE0 <= c <= 0xEF:
                k = 2
                lo = 0xA0 if c == 0xE0 else 0x80
                hi = 0x9F if c == 0xED else 0xBF
            elif 0xF0 <= c <= 0xF4:
                k = 3
                lo = 0x90 if c == 0xF0 else 0x80
                hi = 0x8F if c == 0xF4 else 0xBF
            else:
                return _INVALID, h, esc, ascii_, digit
            if i + k >= n:
                return _INCOMPLETE, h, esc, ascii_, digit
            b = buf[i + 1]
            if b < lo or b > hi:
                return _INVALID, h, esc, ascii_, digit
            h = (h ^ np.uint64(b)) * prime
            for j in range(i + 2, i + 1 + k):
                b = buf[j]
                if b < 0x80 or b > 0xBF:
                    return _INVALID, h, esc, ascii_, digit
                h = (h ^ np.uint64(b)) * prime
            i += 1 + k
            continue
        if 48 <= c <= 57:
            digit = True
        elif not _NUMCHAR[c]:
            odd = True
        i += 1
    return _INCOMPLETE, h, esc, ascii_, digit


# bytes that end the fast loop over a string: quote, backslash, controls, non-ASCII
_SPECIAL = np.zeros(256, np.bool_)
_SPECIAL[34] = _SPECIAL[92] = True
_SPECIAL[:32] = True
_SPECIAL[128:] = True


_ONES = np.uint64(0x0101010101010101)
_HIGH = np.uint64(0x8080808080808080)
_QUOTES = np.uint64(0x2222222222222222)
_SLASHES = np.uint64(0x5C5C5C5C5C5C5C5C)
_SPACES = np.uint64(0x2020202020202020)
_U8 = np.uint64(8)


@_jit
def _load8(buf, i):
    """Bytes i..i+7 as a little-endian word (LLVM merges the loads into one)."""
    w = np.uint64(buf[i + 7])
    for k in range(6, -1, -1):
        w = (w << _U8) | np.uint64(buf[i + k])
    return w


@_jit
def _special8(w):
    """Non-zero when one of the 8 bytes is a quote, a backslash, a control or non-ASCII."""
    q = w ^ _QUOTES
    b = w ^ _SLASHES
    return (((q - _ONES) & ~q) | ((b - _ONES) & ~b) | ((w - _SPACES) & ~w) | w) & _HIGH


@_jit
def _skip_string(buf, i, n):
    """Like _string, without the hash and flags: the end, or a sentinel. Plain stretches
    are checked 8 bytes at a time."""
    i += 1
    while i + 8 <= n and _special8(_load8(buf, i)) == 0:
        i += 8
    while i < n:
        c = buf[i]
        if c == 34:
            return i + 1
        if c == 92 or c < 32 or c >= 128:
            # rare bytes: let the full reader judge the rest of the string
            return _string(buf, i - 1, n)[0]
        i += 1
    return _INCOMPLETE


@_jit
def _hash(buf, s, e):
    """FNV-1a over 8-byte words (then the last bytes), mixed with the length."""
    prime = np.uint64(0x100000001B3)
    h = np.uint64(0xCBF29CE484222325)
    i = s
    while i + 8 <= e:
        h = (h ^ _load8(buf, i)) * prime
        h ^= h >> np.uint64(32)
        i += 8
    while i < e:
        h = (h ^ np.uint64(buf[i])) * prime
        i += 1
    h ^= np.uint64(e - s)
    h ^= h >> np.uint64(29)
    return h * np.uint64(0xBF58476D1CE4E5B9)


@_jit
def _number(buf, i, n):
    """A JSON number at buf[i]. Returns (end or sentinel, is integer, integer value,
    float value, exact): exact is False when Python must parse it (too many digits)."""
    neg = False
    if i < n and buf[i] == 45:
        neg = True
        i += 1
    if i >= n:
        return _INCOMPLETE, False, 0, 0.0, False
    mant = 0
    digits = 0
    c = buf[i]
    if c == 48:
        i += 1
    elif 49 <= c <= 57:
        while i < n and 48 <= buf[i] <= 57:
            if digits < 19:
                mant = mant * 10 + (buf[i] - 48)
            digits += 1
            i += 1
    else:
        return _INVALID, False, 0, 0.0, False
    exp10 = 0
    integer = True
    if i < n and buf[i] == 46:
        integer = False
        i += 1
        start = i
        while i < n and 48 <= buf[i] <= 57:
            if digits < 19:
                mant = mant * 10 + (buf[i] - 48)
                exp10 -= 1
            digits += 1 if (digits > 0 or buf[i] != 48) else 0
            i += 1
        if i == start:
            return (_INCOMPLETE if i >= n else _INVALID), False, 0, 0.0, False
    if i < n and (buf[i] == 101 or buf[i] == 69):
        integer = False
        i += 1
        eneg = False
        if i < n and (buf[i] == 43 or buf[i] == 45):
            eneg = buf[i] == 45
            i += 1
        start = i
        e = 0
        while i < n and 48 <= buf[i] <= 57:
            if e < 100000:
                e = e * 10 + (buf[i] - 48)
            i += 1
        if i == start:
            return (_INCOMPLETE if i >= n else _INVALID), False, 0, 0.0, False
        exp10 += -e if eneg else e
    if i >= n:
        return _INCOMPLETE, False, 0, 0.0, False   # the number may go on in the next bytes
    if exp10 + digits > 300 or exp10 < -300:
        return _INVALID, False, 0, 0.0, False   # near or beyond float range: msgspec decides
    if digits > 18:
        return i, integer, 0, 0.0, False
    ival = -mant if neg else mant
    if mant > 9007199254740992 or exp10 > 22 or exp10 < -22:
        return i, integer, ival, 0.0, False
    # Clinger's fast path: both operands exact, so one IEEE operation rounds correctly
    f = float(mant)
    f = f * _POW10[exp10] if exp10 >= 0 else f / _POW10[-exp10]
    return i, integer, ival, -f if neg else f, True


@_jit
def _skip_number(buf, i, n):
    """Validate a JSON number without converting it; the end or a sentinel. Numbers near or
    beyond float range (or with very long fractions) are left to msgspec, as in _number."""
    if buf[i] == 45:
        i += 1
        if i >= n:
            return _INCOMPLETE
    c = buf[i]
    whole = 0
    if c == 48:
        i += 1
    elif 49 <= c <= 57:
        while i < n and 48 <= buf[i] <= 57:
            whole += 1
            i += 1
    else:
        return _INVALID
    frac = 0
    if i < n and buf[i] == 46:
        i += 1
        while i < n and 48 <= buf[i] <= 57:
            frac += 1
            i += 1
        if frac == 0:
            return _INCOMPLETE if i >= n else _INVALID
    e = 0
    if i < n and (buf[i] == 101 or buf[i] == 69):
        i += 1
        eneg = False
        if i < n and (buf[i] == 43 or buf[i] == 45):
            eneg = buf[i] == 45
            i += 1
        start = i
        while i < n and 48 <= buf[i] <= 57:
            if e < 100000:
                e = e * 10 + (buf[i] - 48)
            i += 1
        if i == start:
            return _INCOMPLETE if i >= n else _INVALID
        if eneg:
            e = -e
    if i >= n:
        return _INCOMPLETE
    if whole + e > 300 or e < -300 or frac > 300:
        return _INVALID
    return i


@_jit
def _member_key(buf, i, n):
    """An object member's key at buf[i] and its colon: where the value may start, or a sentinel."""
    if buf[i] != 34:
        return _INVALID
    i = _skip_string(buf, i, n)
    if i < 0:
        return i
    return _value_start(buf, i, n)


@_jit
def _skip(buf, i, n, stack):
    """Validate and skip one JSON value at buf[i]; returns its end or a sentinel."""
    depth = 0
    while True:
        i = _ws(buf, i, n)
        if i >= n:
            return _INCOMPLETE
        c = buf[i]
        # a value
        if c == 34:
            i = _skip_string(buf, i, n)
            if i < 0:
                return i
        elif c == 45 or 48 <= c <= 57:
            i = _skip_number(buf, i, n)
            if i < 0:
                return i
        elif c == 123 or c == 91:
            if depth >= _STACK:
                return _INVALID
            stack[depth] = c
            depth += 1
            i = _ws(buf, i + 1, n)
            if i >= n:
                return _INCOMPLETE
            if (c == 123 and buf[i] == 125) or (c == 91 and buf[i] == 93):
                depth -= 1
                i += 1
            elif c == 123:
                i = _member_key(buf, i, n)
                if i < 0:
                    return i
                continue
            else:
                continue
        elif c == 116 or c == 102 or c == 110:
            word = 4 if c != 102 else 5
            if i + word > n:
                return _INCOMPLETE
            if c == 116 and not (buf[i + 1] == 114 and buf[i + 2] == 117 and buf[i + 3] == 101):
                return _INVALID
            if c == 110 and not (buf[i + 1] == 117 and buf[i + 2] == 108 and buf[i + 3] == 108):
                return _INVALID
            if c == 102 and not (buf[i + 1] == 97 and buf[i + 2] == 108 and buf[i + 3] == 115
                                 and buf[i + 4] == 101):
                return _INVALID
            i += word
        else:
            return _INVALID
        # after a value: close containers or go on to the next member
        while True:
            if depth == 0:
                return i
            i = _ws(buf, i, n)
            if i >= n:
                return _INCOMPLETE
            c = buf[i]
            top = stack[depth - 1]
            if c == 44:
                i += 1
                if top == 123:
                    i = _ws(buf, i, n)
                    if i >= n:
                        return _INCOMPLETE
                    i = _member_key(buf, i, n)
                    if i < 0:
                        return i
                break
            if (top == 123 and c == 125) or (top == 91 and c == 93):
                depth -= 1
                i += 1
                continue
            return _INVALID


@_jit
def _escaped(buf, s, e):
    for k in range(s, e):
        if buf[k] == 92:
            return True
    return False


@_jit
def _key_is(buf, start, end, word):
    if end - start != len(word):
        return False
    for k in range(len(word)):
        if buf[start + k] != word[k]:
            return False
    return True

# bail reasons are not reported: the msgspec reader takes the event and knows them
_K_PH, _K_CAT, _K_NAME, _K_TS, _K_DUR, _K_PID, _K_TID, _K_ARGS = range(8)
_OTHER = -1


@_jit
def _event_key(buf, s, e):
    n = e - s
    c = buf[s]
    if n == 2:
        if c == 112 and buf[s + 1] == 104:
            return _K_PH
        if c == 116 and buf[s + 1] == 115:
            return _K_TS
    elif n == 3:
        if c == 99 and buf[s + 1] == 97 and buf[s + 2] == 116:
            return _K_CAT
        if c == 100 and buf[s + 1] == 117 and buf[s + 2] == 114:
            return _K_DUR
        if c == 112 and buf[s + 1] == 105 and buf[s + 2] == 100:
            return _K_PID
        if c == 116 and buf[s + 1] == 105 and buf[s + 2] == 100:
            return _K_TID
    elif n == 4:
        if c == 110 and buf[s + 1] == 97 and buf[s + 2] == 109 and buf[s + 3] == 101:
            return _K_NAME
        if c == 97 and buf[s + 1] == 114 and buf[s + 2] == 103 and buf[s + 3] == 115:
            return _K_ARGS
    return _OTHER


_W_CORR = np.frombuffer(b"correlation", np.uint8).copy()
_W_EXT = np.frombuffer(b"External id", np.uint8).copy()
_W_DEVICE = np.frombuffer(b"device", np.uint8).copy()
_W_STREAM = np.frombuffer(b"stream", np.uint8).copy()
_W_PYID = np.frombuffer(b"Python id", np.uint8).copy()
_W_PARENT = np.frombuffer(b"Python parent id", np.uint8).copy()
_W_DIMS = np.frombuffer(b"Input Dims", np.uint8).copy()
_W_TYPES = np.frombuffer(b"Input type", np.uint8).copy()
_W_REGS = np.frombuffer(b"registers per thread", np.uint8).copy()
_W_SMEM = np.frombuffer(b"shared memory", np.uint8).copy()
_W_OCC = np.frombuffer(b"est. achieved occupancy %", np.uint8).copy()
_W_GRID = np.frombuffer(b"grid", np.uint8).copy()
_W_BLOCK = np.frombuffer(b"block", np.uint8).copy()
# args whose raw value text is kept, after the NINTS integers: record_shapes of an operator, the
# launch configuration of a kernel
_A_DIMS, _A_TYPES, _A_GRID, _A_BLOCK = NINTS, NINTS + 1, NINTS + 2, NINTS + 3


@_jit
def _arg_key(buf, s, e):
    n = e - s
    if n == 11:
        if _key_is(buf, s, e, _W_CORR):
            return CORR
        if _key_is(buf, s, e, _W_EXT):
            return EXT
    elif n == 6:
        if _key_is(buf, s, e, _W_DEVICE):
            return DEVICE
        if _key_is(buf, s, e, _W_STREAM):
            return STREAM
    elif n == 9:
        if _key_is(buf, s, e, _W_PYID):
            return PYID
    elif n == 16:
        if _key_is(buf, s, e, _W_PARENT):
            return PARENT
    elif n == 10:
        if _key_is(buf, s, e, _W_DIMS):
            return _A_DIMS
        if _key_is(buf, s, e, _W_TYPES):
            return _A_TYPES
    elif n == 20:
        if _key_is(buf, s, e, _W_REGS):
            return REGS
    elif n == 13:
        if _key_is(buf, s, e, _W_SMEM):
            return SMEM
    elif n == 25:
        if _key_is(buf, s, e, _W_OCC):
            return OCC
    elif n == 4:
        if _key_is(buf, s, e, _W_GRID):
            return _A_GRID
    elif n == 5:
        if _key_is(buf, s, e, _W_BLOCK):
            return _A_BLOCK
    return _OTHER


@_jit
def _int_value(buf, i, n):
    """An integer field: a JSON integer, a decimal string, null. Returns (end or sentinel,
    value). A string that is no number at all ("0x0", "stream 7") reads as -1 whichever path
    reads it; other odd values (floats, bools, numbers in other forms) are left to msgspec."""
    c = buf[i]
    if c == 110:
        if i + 4 > n:
            return _INCOMPLETE, 0
        if buf[i + 1] == 117 and buf[i + 2] == 108 and buf[i + 3] == 108:
            return i + 4, MISSING
        return _INVALID, 0
    if c == 34:
        r = _string(buf, i, n)
        end = r[0]
        if end < 0:
            return end, 0
        if not r[2] and r[3] and not r[4]:
            return end, -1
        if r[2] or not r[3]:
            return _BAILED, 0
        j = i + 1
        neg = False
        if buf[j] == 45:
            neg = True
            j += 1
        if j == end - 1 or end - 1 - j > 18 or (buf[j] == 48 and end - 1 - j > 1):
            return _BAILED, 0
        v = 0
        while j < end - 1:
            d = buf[j]
            if d < 48 or d > 57:
                return _BAILED, 0
            v = v * 10 + (d - 48)
            j += 1
        return end, -v if neg else v
    if c == 45 or 48 <= c <= 57:
        r = _number(buf, i, n)
        if r[0] < 0:
            return r[0], 0
        if not r[1] or not r[4] or r[2] == MISSING:
            return _BAILED, 0
        return r[0], r[2]
    return _BAILED, 0


@_jit
def _float_value(buf, i, n):
    """ts / dur: a JSON number or a number in a string (both exact here, or left to
    Python's float), null (NaN). Returns (end or sentinel, value, exact, num start, num end)."""
    c = buf[i]
    if c == 110:
        if i + 4 > n:
            return _INCOMPLETE, 0.0, True, 0, 0
        if buf[i + 1] == 117 and buf[i + 2] == 108 and buf[i + 3] == 108:
            return i + 4, np.nan, True, 0, 0
        return _INVALID, 0.0, True, 0, 0
    if c == 34:
        r = _string(buf, i, n)
        end = r[0]
        if end < 0:
            return end, 0.0, True, 0, 0
        if r[2] or not r[3] or end - i < 3:
            return _BAILED, 0.0, True, 0, 0
        q = _number(buf, i + 1, end)   # the closing quote ends the number
        if q[0] != end - 1:
            return _BAILED, 0.0, True, 0, 0
        return end, q[3], q[4], i + 1, end - 1
    if c == 45 or 48 <= c <= 57:
        q = _number(buf, i, n)
        if q[0] < 0:
            return q[0], 0.0, True, 0, 0
        return q[0], q[3], q[4], i, q[0]
    return _BAILED, 0.0, True, 0, 0


@_jit
def _fail(e):
    """A helper's sentinel as the scan's failure: 1 ran out of bytes, 2 left to msgspec."""
    return 1 if e == _INCOMPLETE else 2


@_jit
def _value_start(buf, i, n):
    """From just after a member's key: past the colon to where its value starts, or a sentinel."""
    i = _ws(buf, i, n)
    if i >= n:
        return _INCOMPLETE
    if buf[i] != 58:
        return _INVALID
    i = _ws(buf, i + 1, n)
    if i >= n:
        return _INCOMPLETE
    return i


@_jit
def _args(buf, i, n, stack, ev_ints, ev_raw, ev_hash):
    """The "args" object at buf[i]: its integer fields into ev_ints, the byte ranges of the
    record_shapes values into ev_raw, the rest skipped. Returns its end or a sentinel."""
    i = _ws(buf, i + 1, n)
    if i < n and buf[i] == 125:
        return i + 1
    seen = 0
    while True:
        if i >= n:
            return _INCOMPLETE
        if buf[i] != 34:
            return _INVALID
        ke = _skip_string(buf, i, n)
        if ke < 0:
            return ke
        key = _arg_key(buf, i + 1, ke - 1)
        if key == _OTHER and _escaped(buf, i + 1, ke - 1):
            return _BAILED
        i = _value_start(buf, ke, n)
        if i < 0:
            return i
        if key == _OTHER:
            i = _skip(buf, i, n, stack)
        elif key >= _A_DIMS:
            if seen & (1 << key):
                return _BAILED
            seen |= 1 << key
            e = _skip(buf, i, n, stack)
            if e < 0:
                return e
            ev_raw[2 * (key - _A_DIMS)] = i
            ev_raw[2 * (key - _A_DIMS) + 1] = e
            ev_hash[key - _A_DIMS] = _hash(buf, i, e)
            i = e
        else:
            if seen & (1 << key):
                return _BAILED
            seen |= 1 << key
            r = _int_value(buf, i, n)
            if r[0] < 0:
                return r[0]
            i = r[0]
            ev_ints[key] = r[1]
        if i < 0:
            return i
        i = _ws(buf, i, n)
        if i >= n:
            return _INCOMPLETE
        if buf[i] == 44:
            i = _ws(buf, i + 1, n)
            continue
        if buf[i] == 125:
            return i + 1
        return _INVALID


@_jit
def _scan(buf, pos, limit, blob, ends, codes, phase, o_code, o_floats, o_ints, o_nhash,
          o_nstart, o_nlen, o_nesc, o_fix, o_shape, o_shash, state):
    n = len(buf)
    cap = len(o_code)
    fcap = len(o_fix)
    rows = 0
    events = 0
    fixes = 0
    stack = np.empty(_STACK, np.uint8)
    status = LIMIT
    i = _ws(buf, pos, n)
    ev_ints = np.empty(NINTS, np.int64)
    ev_raw = np.empty(2 * NRAW, np.int64)
    ev_hash = np.zeros(NRAW, np.uint64)
    while True:
        if i >= limit:
            break
        if buf[i] == 93:
            status = ARRAY_END
            break
        if buf[i] != 123:
            status = BAIL
            break
        if rows >= cap or fixes + 2 > fcap:
            status = FULL
            break
        start = i
        i += 1
        ph = -1
        seen = 0
        cat_s = -1
        cat_e = -1
        name_s = -1
        name_e = -1
        name_h = np.uint64(0)
        name_esc = False
        ts = np.nan
        dur = np.nan
        ts_exact = True
        dur_exact = True
        ts_a = 0
        ts_b = 0
        dur_a = 0
        dur_b = 0
        for k in range(NINTS):
            ev_ints[k] = MISSING
        for k in range(2 * NRAW):
            ev_raw[k] = -1
        fail = 0    # 0 ok, 1 incomplete, 2 bail
        i = _ws(buf, i, n)
        if i < n and buf[i] == 125:
            fail = 2   # {} has no phase
        while fail == 0:
            if i >= n:
                fail = 1
                break
            if buf[i] != 34:
                fail = 2
                break
            ke = _skip_string(buf, i, n)
            if ke < 0:
                fail = _fail(ke)
                break
            key = _event_key(buf, i + 1, ke - 1)
            if key == _OTHER and _escaped(buf, i + 1, ke - 1):
                fail = 2   # an escaped key may spell one of ours
                break
            i = _value_start(buf, ke, n)
            if i < 0:
                fail = _fail(i)
                break
            if key != _OTHER:
                bit = 1 << key
                if seen & bit:
                    fail = 2   # a duplicate key: msgspec knows which one wins
                    break
                seen |= bit
            c = buf[i]
            if key == _K_PH:
                if c != 34:
                    fail = 2
                    break
                e = _skip_string(buf, i, n)
                if e < 0:
                    fail = _fail(e)
                    break
                if e - i != 3 or buf[i + 1] >= 128 or phase[buf[i + 1]] == 0:
                    fail = 2
                    break
                ph = phase[buf[i + 1]]
                i = e
            elif key == _K_CAT or key == _K_NAME:
                if c == 110 and key == _K_NAME:
                    e = _skip(buf, i, n, stack)
                    if e < 0:
                        fail = _fail(e)
                        break
                    i = e   # null name: kept as "no name" (dropped if its group is read)
                elif c != 34:
                    fail = 2
                    break
                else:
                    e = _skip_string(buf, i, n)
                    if e < 0:
                        fail = _fail(e)
                        break
                    if key == _K_CAT:
                        if _escaped(buf, i + 1, e - 1):
                            fail = 2
                            break
                        cat_s = i + 1
                        cat_e = e - 1
                    else:
                        name_s = i + 1
                        name_e = e - 1
                        name_h = _hash(buf, name_s, name_e)
                        name_esc = _escaped(buf, name_s, name_e)
                    i = e
            elif key == _K_TS or key == _K_DUR:
                q = _float_value(buf, i, n)
                if q[0] < 0:
                    fail = _fail(q[0])
                    break
                if key == _K_TS:
                    ts, ts_exact, ts_a, ts_b = q[1], q[2], q[3], q[4]
                else:
                    dur, dur_exact, dur_a, dur_b = q[1], q[2], q[3], q[4]
                i = q[0]
            elif key == _K_PID or key == _K_TID:
                q2 = _int_value(buf, i, n)
                if q2[0] < 0:
                    fail = _fail(q2[0])
                    break
                ev_ints[PID if key == _K_PID else TID] = q2[1]
                i = q2[0]
            elif key == _K_ARGS and c == 123:
                e = _args(buf, i, n, stack, ev_ints, ev_raw, ev_hash)
                if e < 0:
                    fail = _fail(e)
                    break
                i = e
            elif key == _K_ARGS and c == 110:
                e = _skip(buf, i, n, stack)   # args: null
                if e < 0:
                    fail = _fail(e)
                    break
                i = e
            elif key == _K_ARGS:
                fail = 2
                break
            else:
                e = _skip(buf, i, n, stack)
                if e < 0:
                    fail = _fail(e)
                    break
                i = e
            i = _ws(buf, i, n)
            if i >= n:
                fail = 1
                break
            if buf[i] == 44:
                i = _ws(buf, i + 1, n)
                continue
            if buf[i] == 125:
                i += 1
                break
            fail = 2
            break
        if fail == 0 and ph < 0:
            fail = 2
        if fail:
            i = start
            status = BAIL if fail == 2 else LIMIT
            break
        # the separator after the event
        j = _ws(buf, i, n)
        if j >= n:
            i = start
            break
        if buf[j] == 44:
            nxt = _ws(buf, j + 1, n)
        elif buf[j] == 93:
            # the last event: left to the caller with the document's end, which decides
            # whether the file is whole (a broken end makes the msgspec path drop it)
            i = start
            status = ARRAY_END
            break
        else:
            i = start
            status = BAIL
            break
        events += 1
        i = nxt
        if ph != 2 or cat_s < 0:
            continue
        code = 0
        clen = cat_e - cat_s
        lo = 0
        for k in range(len(ends)):
            hi = ends[k]
            if hi - lo == clen:
                same = True
                for m in range(clen):
                    if blob[lo + m] != buf[cat_s + m]:
                        same = False
                        break
                if same:
                    code = codes[k]
                    break
            lo = hi
        if code == 0:
            continue
        o_code[rows] = code
        o_floats[rows, 0] = ts
        o_floats[rows, 1] = dur
        for k in range(NINTS):
            o_ints[rows, k] = ev_ints[k]
        o_nhash[rows] = name_h
        o_nstart[rows] = name_s
        o_nlen[rows] = name_e - name_s if name_s >= 0 else -1
        o_nesc[rows] = name_esc
        for k in range(2 * NRAW):
            o_shape[rows, k] = ev_raw[k]
        for k in range(NRAW):
            o_shash[rows, k] = ev_hash[k] if ev_raw[2 * k] >= 0 else np.uint64(0)
        if not ts_exact:
            o_fix[fixes, 0] = rows
            o_fix[fixes, 1] = FLOAT_TS
            o_fix[fixes, 2] = ts_a
            o_fix[fixes, 3] = ts_b
            fixes += 1
        if not dur_exact:
            o_fix[fixes, 0] = rows
            o_fix[fixes, 1] = FLOAT_DUR
            o_fix[fixes, 2] = dur_a
            o_fix[fixes, 3] = dur_b
            fixes += 1
        rows += 1
    state[0] = rows
    state[1] = events
    state[2] = fixes
    state[3] = i
    state[4] = status


@_jit
def _first_mismatch(buf, starts, lens, rep):
    """The first row whose bytes differ from those of its group's representative row rep[row]
    (rows were grouped by a 64-bit hash: equal hashes do not prove equal names); -1 if none."""
    for r in range(len(starts)):
        q = rep[r]
        if q == r:
            continue
        n = lens[r]
        if n != lens[q]:
            return r
        a = starts[r]
        b = starts[q]
        if a != b and not _equal(buf, a, buf, b, n):
            return r
    return -1


@_jit
def _equal(x, a, y, b, n):
    """x[a:a+n] == y[b:b+n], eight bytes at a time."""
    k = 0
    while k + 8 <= n:
        if _load8(x, a + k) != _load8(y, b + k):
            return False
        k += 8
    while k < n:
        if x[a + k] != y[b + k]:
            return False
        k += 1
    return True


@_jit
def _confirm(buf, starts, lens, arena, offs, alens, ids):
    """ids[k] >= 0: row k's hash found entry ids[k] of the name cache; keep it only when the
    row's bytes are that entry's bytes (set -1 otherwise)."""
    for k in range(len(ids)):
        e = ids[k]
        if e < 0:
            continue
        n = lens[k]
        if n != alens[e]:
            ids[k] = -1
            continue
        if not _equal(buf, starts[k], arena, offs[e], n):
            ids[k] = -1
