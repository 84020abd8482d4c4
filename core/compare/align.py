"""Global alignment of two kernel sequences (one layer each), fusion-aware.

Needleman–Wunsch over (category, name) with a linear gap cost. A kernel that one side fused away
becomes a gap instead of shifting every later pair. A layer of tens to a few hundred kernels
(up to `MAX_CELLS` table cells) gets the full table, with name similarity as a tie-break. A larger
one (a hostile or odd trace: one "layer" of 20,000 kernels took two minutes and 1.6 GB) is
aligned in a band around the diagonal, in integer scores a row at a time with numpy, by category
and name only: time and memory stay linear in the kernels (`coarse` says when this happens).
"""

from __future__ import annotations

import numpy as np

MATCH_NAME = 4.0        # identical kernel names
MATCH_CATEGORY = 2.5    # same category (name similarity adds up to +0.5 as a tie-break)
MATCH_COMPONENT = 1.0   # a fused kernel against one of its components
MISMATCH = -2.0         # different categories: prefer two gaps over one wrong pair
OP_MISMATCH = -2.5      # GEMMs of different operations (a batched attention GEMM against a projection): gaps
GAP = -1.0
MAX_CELLS = 4_000_000   # the full table (Python, ~2 µs a cell) up to here
BAND_CELLS = 32_000_000  # the banded table: one byte of traceback per cell
BAND_MIN = 64


try:   # difflib's count of matched characters and the table in C (setup.py builds them where it can)
    from kerneldiff.core.compare._similarity import matches as _matches, table as _table
except ImportError:
    _matches = _table = None


def _similarity(a: str, b: str) -> float:
    """SequenceMatcher(None, a[:96], b[:96], autojunk=False).ratio(): 2 M / T, M counted in C
    where built (~1 µs against ~35 µs), the same integer, so the same float."""
    if a == b:
        return 1.0
    a, b = a[:96], b[:96]
    if _matches is None:
        from difflib import SequenceMatcher   # here: only without the C count (~0.7 ms to import)

        return SequenceMatcher(None, a, b, autojunk=False).ratio()
    total = len(a) + len(b)
    return 2.0 * _matches(a, b) / total if total else 1.0


def align(a_cats: list[str], a_names: list[str], b_cats: list[str], b_names: list[str],
          components: dict[str, list[str]] | None = None, a_ops: list[str] | None = None,
          b_ops: list[str] | None = None, sim_cache: dict | None = None) -> list[tuple[int | None, int | None]]:
    """Pairs of indices (i into a, j into b); None marks a gap. `a_ops`/`b_ops`: an operation key per
    kernel ("" when unknown); two kernels of one category whose keys are known and differ are not
    paired (op_fusion.gemm_op_keys: aten::bmm of a decomposed attention is not aten::mm's projection).

    Symmetric by construction: the two sequences are aligned in a canonical order (the smaller
    one, by names, categories and operation keys, first) and the pairs mirrored back, so swapping
    the sides swaps every pair and changes nothing else. Ties between equally good alignments
    (and the name similarity, which is not symmetric) would otherwise let the argument order
    choose: 48 pairs one way and 45 the other on a real layer. `sim_cache`: name similarities
    already computed, by (name, name), shared by the alignments of one comparison."""
    key_a = (list(a_names), list(a_cats), list(a_ops or ()))
    key_b = (list(b_names), list(b_cats), list(b_ops or ()))
    cache = {} if sim_cache is None else sim_cache
    if key_b < key_a:
        pairs = _align(b_cats, b_names, a_cats, a_names, components, b_ops, a_ops, cache)
        return [(i, j) for j, i in pairs]
    return _align(a_cats, a_names, b_cats, b_names, components, a_ops, b_ops, cache)


