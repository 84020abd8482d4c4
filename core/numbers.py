"""Numbers that may reach a report: bounded user-given values, ratios that exist, strict JSON.

Three rules every layer shares, so that no report prints `inf` or writes `NaN` into JSON:

* `number()` reads a user-given value (a flag, a key of a TOML file) and refuses what is not finite
  or lies outside its bounds; the caller names the flag or the file and key.
* `ratio()` is a quotient that exists: a zero, subnormal or NaN denominator (durations of 1e-320 µs
  in a hostile trace) or an overflowing result gives None, which every report shows as missing.
* `json_ready()` makes any nested result strict JSON: a non-finite float that escaped the rules
  above becomes null, and a lone surrogate (a file name that is not UTF-8) a visible escape.
"""

from __future__ import annotations

import codecs
import math
import sys
TYPE_CHECKING = False   # typing itself costs ~14 ms at import

if TYPE_CHECKING:   # dataclasses and typing cost ~25 ms at import; `kerneldiff --version` needs neither
    from typing import Any

TINY = sys.float_info.min   # the smallest normal float: a denominator below it only makes overflow


def _g(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def _bound_text(lo: float | None, hi: float | None, lo_excl: bool) -> str:
    low = None if lo is None else (("positive" if lo == 0 else f"> {_g(lo)}") if lo_excl else f">= {_g(lo)}")
    if hi is None:
        return low or "a finite number"
    if lo is None:
        return f"<= {_g(hi)}"
    if lo_excl:
        return f"{low} and <= {_g(hi)}"
    return f"between {_g(lo)} and {_g(hi)}"


def number(value: Any, *, integer: bool = False, lo: float | None = None, hi: float | None = None,
           lo_excl: bool = False) -> int | float:
    """`value` (a string as typed, or a number read from a file) as a finite int or float in
    [lo, hi] (`lo` itself refused when `lo_excl`). Raises ValueError saying what is wrong with it
    (without naming it: the caller knows the flag or key)."""
    kind = "an integer" if integer else "a number"
    if isinstance(value, str):
        try:
            v: int | float = int(value.strip()) if integer else float(value.strip())
        except ValueError:
            raise ValueError(f"not {kind}: {value!r}") from None
    elif isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and isinstance(value, float)):
        raise ValueError(f"not {kind}: {value!r}")
    else:
        v = value
    shown = value.strip() if isinstance(value, str) else repr(value)
    if isinstance(v, float) and not math.isfinite(v):   # "inf", "nan" and "1e400" (read as inf)
        within = "" if lo is None and hi is None else f" ({_bound_text(lo, hi, lo_excl)})"
        raise ValueError(f"must be a finite number{within}, got {shown}")
    if (lo is not None and (v <= lo if lo_excl else v < lo)) or (hi is not None and v > hi):
        raise ValueError(f"must be {_bound_text(lo, hi, lo_excl)}, got {shown}")
    return v


def ratio(x: float | None, of: float | None) -> float | None:
    """x / of, or None where the quotient means nothing: a missing value, a denominator that is 0,
    subnormal or NaN (either sign allowed above that), or a result that is not finite."""
    if x is None or of is None or not abs(of) >= TINY:
        return None
    r = x / of
    return r if math.isfinite(r) else None


def finite(x: float | None) -> float | None:
    """x, or None when it is NaN or infinite."""
    return x if x is None or math.isfinite(x) else None


def safe_text(s: str) -> str:
    """`s` as it can be encoded in UTF-8: lone surrogates (the undecodable bytes of a file name,
    a `\\ud800` escape in a trace) written as the escape `\\udcff`, as the error lines write them."""
    if s.isascii():
        return s
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


