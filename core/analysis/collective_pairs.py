"""True collective pairs across the ranks of a run.

A collective on one rank is the same collective on another only when both say so: the same kind,
compatible sizes, and intervals that overlap and END TOGETHER. Ends are the test because a
collective cannot finish on any rank before the last rank has arrived: the ranks leave it within a
step of the algorithm of each other (one ring step of a large all-gather is hundreds of µs), while
they may enter it tens of milliseconds apart.

Candidates come from what the traces record: per process group (`Process Group Name`) and kind,
where recorded, else per kind; within that, by sequence number where every rank records one, else
by order. Sampled or cut traces start their windows at different collectives, so the order is tried
at every window offset and the offset with the most validated pairs wins (ties: the clocks taken
as shared, then the smallest offset; the nearest clock under which half the pairs validate wins
over farther ones, since a train of alike collectives also validates one period off); that offset
gives the clock, on which the pairs are then
taken by their end times, one to one (a collective missing inside a window shifts the order after
it, not the ends). Each rank is aligned against the group's reference rank (the
one with the most collectives there; ties by content, so the result does not depend on the order
the ranks are given in). An instance is kept only when every member of its group validated it.

Per rank: how many of its collectives were matched, rejected (paired by the order but failing the
test) or unmatched (no partner in the other ranks' windows), and its clock offset: the median of
its end times less the reference rank's over the validated instances they share (ranks traced on
different hosts; within END_FLOOR_US it is indistinguishable from the algorithm's own end spread and
is not applied).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# two ranks leave a collective within this of each other: the clocks' and the trace's rounding
# (whole µs) plus the algorithm's last step, a fraction of the transfer (a ring of n ranks ends
# within 1/n of it; 5 % covers rings of 20 and more and the last steps of trees)
END_FLOOR_US = 20.0
END_FRACTION = 0.05
# all-to-all (alltoallv) and send/recv move uneven splits: their sizes differ between the ranks
UNEVEN = frozenset({"all_to_all", "send_recv"})
UNEVEN_RATIO = 4.0
MAX_WINDOW_OFFSET = 256     # window offsets tried either way (sampled windows differ by a few)


def end_tolerance(dur_a, dur_b):
    return END_FLOOR_US + END_FRACTION * np.minimum(dur_a, dur_b)


@dataclass
class _Seq:
    """One rank's collectives of one group key, in order (arrays for the offset search)."""

    idx: np.ndarray          # entry indexes into the rank's RankCollectives
    kind: np.ndarray         # object array of kinds
    nbytes: np.ndarray
    dtype: np.ndarray        # object array, lower-cased
    seq: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def __len__(self) -> int:
        return len(self.idx)


def _compatible(a: _Seq, i: np.ndarray, b: _Seq, j: np.ndarray) -> np.ndarray:
    same = a.kind[i] == b.kind[j]
    na, nb = a.nbytes[i], b.nbytes[j]
    unknown = (na < 0) | (nb < 0)
    lo, hi = np.minimum(na, nb), np.maximum(na, nb)
    uneven = np.array([k in UNEVEN for k in a.kind[i]], dtype=bool) if len(i) else np.zeros(0, bool)
    sizes = unknown | (na == nb) | (uneven & (lo > 0) & (hi <= UNEVEN_RATIO * np.maximum(lo, 1)))
    da, db = a.dtype[i], b.dtype[j]
    dtypes = (da == "") | (db == "") | (da == db)
    return same & sizes & dtypes


def _validate(a: _Seq, i: np.ndarray, b: _Seq, j: np.ndarray, clock: float, compat: np.ndarray) -> np.ndarray:
    """Pairs (a[i], b[j]) that are the same collective, b's clock `clock` µs ahead of a's."""
    sa, ea = a.start[i], a.end[i]
    sb, eb = b.start[j] - clock, b.end[j] - clock
    ends = np.abs(eb - ea) <= end_tolerance(ea - sa, eb - sb)
    overlap = np.maximum(sa, sb) <= np.minimum(ea, eb)
    return compat & ends & overlap