def _align(a_cats: list[str], a_names: list[str], b_cats: list[str], b_names: list[str],
           components: dict[str, list[str]] | None, a_ops: list[str] | None,
           b_ops: list[str] | None, sim_cache: dict[tuple[str, str], float] | None = None,
           use_c: bool = True) -> list[tuple[int | None, int | None]]:
    comps = components or {}
    ops_a = a_ops if a_ops is not None and len(a_ops) == len(a_cats) else None
    ops_b = b_ops if b_ops is not None and len(b_ops) == len(b_cats) else None
    m, n = len(a_cats), len(b_cats)
    if m == 0 or n == 0:
        return [(i, None) for i in range(m)] + [(None, j) for j in range(n)]
    if coarse(m, n):
        return _banded(a_cats, a_names, b_cats, b_names, comps, ops_a, ops_b)
    if sim_cache is None:
        sim_cache = {}
    if use_c and _table is not None:
        # the scores with numpy, the table in C (`_similarity.table`); the loop below is the
        # reference and the fallback (~2 µs a cell in Python)
        t = _table(_scores(a_cats, a_names, b_cats, b_names, comps, ops_a, ops_b, sim_cache), m, n, GAP)
        return _trace_back(m, n, lambda i, j: t[i * (n + 1) + j])

    def score(i: int, j: int) -> float:
        ca, cb = a_cats[i], b_cats[j]
        na, nb = a_names[i], b_names[j]
        if na == nb:
            return MATCH_NAME
        if ca == cb:
            if ops_a is not None and ops_b is not None and ops_a[i] and ops_b[j] and ops_a[i] != ops_b[j]:
                return OP_MISMATCH
            key = (na, nb)
            s = sim_cache.get(key)
            if s is None:
                s = sim_cache[key] = _similarity(na, nb)
            return MATCH_CATEGORY + 0.5 * s
        if cb in comps.get(ca, ()) or ca in comps.get(cb, ()):
            return MATCH_COMPONENT
        return MISMATCH

    # Python floats and lists, one row at a time: numpy's per-element access made this ~4x slower
    # (the same IEEE additions and comparisons, so the same table and the same pairs)
    prev = [GAP * j for j in range(n + 1)]
    T: list[bytearray] = [bytearray(n + 1)]  # per row: 0 diag, 1 up (gap in b), 2 left (gap in a)
    for i in range(1, m + 1):
        sc = [score(i - 1, j) for j in range(n)]
        row = [GAP * i] * (n + 1)
        t = bytearray(n + 1)
        left = row[0]
        for j in range(1, n + 1):
            d = prev[j - 1] + sc[j - 1]
            u = prev[j] + GAP
            l = left + GAP
            if d >= u and d >= l:
                left = d
            elif u >= l:
                left, t[j] = u, 1
            else:
                left, t[j] = l, 2
            row[j] = left
        T.append(t)
        prev = row
    return _trace_back(m, n, lambda i, j: T[i][j])


