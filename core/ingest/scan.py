"""Compiled fast path of the reader: Kineto event bytes -> column values, no Python objects.

`scan` walks the `traceEvents` array byte by byte (C, `_fastscan.c`, GIL released) and writes,
for each complete event of a category kerneldiff reads, its group code, ts, dur, name (hash and
byte range) and the eight integer fields, straight into numpy arrays. Decoding to msgspec
structs and then reading them field by field cost ~2.5 s + ~3 s per GB; this walk ~1 s.

It only accepts what it can read exactly as the msgspec path would: strict JSON, valid UTF-8,
numbers in the usual forms. At anything else (a missing or unknown "ph", a bool where a number
goes, a float string in an integer field, a lone surrogate escape, deep nesting, a number that
needs full float parsing in a key position, ...) it stops *before* that event and the caller
hands the next slice to the msgspec reader, which has all the rules for odd input. Numbers
with more digits than a double holds exactly are not guessed: their byte ranges are returned
and parsed by Python's float(). A differential test holds the two paths to identical columns.

Where the extension was not built (no C compiler at install) or with KERNELDIFF_NO_SCANNER=1,
`available()` is False and the reader uses msgspec alone.

Kineto writes every event of a kind with the same keys, order and blanks. An event the full walk
read becomes a template: its bytes between values are literals, each value a step read by the full
walk's own function. A later event whose bytes match every literal is read step by step (no key
matched, no separator searched); at the first difference the full walk reads it from its start.
This halves the scan's instructions on real traces (`set_templates` turns it off).

The walk is compiled twice (`_fastscan_walk.h`): a portable copy (8-byte words, any CPU) and, with
GCC or Clang on x86-64, an AVX2 copy (32-byte vectors) that runs where the CPU has AVX2. Both make
the same decisions byte for byte. `simd_level()` says which one runs; KERNELDIFF_SCAN_SIMD=portable
(read at import) or `set_simd("portable")` forces the portable one, which is how the tests run both
on the same inputs.
"""

from __future__ import annotations

import os

from kerneldiff.core.msgspec_import import msgspec
import numpy as np

from kerneldiff.core.ingest import schema
from kerneldiff.core.numbers import small_unique

# how scan stopped
LIMIT, BAIL, ARRAY_END, FULL = 0, 1, 2, 3
# integer fields, columns of `ints`, in the order of schema.SCAN_INTS (tests/unit/test_schema.py
# holds these names and the C enum to it)
NINTS = len(schema.SCAN_INTS)
PID, TID, CORR, EXT, DEVICE, STREAM, PYID, PARENT, REGS, SMEM, OCC = range(NINTS)
# raw value texts kept per row, columns of `shape`: record_shapes dims and dtypes, grid, block,
# and the whole args object of an event that carries a collective's parameters (COMM: read by
# decode.comm_text_of_args into the text the msgspec path makes from the same fields)
NRAW = len(schema.SCAN_TEXTS)
DIMS, TYPES, GRID, BLOCK, CONCRETE, COMM = range(NRAW)
MISSING = np.iinfo(np.int64).min   # field absent or null (the struct path's None)
FLOAT_TS, FLOAT_DUR = 0, 1