@dataclass
class _Alignment:
    pairs: dict[int, tuple[int, bool]] = field(default_factory=dict)   # ref position -> (position, valid)
    clock: float = 0.0
    how: str = "order"                                                 # "seq" | "order"


def _candidates(ref: _Seq, other: _Seq) -> tuple[list[tuple[np.ndarray, np.ndarray, int]], str]:
    """Candidate pairings (reference positions, other positions, window offset): by sequence
    number where both record them all (one), else by order at every window offset."""
    if (ref.seq >= 0).all() and (other.seq >= 0).all():
        # (seq, n-th kernel of that seq): one operator may launch several kernels
        def keyed(s: _Seq) -> dict[tuple[int, int], int]:
            out, seen = {}, {}
            for p, q in enumerate(s.seq.tolist()):
                n = seen.get(q, 0)
                seen[q] = n + 1
                out[(q, n)] = p
            return out

        kr, ko = keyed(ref), keyed(other)
        common = sorted(set(kr) & set(ko))
        i = np.array([kr[k] for k in common], dtype=np.int64)
        j = np.array([ko[k] for k in common], dtype=np.int64)
        return [(i, j, 0)], "seq"
    lim = min(MAX_WINDOW_OFFSET, max(len(ref), len(other)))
    out = []
    # nearest offsets first: the loops over them stop once no farther offset can pair more
    for d in sorted(range(-min(lim, len(ref) - 1), min(lim, len(other) - 1) + 1), key=lambda x: (abs(x), x)):
        lo, hi = max(0, -d), min(len(ref), len(other) - d)
        if hi > lo:
            i = np.arange(lo, hi, dtype=np.int64)
            out.append((i, i + d, d))
    return out, "order"





def _clock_candidates(ref: _Seq, other: _Seq) -> list[tuple[int, float]]:
    """(validated pairs, clock) of each window offset's own clock: the median end difference of
    its compatible pairs, refined on the pairs it validates."""
    out = []
    for i, j, _ in _candidates(ref, other)[0]:
        compat = _compatible(ref, i, other, j)
        if not compat.any():
            continue
        c = _densest(other.end[j[compat]] - ref.end[i[compat]], float(np.median(ref.end[i] - ref.start[i])))
        ok = _validate(ref, i, other, j, c, compat)
        if ok.any():
            c = float(np.median(other.end[j[ok]] - ref.end[i[ok]]))
            out.append((int(_validate(ref, i, other, j, c, compat).sum()), c))
    return out


def _densest(diffs: np.ndarray, dur: float) -> float:
    """The clock most of these end differences agree on: the median of the largest set of them
    within one end tolerance of each other (a window missing a collective mis-pairs the rest)."""
    d = np.sort(diffs)
    hi = np.searchsorted(d, d + end_tolerance(dur, dur), side="right")
    k = int(np.argmax(hi - np.arange(len(d))))
    return float(np.median(d[k:hi[k]]))


def _best_count(ref: _Seq, other: _Seq, clock: float) -> int:
    """The most pairs that validate on `clock`: at the best window offset by order, or (unkeyed)
    by ends, as `_align` will take them: a collective missing inside a window shifts the order
    after it, so counting by order alone favours a clock one period off (ties then go to it)."""
    cands, how = _candidates(ref, other)
    best = 0 if how == "seq" else len(_by_ends(ref, other, clock))
    room = _room(cands)
    for k, (i, j, _) in enumerate(cands):
        if room[k] <= best:
            break
        best = max(best, int(_validate(ref, i, other, j, clock, _compatible(ref, i, other, j)).sum()))
    return best


def _room(cands: list) -> np.ndarray:
    """For each candidate, the most pairs it or any after it could hold (to stop early)."""
    n = np.array([len(c[0]) for c in cands], dtype=np.int64)
    return np.maximum.accumulate(n[::-1])[::-1] if len(n) else n


