"""Global alignment of two kernel sequences (one layer each), fusion-aware.

Needleman–Wunsch over (category, name) with a linear gap cost. A kernel that one side fused away
becomes a gap instead of shifting every later pair. The table is O(m·n) but only for one layer
(tens to a few hundred kernels); past `MAX_CELLS` the search is restricted to a diagonal band,
so memory stays bounded whatever the input.
"""

from __future__ import annotations

from difflib import SequenceMatcher

import numpy as np

MATCH_NAME = 4.0        # identical kernel names
MATCH_CATEGORY = 2.5    # same category (name similarity adds up to +0.5 as a tie-break)
MATCH_COMPONENT = 1.0   # a fused kernel against one of its components
MISMATCH = -2.0         # different categories: prefer two gaps over one wrong pair
OP_MISMATCH = -2.5      # GEMMs of different operations (a batched attention GEMM against a projection): gaps
GAP = -1.0
MAX_CELLS = 4_000_000   # ~4M cells × 9 bytes: beyond this, band the search
BAND_MIN = 64


def _similarity(a: str, b: str) -> float:
    if a == b:
        return 1.0
    return SequenceMatcher(None, a[:96], b[:96], autojunk=False).ratio()


def align(a_cats: list[str], a_names: list[str], b_cats: list[str], b_names: list[str],
          components: dict[str, list[str]] | None = None, a_ops: list[str] | None = None,
          b_ops: list[str] | None = None) -> list[tuple[int | None, int | None]]:
    """Pairs of indices (i into a, j into b); None marks a gap. `a_ops`/`b_ops`: an operation key per
    kernel ("" when unknown); two kernels of one category whose keys are known and differ are not
    paired (op_fusion.gemm_op_keys: aten::bmm of a decomposed attention is not aten::mm's projection)."""
    comps = components or {}
    ops_a = a_ops if a_ops is not None and len(a_ops) == len(a_cats) else None
    ops_b = b_ops if b_ops is not None and len(b_ops) == len(b_cats) else None
    m, n = len(a_cats), len(b_cats)
    if m == 0 or n == 0:
        return [(i, None) for i in range(m)] + [(None, j) for j in range(n)]
    band = None
    if m * n > MAX_CELLS:
        band = max(BAND_MIN, abs(m - n) + BAND_MIN, MAX_CELLS // max(m, n) // 2)
    sim_cache: dict[tuple[str, str], float] = {}

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

    neg = -1e18
    H = np.full((m + 1, n + 1), neg)
    T = np.zeros((m + 1, n + 1), dtype=np.int8)  # 0 diag, 1 up (gap in b), 2 left (gap in a)
    H[0, :] = GAP * np.arange(n + 1)
    H[:, 0] = GAP * np.arange(m + 1)
    T[0, 1:] = 2
    T[1:, 0] = 1
    for i in range(1, m + 1):
        if band is None:
            lo, hi = 1, n
        else:
            c = round(i * n / m)
            lo, hi = max(1, c - band), min(n, c + band)
        row_prev = H[i - 1]
        row = H[i]
        for j in range(lo, hi + 1):
            d = row_prev[j - 1] + score(i - 1, j - 1)
            u = row_prev[j] + GAP
            l = row[j - 1] + GAP
            if d >= u and d >= l:
                row[j], T[i, j] = d, 0
            elif u >= l:
                row[j], T[i, j] = u, 1
            else:
                row[j], T[i, j] = l, 2
    pairs: list[tuple[int | None, int | None]] = []
    i, j = m, n
    while i > 0 or j > 0:
        t = T[i, j] if i > 0 and j > 0 else (1 if j == 0 else 2)
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