def tables(group_of: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Category strings (ASCII) and their group codes as flat arrays for the compiled code."""
    cats = [(k.encode(), v) for k, v in group_of.items() if isinstance(k, str) and k.isascii()]
    blob = np.frombuffer(b"".join(c for c, _ in cats), np.uint8).copy()
    ends = np.cumsum([len(c) for c, _ in cats]).astype(np.int64)
    codes = np.array([v for _, v in cats], np.int8)
    phase = np.zeros(128, np.int8)
    for ch in schema.OTHER_PHASES:
        phase[ord(ch)] = 1
    phase[ord(schema.COMPLETE)] = 2
    return blob, ends, codes, phase


def _distinct_arrays(texts: int) -> tuple:
    """The scan's table of a call's distinct texts (key, id, generation: 2+ slots a text, a power
    of two) and where each distinct text first occurs (its bytes, and its row or row and column)."""
    size = 1 << max(2 * texts - 1, 1).bit_length()
    # only the generations start zeroed (a slot holds a key and an id where its generation is the
    # call's): 16 bits, cleared by the scan when they wrap
    return (np.empty(size, np.uint64), np.empty(size, np.int32), np.zeros(size, np.uint16),
            np.empty(texts, np.int64), np.empty(texts, np.int64), np.empty(texts, np.int64))


class Out:
    """Preallocated output of one scan call (reused: scan fills rows 0..n)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.code = np.empty(cap, np.int8)
        self.floats = np.empty((2, cap), np.float64)      # ts, dur: a row each
        self.ints = np.empty((NINTS, cap), np.int64)      # one row per integer field
        self.nhash = np.empty(cap, np.uint64)
        self.nstart = np.empty(cap, np.int64)
        self.nlen = np.empty(cap, np.int64)
        self.nesc = np.empty(cap, np.bool_)
        # byte ranges [start, end) of the raw texts (DIMS, TYPES, GRID, BLOCK; -1: absent)
        self.shape = np.empty((cap, 2 * NRAW), np.int64)
        self.shash = np.empty((cap, NRAW), np.uint64)   # their hashes: each distinct text decoded once
        # each row's name and raw texts as ids of the call's distinct texts (-1: none), each
        # distinct text's first occurrence, and the scan's tables for finding them (slots taken in
        # the call's generation, dist[0]); dist[1], dist[2]: how many distinct names, raw texts
        self.nloc = np.empty(cap, np.int32)
        self.sloc = np.empty((cap, NRAW), np.int32)
        self.names_seen = _distinct_arrays(cap)
        self.texts_seen = _distinct_arrays(cap * NRAW)
        self.dist = np.zeros(3, np.int64)
        # numbers left to Python's float(): row, field, start, end
        self.fix = np.empty((max(cap // 4, 16), 4), np.int64)
        # [rows written, events consumed, fixes, next position, status]
        self.state = np.zeros(5, np.int64)


class Scanned:
    """Rows of one scan, ready for `columns.Columns`: group codes, ts/dur (`floats`, a row each),
    the integer fields (`ints`, a row each, MISSING where absent), names as indexes into `names` (-1: no name), and each row's recorded
    input dims and dtypes and its launch grid and block as indexes into `texts` (shape[:, DIMS],
    [:, TYPES], [:, GRID], [:, BLOCK]; -1: not recorded)."""

    __slots__ = ("code", "floats", "ints", "name", "names", "events", "shape", "texts", "longest")

    def __init__(self, code, floats, ints, name, names, events, shape=None, texts=(), longest=None) -> None:
        self.code, self.floats, self.ints = code, floats, ints
        self.name, self.names, self.events = name, names, events
        self.longest = longest   # bytes of the longest name (None: unknown)
        self.shape = np.full((len(code), NRAW), -1, np.int32) if shape is None else shape
        self.texts = list(texts)

    def __len__(self) -> int:
        return len(self.code)


def _verified_groups(buf, hashes: np.ndarray, starts: np.ndarray, lens: np.ndarray):
    """Rows grouped by the bytes they point at: (first row of each group, each row's group).
    Grouping is by 64-bit hash, then every row's bytes are compared with its group's first row
    (one pass over the bytes, compiled): two different texts with the same hash and length, which
    an adversary can construct, must never merge. Only when they do are the groups rebuilt from
    the bytes themselves, in Python."""
    uniq, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if not len(uniq):
        return first, inverse
    if _load().first_mismatch(buf, starts, lens, first[inverse]) < 0:
        return first, inverse
    groups: dict = {}
    inverse = np.empty(len(starts), np.int64)
    firsts: list[int] = []
    for r, (s, n) in enumerate(zip(starts.tolist(), lens.tolist())):
        key = (n, bytes(buf[s:s + max(n, 0)]))
        g = groups.get(key)
        if g is None:
            g = groups[key] = len(firsts)
            firsts.append(r)
        inverse[r] = g
    return np.array(firsts, np.int64), inverse


def _name_text(raw: bytes, esc: bool) -> str:
    return msgspec.json.decode(b'"' + raw + b'"') if esc else raw.decode()


class NameCache:
    """Names decoded by earlier scan calls of one reader, found by hash, then confirmed against
    their raw bytes (kept in an arena): a name whose hash and length match an entry but whose
    bytes differ is decoded, never taken for that entry. Lookups are one compiled pass (an
    open-addressing table of the hashes, then the bytes compared); Python touches only names not
    seen before. The arena is bounded: past ARENA bytes, new names are decoded in every batch they
    appear in instead of cached."""

    ARENA = 256 << 20
    MIN_TABLE = 1024

    def __init__(self) -> None:
        self.tkeys = np.zeros(self.MIN_TABLE, np.uint64)      # hash of each slot's entry
        self.tentry = np.full(self.MIN_TABLE, -1, np.int64)   # entry in the slot, -1: empty
        self.texts: list[str] = []
        self.offs = np.empty(0, np.int64)      # each entry's bytes in the arena
        self.lens = np.empty(0, np.int64)
        self.arena = bytearray()

    def lookup(self, buf, hashes: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(entry per row or -1, whether the row's hash is known at all)."""
        if not self.texts:
            return np.full(len(hashes), -1, np.int64), np.zeros(len(hashes), bool)
        ids = np.empty(len(hashes), np.int64)
        known = np.empty(len(hashes), bool)
        arena = np.frombuffer(self.arena, np.uint8)
        _load().find(buf, np.ascontiguousarray(hashes, np.uint64), np.ascontiguousarray(starts, np.int64),
                     np.ascontiguousarray(lens, np.int64), self.tkeys, self.tentry, arena, self.offs, self.lens,
                     ids, known)
        del arena   # the arena may grow again
        return ids, known

    def add(self, buf, hashes: list[int], starts: list[int], lens: list[int], texts: list[str]) -> None:
        """Entries for texts whose hashes the cache does not hold (each hash at most once)."""
        new_keys, offs, sizes = [], [], []
        for h, s, n, t in zip(hashes, starts, lens, texts):
            if len(self.arena) + n > self.ARENA:
                break
            new_keys.append(h)
            offs.append(len(self.arena))
            sizes.append(n)
            self.arena += buf[s:s + n].tobytes()
            self.texts.append(t)
        if not new_keys:
            return
        first = len(self.offs)
        self.offs = np.concatenate([self.offs, np.array(offs, np.int64)])
        self.lens = np.concatenate([self.lens, np.array(sizes, np.int64)])
        if 2 * len(self.offs) > len(self.tkeys):   # at most half full: probes stay short
            size = len(self.tkeys)
            while 2 * len(self.offs) > size:
                size *= 2
            keys, entries = self.tkeys[self.tentry >= 0], self.tentry[self.tentry >= 0]
            self.tkeys, self.tentry = np.zeros(size, np.uint64), np.full(size, -1, np.int64)
            self._insert(keys.tolist(), entries.tolist())
        self._insert(new_keys, range(first, first + len(new_keys)))

    def _insert(self, keys, entries) -> None:
        mask = len(self.tkeys) - 1
        tkeys, tentry = self.tkeys, self.tentry
        for h, e in zip(keys, entries):
            slot = h & mask
            while tentry[slot] >= 0:
                slot = (slot + 1) & mask
            tkeys[slot] = h
            tentry[slot] = e


def _cached_ids(buf, cache: NameCache, keys: np.ndarray, starts: np.ndarray, lens: np.ndarray,
                decode) -> tuple[np.ndarray, list, int]:
    """Each row's text as an index: into `cache.texts` (n_cached of them), or past it into
    `extra`, the texts of this batch the cache does not take (its arena is full, or their hash
    is another text's). Most rows repeat a text seen before, so every row is looked up first
    (hash, then bytes) and only the rows missed are grouped by a sort; `decode(row)` makes the
    text of a row once per distinct text. Returns (index per row, extra, n_cached)."""
    entry, known_hash = cache.lookup(buf, keys, starts, lens)
    miss = np.flatnonzero(entry < 0)
    extra: list = []
    if len(miss):
        first, inverse = _verified_groups(buf, keys[miss], starts[miss], lens[miss])
        rep = miss[first]
        known = known_hash[rep]
        texts = [decode(r) for r in rep.tolist()]
        fresh = np.flatnonzero(~known).tolist()   # known hash, other bytes: not cached
        base = len(cache.texts)
        if fresh:
            at = rep[fresh]
            cache.add(buf, keys[at].tolist(), starts[at].tolist(), lens[at].tolist(), [texts[k] for k in fresh])
        stored = {k: base + m for m, k in enumerate(fresh) if base + m < len(cache.texts)}
        n_cached = len(cache.texts)
        group = np.empty(len(rep), np.int64)
        for k in range(len(rep)):
            e = stored.get(k)
            if e is None:
                e = n_cached + len(extra)
                extra.append(texts[k])
            group[k] = e
        entry = entry.copy()
        entry[miss] = group[inverse]
    return entry, extra, len(cache.texts)


def collect(buf, out: Out, cache: NameCache, shapes: NameCache | None = None) -> Scanned:
    """Copy the rows of the last scan out of `out`, with the numbers left to Python parsed and
    each distinct name (`cache`) and raw text (`shapes`) decoded once: across calls, confirmed
    byte for byte."""
    rows, events, fixes = int(out.state[0]), int(out.state[1]), int(out.state[2])
    floats = out.floats[:, :rows].copy()
    for r, f, a, b in out.fix[:fixes].tolist():
        floats[f, r] = float(bytes(buf[a:b]))
    nlen = out.nlen[:rows]
    # batch-local names: the texts used, in cache order (no sort: their indexes are small ints).
    # Each distinct name is looked up (and decoded when new) once, at its first row, in the order
    # of first rows: what looking up every row found, as every row repeats its first row's bytes
    first = out.names_seen[5][:int(out.dist[1])]
    h_start, h_len = out.nstart[first], out.nlen[first]
    slot_d, extra, n_cached = _cached_ids(buf, cache, out.nhash[first], h_start, h_len,
                                          lambda r: _name_text(bytes(buf[h_start[r]:h_start[r] + h_len[r]]),
                                                               bool(out.nesc[first[r]])))
    nloc = out.nloc[:rows]
    has = np.flatnonzero(nloc >= 0)
    slot = slot_d[nloc[has]]
    uniq, local = small_unique(slot, n_cached + len(extra))
    names: list[str | None] = [cache.texts[i] if i < n_cached else extra[i - n_cached] for i in uniq.tolist()]
    # rows without a name point at a None entry, as msgspec's rows do
    name = np.full(rows, len(names), np.int32)
    name[has] = local
    if len(has) < rows:
        names.append(None)
    longest = int(nlen.max()) if rows else 0   # raw bytes: never fewer than the decoded characters
    ranges = out.shape[:rows]
    comm = ranges[:, 2 * COMM] >= 0   # args objects with a collective's parameters
    if comm.any():   # only an operator's collective parameters are read: the others' are not decoded
        from kerneldiff.core.ingest.decode import G_CPU

        ranges[comm & (out.code[:rows] != G_CPU), 2 * COMM] = -1
    shape, texts_ = _shapes(buf, ranges, out.shash[:rows], NameCache() if shapes is None else shapes, out)
    return Scanned(out.code[:rows].copy(), floats, out.ints[:, :rows].copy(), name, names, events, shape, texts_,
                   longest)


def _shapes(buf, ranges: np.ndarray, hashes: np.ndarray, cache: NameCache, out: Out) -> tuple[np.ndarray, list]:
    """Raw value texts of the rows (canonical JSON, as the msgspec path makes them; for COMM, the
    collective's parameters read from the args object): each distinct text of the scan call
    (out.sloc, out.texts_seen) looked up in `cache` (by hash and length, then bytes) at its first
    occurrence, and each text the cache lacks decoded once."""
    from kerneldiff.core.ingest.decode import comm_text_of_args, shape_text

    shape = np.full((len(ranges), NRAW), -1, np.int32)
    texts_: list = []
    ids: dict = {}
    n_distinct = int(out.dist[2])
    if n_distinct:
        where = out.texts_seen[5][:n_distinct]   # row * NRAW + column of each one's first occurrence
        r, j = where // NRAW, where % NRAW
        st = ranges[r, 2 * j]
        lens = ranges[r, 2 * j + 1] - st
        key = hashes[r, j] ^ (lens.astype(np.uint64) << np.uint64(40))   # as the scan keys them
        slot, extra, n_cached = _cached_ids(buf, cache, key, st, lens,
                                            lambda q: shape_text(buf[int(st[q]):int(st[q]) + int(lens[q])]))
        uniq, local = small_unique(slot, n_cached + len(extra))
        remap = np.full(len(uniq), -1, np.int32)
        for k, u in enumerate(uniq.tolist()):
            remap[k] = _number(cache.texts[u] if u < n_cached else extra[u - n_cached], ids, texts_)
        sloc = out.sloc[:len(ranges)]
        present = sloc >= 0
        shape[present] = remap[local][sloc[present]]
    # an operator's args object holds its own External id: each is new, so none is cached (the
    # arena would only fill up); comm_text reads what repeats in them once
    rows = np.flatnonzero(ranges[:, 2 * COMM] >= 0)
    col = np.empty(len(rows), np.int32)
    for k, (a, b) in enumerate(zip(ranges[rows, 2 * COMM].tolist(), ranges[rows, 2 * COMM + 1].tolist())):
        col[k] = _number(comm_text_of_args(buf[a:b]), ids, texts_)
    shape[rows, COMM] = col
    return shape, texts_


def _number(text: str | None, ids: dict, texts_: list) -> int:
    """The index of a raw text in the batch's `texts_` (added when new); -1 for None, a value that
    is not readable, as the msgspec path reads it."""
    if text is None:
        return -1
    v = ids.get(text)
    if v is None:
        v = ids[text] = len(texts_)
        texts_.append(text)
    return v


_kernel = None


def _load():
    """The compiled scanner module (`_fastscan`, imported on first use); False where it was not
    built."""
    global _kernel
    if _kernel is None:
        try:
            from kerneldiff.core.ingest import _fastscan
            _kernel = _fastscan
        except ImportError:  # the extension is optional (setup.py): the reader works without
            _kernel = False
    return _kernel


def available() -> bool:
    """Whether the reader uses the scanner: built, and KERNELDIFF_NO_SCANNER not set (read on each
    call, so that setting it takes effect in a running process too)."""
    return not os.environ.get("KERNELDIFF_NO_SCANNER") and bool(_load())


def simd_levels() -> tuple[str, ...]:
    """The copies of the walk this CPU can run: ("portable",) or ("portable", "avx2")."""
    return tuple(_load().simd_levels())


def simd_level() -> str:
    """The copy `scan` runs now: "avx2" or "portable"."""
    return _load().simd()


def set_simd(level: str) -> str:
    """Run the `level` copy of the walk from now on, in this process (ValueError where this CPU
    cannot run it); returns it."""
    return _load().set_simd(level)


def set_templates(on: bool) -> bool:
    """Read events through templates of earlier events of the same layout (the default; off, or
    KERNELDIFF_SCAN_TEMPLATES=0 at import: every event by the full walk). Returns the setting
    before. Both make the same decisions byte for byte."""
    return _load().templates(bool(on))


def scan(buf: np.ndarray, pos: int, limit: int, out: Out, tables) -> None:
    """Scan events from buf[pos] (an event's '{', or blanks before it) while they start before
    `limit`; an event may run past `limit` up to len(buf). Results in `out` (see Out.state)."""
    blob, ends, codes, phase = tables
    _load().scan(buf, pos, limit, blob, ends, codes, phase, out.code, out.floats, out.ints, out.nhash,
                 out.nstart, out.nlen, out.nesc, out.fix, out.shape, out.shash, out.state, out.nloc, out.sloc,
                 out.names_seen, out.texts_seen, out.dist)