CLOCK_TRIES = 8
PAIRWISE_LIMIT = 200_000    # end differences of every pair tried below this many (a few hundred a side)


def _pairwise_clocks(ref: _Seq, other: _Seq) -> list[tuple[int, float]]:
    """(pairs, clock) of the clocks most end differences of ANY two entries agree on: a window
    offset's order pairs entries across a missing one, so in a train of alike collectives the
    true clock may be no offset's own (each mixes it with one a period off)."""
    if len(ref) * len(other) > PAIRWISE_LIMIT:
        return []
    d = np.sort((other.end[None, :] - ref.end[:, None]).ravel())
    dur = float(np.median(ref.end - ref.start))
    hi = np.searchsorted(d, d + end_tolerance(dur, dur), side="right")
    n = hi - np.arange(len(d))
    out: list[tuple[int, float]] = []
    for i in np.argsort(-n, kind="stable")[:4096].tolist():
        c = float(np.median(d[i:hi[i]]))
        if all(abs(c - x) > END_FLOOR_US for _, x in out):
            out.append((int(n[i]), c))
            if len(out) >= CLOCK_TRIES:
                break
    return out


def estimate_clock(groups: list[tuple[_Seq, _Seq]]) -> float:
    """One rank's clock against the reference's, over every group both hold: the clock (0, or one
    a window offset suggests) under which the most pairs validate across all the groups together;
    ties: the shared clock, then the smaller offset; and the nearest clock under which half the
    pairs validate wins over farther ones. One group's single pair validates under its own clock, so
    no group decides alone."""
    # most pairs validating on the shared clock (ranks of one host): no other clock is tried
    shared = sum(_best_count(r, o, 0.0) for r, o in groups)
    possible = sum(min(len(r), len(o)) for r, o in groups)
    if shared and 2 * shared >= possible:
        return 0.0
    tries: list[tuple[int, float]] = []
    for ref, other in groups:
        if len(ref) and len(other):
            tries += _clock_candidates(ref, other) + _pairwise_clocks(ref, other)
    tries.sort(key=lambda t: (-t[0], abs(t[1])))
    clocks = [0.0]
    for _, c in tries:
        if all(abs(c - x) > END_FLOOR_US for x in clocks):
            clocks.append(c)
        if len(clocks) > CLOCK_TRIES:
            break
    scored = [(shared if c == 0.0 else sum(_best_count(r, o, c) for r, o in groups), c == 0.0, -abs(c), c)
              for c in clocks]
    # a train of alike collectives validates as well one period off: the nearest clock under which
    # half the pairs validate (the rule the shared clock follows) wins over one farther that
    # validates a few more
    half = [x for x in scored if x[0] and 2 * x[0] >= possible]
    return min(half, key=lambda x: abs(x[3]))[3] if half else max(scored)[3]