def json_ready(obj: Any) -> Any:
    """A copy of nested dicts, lists, tuples and dataclasses (as `dataclasses.asdict`) fit for strict
    JSON: non-finite floats (numpy's included) as None, strings made encodable (`safe_text`), keys
    too. Other values are left to the writer (`default=str`)."""
    from dataclasses import asdict, is_dataclass

    if is_dataclass(obj) and not isinstance(obj, type):
        return json_ready(asdict(obj))
    if hasattr(obj, "to_json") and not isinstance(obj, type):   # a type that spells its own JSON
        return json_ready(obj.to_json())
    if isinstance(obj, float):      # numpy.float64 is a float too
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, str):
        return safe_text(obj)
    if isinstance(obj, dict):
        return {(safe_text(k) if isinstance(k, str) else k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    if hasattr(obj, "item") and hasattr(obj, "dtype"):   # other numpy scalars (float32, int64)
        return json_ready(obj.item())
    return obj


def _scalar(obj: Any) -> Any:
    """orjson's `default`: a numpy scalar as its Python value (float32 widened, as json_ready does),
    a type with `to_json()` as what that gives (a key that is no field name), anything else as its str."""
    if hasattr(obj, "item") and hasattr(obj, "dtype"):
        return obj.item()
    if hasattr(obj, "to_json") and not isinstance(obj, type):
        return obj.to_json()
    return str(obj)


def _escape(ch: str) -> str:
    c = ord(ch)
    if c < 0x10000:
        return f"\\u{c:04x}"
    c -= 0x10000
    return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"


def _escapes(err: UnicodeError) -> tuple[str, int]:
    """The codec error handler `kerneldiff-json-ascii`: a run of characters beyond ASCII, escaped."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    return "".join(_escape(ch) for ch in err.object[err.start:err.end]), err.end


codecs.register_error("kerneldiff-json-ascii", _escapes)


def _ascii_json(data: bytes) -> str:
    """orjson's UTF-8 output with every character beyond ASCII written as json.dumps writes it
    (`\\u00b5`), DEL (0x7f) too, as json.dumps does. Outside its strings JSON is ASCII, so every such
    character is inside one."""
    delete = b"\x7f" in data
    if data.isascii() and not delete:
        return data.decode("ascii")
    np = sys.modules.get("numpy")   # where the process has it (a comparison, a model): never imported for this
    return _escaped_runs(data, np) if np is not None else _escaped_by_codec(data, delete)


def _escaped_runs(data: bytes, np) -> str:
    """`_ascii_json` by the runs of bytes beyond ASCII, found with numpy: a report holds ~10–150 such
    characters in 2 MB (µ, ×, −), ~1.5 ms against ~7 ms decoding and encoding all of it. A run holds
    whole characters: every byte of a multi-byte UTF-8 character is ≥ 0x80."""
    at = np.flatnonzero(np.frombuffer(data, np.uint8) >= 0x7F)
    if not len(at):
        return data.decode("ascii")
    cut = np.flatnonzero(np.diff(at) > 1) + 1
    starts = at[np.concatenate(([0], cut))].tolist()
    ends = (at[np.concatenate((cut - 1, [len(at) - 1]))] + 1).tolist()
    out, done = [], 0
    for a, b in zip(starts, ends):
        out.append(data[done:a])
        out.append("".join(_escape(ch) for ch in data[a:b].decode("utf-8")).encode("ascii"))
        done = b
    out.append(data[done:])
    return b"".join(out).decode("ascii")


def _escaped_by_codec(data: bytes, delete: bool) -> str:
    """`_ascii_json` without numpy: the ASCII codec calls the handler once per run of other
    characters (one str.replace per distinct character took ~20 ms on a 2 MB report)."""
    text = data.decode("utf-8")
    if delete:
        text = text.replace("\x7f", "\\u007f")
    return text.encode("ascii", "kerneldiff-json-ascii").decode("ascii")


def strict_json(obj: Any, indent: int | None = 2) -> str:
    """`obj` (nested dicts, lists, tuples, dataclasses) as strict JSON text, ASCII only (other
    characters as \\u escapes, as `json.dumps` writes them): a non-finite float is null, a lone
    surrogate its visible escape (`json_ready`), no NaN or Infinity ever.

    orjson writes what it can (a 1,000-operation comparison in ~1 ms instead of ~50 ms through
    `asdict` and `json.dumps`): a dataclass's fields, in order, as `asdict` gives them (no result
    type has fields named with a leading underscore, which orjson leaves out; tested), NaN and
    infinities as null. What it refuses (a lone surrogate, an integer beyond 64 bits) and an
    indent other than 2 take the `json_ready` + `json.dumps` path, which gives the same document."""
    if indent in (None, 2):
        import orjson

        try:
            data = orjson.dumps(obj, default=_scalar,
                                option=orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0))
        except TypeError:   # orjson.JSONEncodeError
            pass
        else:
            return _ascii_json(data)
    import json

    return json.dumps(json_ready(obj), indent=indent, allow_nan=False, default=str)


def small_unique(values, bound: int):
    """np.unique(values, return_inverse=True) for integers in [0, bound): with a table of the
    bound's size instead of a sort when that is smaller (name ids: 550k kernels of a 1 GB trace
    in 3 ms, not 40). Returns (sorted distinct values, each value's index among them), int64."""
    import numpy as np   # here: the CLI's argument parsing imports this module

    values = np.asarray(values, dtype=np.int64)
    if bound > 4 * len(values) + 1024:
        uniq, inverse = np.unique(values, return_inverse=True)
        return uniq, inverse.reshape(-1).astype(np.int64)
    seen = np.zeros(bound, bool)
    seen[values] = True
    uniq = np.flatnonzero(seen)
    index = np.zeros(bound, np.int64)
    index[uniq] = np.arange(len(uniq))
    return uniq, index[values]


def unique_inverse(values):
    """np.unique(values, return_inverse=True) for integers: by small_unique's table when their span
    is small (device ids, categories, phases: ~1 ms for 260k kernels against np.unique's 4 ms sort).
    Returns (sorted distinct values, each value's index among them)."""
    import numpy as np

    values = np.asarray(values).reshape(-1)
    if len(values):
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < 1 << 20:
            # shifted in 64 bits: in a narrow type the span itself can overflow (int8 0 - -128)
            shifted = values.astype(np.int64) - lo if lo else values
            uniq, inverse = small_unique(shifted, hi - lo + 1)
            return (uniq.astype(np.int64) + lo).astype(values.dtype), inverse
    uniq, inverse = np.unique(values, return_inverse=True)
    return uniq, inverse.reshape(-1)


def distinct(values):
    """np.unique(values): the sorted distinct values, flattened, for values without NaN. np.unique
    without return_index/inverse/counts asks numpy.ma whether the array is masked, importing it on
    first use (~15 ms, most of the start-up a short command pays above numpy's own import)."""
    import numpy as np   # here: the CLI's argument parsing imports this module

    a = np.sort(np.asarray(values).reshape(-1))
    if len(a) < 2:
        return a
    keep = np.empty(len(a), bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def equal_runs(eq):
    """Over a sorted sequence with eq[i] = (row i equals row i + 1): the positions of the rows that
    share their value with a neighbour, and each one's run (rows of one run share it, runs count up).
    What a sort needs to re-sort only its ties."""
    import numpy as np

    tied = np.zeros(len(eq) + 1, bool)
    t = np.flatnonzero(eq)
    tied[t] = tied[t + 1] = True
    pos = np.flatnonzero(tied)
    return pos, np.cumsum(np.r_[True, ~eq])[pos]


def stable_argsort(keys):
    """np.argsort(keys, kind="stable") for integers. Keys spanning fewer than 65,536 values are sorted
    as their offsets from the smallest in uint8 or uint16, which numpy radix-sorts (O(n), ~10x faster
    than the merge sort it uses for wider integers). A stable order is unique, so the result is the
    same."""
    import numpy as np

    keys = np.asarray(keys)
    if len(keys):
        lo, hi = int(keys.min()), int(keys.max())
        if hi - lo < 1 << 16:
            small = np.uint8 if hi - lo < 1 << 8 else np.uint16
            return np.argsort((keys - lo).astype(small) if lo else keys.astype(small), kind="stable")
    return np.argsort(keys, kind="stable")


# Up to this many values, sorting a Python list beats numpy's per-call overhead (~20-40 µs for np.median or
# np.percentile; measured even at ~400 values): a layer's per-pass times are tens to hundreds of values.
SMALL = 256


def _plain(values) -> list[float] | None:
    """The values as a sorted list of floats when the pure-Python figures below equal numpy's: few
    values, no NaN (numpy's answer is NaN) and no -0.0 (which of ±0 numpy's partition returns is
    not the sorted order's). None: ask numpy."""
    if len(values) > SMALL:
        return None
    xs = values.tolist() if hasattr(values, "tolist") else list(values)
    for x in xs:
        if x != x or (x == 0.0 and math.copysign(1.0, x) < 0):
            return None
    xs.sort()
    return xs


def median(values) -> float:
    """float(np.median(values)) of a non-empty 1-D float array, bit for bit."""
    xs = _plain(values)
    if xs is None:
        import numpy as np

        return float(np.median(values))
    n = len(xs)
    h = n // 2
    # numpy takes the mean of the middle one or two: (a + b) / 2, or a / 1
    return xs[h] if n % 2 else (xs[h - 1] + xs[h]) / 2


def percentile(values, q: float) -> float:
    """float(np.percentile(values, q)) of a non-empty 1-D float array (numpy's default, linear
    method), bit for bit: the same virtual index and the same two-sided interpolation."""
    xs = _plain(values)
    if xs is None:
        import numpy as np

        return float(np.percentile(values, q))
    n = len(xs)
    at = (n - 1) * (q / 100)
    if at >= n - 1:     # numpy takes the last value twice, its weight counted from index -1
        lo = hi = n - 1
        t = at + 1
    else:
        lo = math.floor(at)
        hi, t = lo + 1, at - lo
    a, b = xs[lo], xs[hi]
    d = b - a
    return b - d * (1 - t) if t >= 0.5 else a + d * t


def row_percentiles(rows, qs) -> list[list[float]]:
    """np.percentile(rows, qs, axis=1).tolist() for a 2-D float array, bit for bit, from one sort of
    the rows: numpy partitions once per call but, for many short rows, its ~5x slower than sorting
    them (a ledger's ~2,000 rows of ~300 values). The same virtual indices and two-sided
    interpolation as `percentile`; a row holding NaN gives NaN, as numpy's does."""
    import numpy as np

    if rows.shape[1] == 0 or ((rows == 0) & np.signbit(rows)).any():   # -0.0: numpy's order of ±0
        return np.percentile(rows, qs, axis=1).tolist()
    n = rows.shape[1]
    s = np.sort(rows, axis=1)
    nan = np.isnan(s[:, -1])
    out = []
    for q in qs:
        at = (n - 1) * (q / 100)
        lo, hi, t = (n - 1, n - 1, at + 1) if at >= n - 1 else (math.floor(at), math.floor(at) + 1, at - math.floor(at))
        a, b = s[:, lo], s[:, hi]
        d = b - a
        r = b - d * (1 - t) if t >= 0.5 else a + d * t
        if nan.any():
            r[nan] = np.nan
        out.append(r.tolist())
    return out