def _scores(a_cats, a_names, b_cats, b_names, comps, ops_a, ops_b, sim_cache: dict) -> np.ndarray:
    """The m x n matrix of `_align`'s pair scores, cell for cell what its `score` gives: the same
    name first, then the same category (GEMMs of different known operations apart; else the name
    similarity breaks ties), then a fused kernel against a component, else a mismatch."""
    names: dict = {}
    cats: dict = {}
    na, nb = _ids(a_names, names), _ids(b_names, names)
    ca, cb = _ids(a_cats, cats), _ids(b_cats, cats)
    by_id = list(cats)
    comp = np.array([[y in comps.get(x, ()) or x in comps.get(y, ()) for y in by_id] for x in by_id], bool)
    out = np.where(comp[ca[:, None], cb[None, :]], MATCH_COMPONENT, MISMATCH)
    same = (ca[:, None] == cb[None, :]) & (na[:, None] != nb[None, :])
    if ops_a is not None and ops_b is not None:
        ops: dict = {}
        oa = np.array([ops.setdefault(o, len(ops) + 1) if o else 0 for o in ops_a], np.int64)
        ob = np.array([ops.setdefault(o, len(ops) + 1) if o else 0 for o in ops_b], np.int64)
        other_op = same & (oa[:, None] > 0) & (ob[None, :] > 0) & (oa[:, None] != ob[None, :])
        out[other_op] = OP_MISMATCH
        same &= ~other_op
    ii, jj = np.nonzero(same)
    if len(ii):
        text = list(names)
        width = len(text)
        pairs, inv = np.unique(na[ii] * width + nb[jj], return_inverse=True)
        sim = np.empty(len(pairs))
        for k, (x, y) in enumerate(zip((pairs // width).tolist(), (pairs % width).tolist())):
            key = (text[x], text[y])
            v = sim_cache.get(key)
            if v is None:
                v = sim_cache[key] = _similarity(*key)
            sim[k] = v
        out[ii, jj] = MATCH_CATEGORY + 0.5 * sim[inv.reshape(-1)]
    out[na[:, None] == nb[None, :]] = MATCH_NAME
    return np.ascontiguousarray(out, dtype=np.float64)


def _trace_back(m: int, n: int, step) -> list[tuple[int | None, int | None]]:
    """The pairs from (m, n) back to (0, 0); step(i, j) for i, j > 0: 0 diagonal, 1 up, 2 left."""
    pairs: list[tuple[int | None, int | None]] = []
    i, j = m, n
    while i > 0 or j > 0:
        t = step(i, j) if i > 0 and j > 0 else (1 if j == 0 else 2)
        if t == 0:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif t == 1:
            pairs.append((i - 1, None))
            i -= 1
        else:
            pairs.append((None, j - 1))
            j -= 1
    pairs.reverse()
    return pairs


def coarse(m: int, n: int) -> bool:
    """Is a layer of m and n kernels aligned in a band, by category and name only?"""
    return m * n > MAX_CELLS


# the scores above, doubled into integers: the banded table adds them exactly
_Q = {"name": 8, "category": 5, "component": 2, "mismatch": -4, "op": -5, "gap": -2}
_NEG = -(1 << 60)


def _ids(values: list, table: dict) -> np.ndarray:
    return np.fromiter((table.setdefault(v, len(table)) for v in values), np.int64, len(values))


def _banded(a_cats, a_names, b_cats, b_names, comps, ops_a, ops_b) -> list[tuple[int | None, int | None]]:
    """The alignment restricted to a band of half-width w around the line from (0, 0) to (m, n);
    each row is computed with numpy: the best of diagonal and up, then the run of gaps to the
    left as a running maximum. Ties break as in `align` (diagonal, then up, then left)."""
    m, n = len(a_cats), len(b_cats)
    names, cats, ops = {}, {}, {"": 0}
    na, nb = _ids(a_names, names), _ids(b_names, names)
    ca, cb = _ids(a_cats, cats), _ids(b_cats, cats)
    oa = _ids(ops_a, ops) if ops_a is not None and ops_b is not None else np.zeros(m, np.int64)
    ob = _ids(ops_b, ops) if ops_a is not None and ops_b is not None else np.zeros(n, np.int64)
    by_id = list(cats)
    comp = np.array([[y in comps.get(x, ()) or x in comps.get(y, ()) for y in by_id] for x in by_id], bool)
    gap = _Q["gap"]
    w = max(BAND_MIN // 2, -(-n // m) + 1, BAND_CELLS // (2 * (m + 1)))
    centre = np.rint(np.arange(m + 1) * (n / m)).astype(np.int64)
    lo = np.clip(centre - w, 0, n)
    hi = np.clip(centre + w, 0, n)
    lo[0], hi[m] = 0, n
    offs = np.zeros(m + 2, np.int64)
    np.cumsum(hi - lo + 1, out=offs[1:])
    T = np.zeros(int(offs[-1]), np.int8)        # 0 diagonal, 1 up (gap in b), 2 left (gap in a)
    prev = gap * np.arange(int(hi[0]) + 1, dtype=np.int64)   # row 0: gaps only
    T[1:int(hi[0]) + 1] = 2
    for i in range(1, m + 1):
        l0, h0, l1, h1 = int(lo[i - 1]), int(hi[i - 1]), int(lo[i]), int(hi[i])
        js = np.arange(l1, h1 + 1)
        # up: (i-1, j) when j lies in the previous row's band
        up = np.full(len(js), _NEG, np.int64)
        a, b = max(l1, l0), min(h1, h0)
        if a <= b:
            up[a - l1:b - l1 + 1] = prev[a - l0:b - l0 + 1] + gap
        # diagonal: (i-1, j-1) + score(i-1, j-1), for j >= 1
        diag = np.full(len(js), _NEG, np.int64)
        a, b = max(l1, l0 + 1, 1), min(h1, h0 + 1)
        if a <= b:
            k = np.arange(a - 1, b)                  # the b-side kernel of each cell
            sc = np.where(nb[k] == na[i - 1], _Q["name"],
                          np.where(cb[k] == ca[i - 1],
                                   np.where((oa[i - 1] > 0) & (ob[k] > 0) & (ob[k] != oa[i - 1]), _Q["op"], _Q["category"]),
                                   np.where(comp[ca[i - 1], cb[k]], _Q["component"], _Q["mismatch"])))
            diag[a - l1:b - l1 + 1] = prev[a - 1 - l0:b - l0] + sc
        if l1 == 0:
            up[0] = gap * i                          # column 0: gaps only
            diag[0] = _NEG
        best = np.maximum(diag, up)
        steps = gap * np.arange(len(js), dtype=np.int64)
        row = np.maximum.accumulate(best - steps) + steps   # left runs of gaps
        left = np.full(len(js), _NEG, np.int64)
        left[1:] = row[:-1] + gap
        t = np.where((diag >= up) & (diag >= left), 0, np.where(up >= left, 1, 2)).astype(np.int8)
        if l1 == 0:
            t[0] = 1
        T[offs[i]:offs[i + 1]] = t
        prev = row
    return _trace_back(m, n, lambda i, j: int(T[offs[i] + j - lo[i]]))