def _align(ref: _Seq, other: _Seq, clock: float | None = None) -> _Alignment:
    """The other rank's entries paired with the reference's, its clock `clock` µs ahead (None: the
    best of the shared clock and the one each window offset suggests): by sequence number where
    both record them all, else at the window offset with the most validated pairs, then by ends."""
    if len(ref) == 0 or len(other) == 0:
        return _Alignment()
    candidates, how = _candidates(ref, other)
    room = _room(candidates)
    best = None
    for k, (i, j, d) in enumerate(candidates):
        if best is not None and room[k] < best[0][0]:
            break   # no farther offset can validate as many (ties go to the nearer offset anyway)
        compat = _compatible(ref, i, other, j)
        clocks = [0.0] if clock is None else [clock]
        if clock is None and compat.any():
            c = _densest(other.end[j[compat]] - ref.end[i[compat]], float(np.median(ref.end[i] - ref.start[i])))
            if abs(c) > END_FLOOR_US:
                clocks.append(c)
        for c in clocks:
            ok = _validate(ref, i, other, j, c, compat)
            if clock is None and c != 0.0 and ok.any():   # the clock from the validated pairs alone, then once more
                c = float(np.median(other.end[j[ok]] - ref.end[i[ok]]))
                ok = _validate(ref, i, other, j, c, compat)
            score = (int(ok.sum()), c == 0.0, -abs(d))
            if best is None or score > best[0]:
                best = (score, i, j, ok, c)
    if best is None:
        return _Alignment(how=how)
    _, i, j, ok, c = best
    if how == "seq":
        return _Alignment({int(p): (int(q), bool(v)) for p, q, v in zip(i.tolist(), j.tolist(), ok.tolist())}, c, how)
    # the offset gave the clock; entries missing inside a window (sampled traces) shift the order
    # after them, so the pairs are then taken by their ends on that clock, one to one
    timed = _by_ends(ref, other, c)
    taken = set(timed.values())
    pairs = {p: (q, True) for p, q in timed.items()}
    for p, q, v in zip(i.tolist(), j.tolist(), ok.tolist()):
        if p not in pairs and q not in taken:      # paired by the order, not the same collective
            pairs[p] = (q, False)
    return _Alignment(pairs, c, how)


def _by_ends(ref: _Seq, other: _Seq, clock: float) -> dict[int, int]:
    """Validated pairs by end time on `clock`: each reference entry with the other's entry ending
    nearest to it, before or after, where that pair validates; one to one (nearer pairs first)."""
    if len(ref) == 0 or len(other) == 0:
        return {}
    order = np.argsort(other.end, kind="stable")
    ends = other.end[order] - clock
    pos = np.searchsorted(ends, ref.end)
    p = np.arange(len(ref), dtype=np.int64)
    best_q = np.full(len(ref), -1, np.int64)
    best_d = np.full(len(ref), np.inf)
    for near in (np.minimum(pos, len(ends) - 1), np.maximum(pos - 1, 0)):
        q = order[near]
        ok = _validate(ref, p, other, q, clock, _compatible(ref, p, other, q))
        d = np.abs(other.end[q] - clock - ref.end)
        better = ok & (d < best_d)
        best_q[better], best_d[better] = q[better], d[better]
    has = np.flatnonzero(best_q >= 0)
    by = has[np.argsort(best_d[has], kind="stable")]
    _, first = np.unique(best_q[by], return_index=True)    # each of the other's entries once: the nearest
    keep = by[np.sort(first)]
    return {int(x): int(best_q[x]) for x in keep.tolist()}


@dataclass
class Pairing:
    """What the pairing found, beyond the instances: per rank index, its entries' fate."""

    matched: dict[int, int] = field(default_factory=dict)
    rejected: dict[int, int] = field(default_factory=dict)
    unmatched: dict[int, int] = field(default_factory=dict)
    # (kind, nbytes, place) of each rank's own entry -> {rank index: n}
    rejected_by_key: dict[tuple[str, int, str], dict[int, int]] = field(default_factory=dict)
    unmatched_by_key: dict[tuple[str, int, str], dict[int, int]] = field(default_factory=dict)
    clock_offset_us: dict[int, float | None] = field(default_factory=dict)   # against the reference rank
    clock_reference: int = 0    # rank index the offsets are measured against


def seq_of(rc, entries: list[int]) -> _Seq:
    e = np.asarray(entries, dtype=np.int64)
    start = np.asarray(rc.start_us, float)[e] if len(e) else np.zeros(0)
    dur = np.asarray(rc.dur_us, float)[e] if len(e) else np.zeros(0)
    seq = np.asarray(rc.seq if rc.seq else [-1] * len(rc), np.int64)[e] if len(e) else np.zeros(0, np.int64)
    return _Seq(e, np.array([rc.kind[x] for x in entries], dtype=object),
                np.asarray([rc.nbytes[x] for x in entries], dtype=np.int64),
                np.array([(rc.dtype[x] or "").lower() for x in entries], dtype=object), seq, start, start + dur)


def pair_group(ranks: list, members: list[int], entries: dict[int, list[int]], pairing: Pairing,
               priority: dict[int, tuple], clocks: dict[int, float | None]) -> list[tuple[list[int], list[int], bool]]:
    """The validated instances of one group key: (member rank indexes, their entry indexes, by seq).
    `entries`: each member's entries of this key, in order (a member without any is absent);
    `priority`: the run's order of reference (the group's reference is its first member in it);
    `clocks`: each rank's clock against the run's reference, where estimated (else per group).
    Counts each entry's fate in `pairing`."""
    seqs = {r: seq_of(ranks[r], entries.get(r, [])) for r in members}

    ref = min(members, key=lambda r: priority[r])
    others = [r for r in members if r != ref]
    if not others:   # one rank: each collective is its own instance (nobody to pair or wait for)
        pairing.matched[ref] = pairing.matched.get(ref, 0) + len(seqs[ref])
        return [([ref], [int(e)], bool(q >= 0)) for e, q in zip(seqs[ref].idx.tolist(), seqs[ref].seq.tolist())]
    def rel(r):
        a, b = clocks.get(r), clocks.get(ref)
        return a - b if a is not None and b is not None else None

    aligned = {r: _align(seqs[ref], seqs[r], rel(r)) for r in others}
    out = []
    fate: dict[tuple[int, int], str] = {}
    for p in range(len(seqs[ref])):
        got = {r: aligned[r].pairs.get(p) for r in others}
        if others and all(g is not None and g[1] for g in got.values()):
            ms = [ref] + others
            idx = [int(seqs[ref].idx[p])] + [int(seqs[r].idx[got[r][0]]) for r in others]
            order = np.argsort(ms)
            out.append(([ms[k] for k in order], [idx[k] for k in order], all(aligned[r].how == "seq" for r in others)))
            continue
        bad = any(g is not None and not g[1] for g in got.values())
        fate[(ref, p)] = "rejected" if bad else "unmatched"
        for r, g in got.items():
            if g is not None:
                fate[(r, g[0])] = "rejected" if bad else "unmatched"
    used = {(r, q) for r in others for q in (v[0] for v in aligned[r].pairs.values())}
    for r in members:
        rc = ranks[r]
        for q, e in enumerate(seqs[r].idx.tolist()):
            f = fate.get((r, q))
            if f is None and r != ref and (r, q) not in used:
                f = "unmatched"
            if f is None:
                pairing.matched[r] = pairing.matched.get(r, 0) + 1
                continue
            key = (rc.kind[e], rc.nbytes[e], rc.place(e))
            counts, by_key = (pairing.rejected, pairing.rejected_by_key) if f == "rejected" else \
                (pairing.unmatched, pairing.unmatched_by_key)
            counts[r] = counts.get(r, 0) + 1
            d = by_key.setdefault(key, {})
            d[r] = d.get(r, 0) + 1
    return out


def clock_offsets(ranks: list, instances: list[tuple[list[int], list[int], bool]], n: int,
                  reference: int) -> dict[int, float | None]:
    """Each rank's clock against `reference`'s: the median of its end times less the reference's
    over the validated instances both took part in (None: it shares none with the reference)."""
    diffs: dict[int, list[float]] = {}
    for members, idx, _ in instances:
        if reference not in members:
            continue
        rc0, e0 = ranks[reference], idx[members.index(reference)]
        end0 = rc0.start_us[e0] + rc0.dur_us[e0]
        for r, e in zip(members, idx):
            diffs.setdefault(r, []).append(ranks[r].start_us[e] + ranks[r].dur_us[e] - end0)
    return {r: (float(np.median(diffs[r])) if r in diffs else None) for r in range(n)}
