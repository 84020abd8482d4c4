"""Every track of the Perfetto file nests: on each (process, thread) two slices either nest or are
disjoint. Each pass pair gets a slot as long as the longer pass, so the slower side's passes never
overlap each other and a pass's kernels never share a stream track's time with another pass's; a
kernel the profiler recorded starting before the previous one on its stream ended is drawn from that
one's end, by no more than the trace's own overlap (recomputed here from the raw JSON events)."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.report.perfetto import PASS_TID, drawn_starts, perfetto_trace
from kerneldiff.core.session import Session

from conftest import real_trace


def _ns(x: float) -> int:
    return round(x * 1000)


def improper(doc) -> list[tuple]:
    """(track, slice, enclosing slice) for each slice that starts inside another of its track and
    ends after it (integer ns, as the file records them)."""
    tracks = defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("ph") == "X":
            tracks[(e["pid"], e["tid"])].append((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])))
    bad = []
    for key, slices in tracks.items():
        slices.sort(key=lambda s: (s[0], -s[1]))
        open_ends: list[int] = []
        for s, e in slices:
            while open_ends and open_ends[-1] <= s:
                open_ends.pop()
            if open_ends and e > open_ends[-1]:
                bad.append((key, (s, e), open_ends[-1]))
            open_ends.append(e)
    return bad


def raw_stream_overlap_us(path) -> float:
    """The largest amount by which a kernel/memcpy/memset of the raw trace starts before the previous
    one on its stream ended."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    by = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            by[(e["pid"], e["tid"])].append((float(e["ts"]), float(e["dur"])))
    worst = 0.0
    for v in by.values():
        v.sort()
        reach = -np.inf
        for t, d in v:
            worst = max(worst, reach - t)
            reach = max(reach, t + d)
    return worst


def _passes(doc, pid):
    return sorted((e["ts"], e["dur"], e["args"]["pass"]) for e in doc["traceEvents"]
                  if e.get("ph") == "X" and e["pid"] == pid and e["tid"] == PASS_TID)


def _check_slots(doc):
    """Both sides' passes of one number start together, and the next pass starts after the longer."""
    a, b = ({n: (t, d) for t, d, n in _passes(doc, pid)} for pid in (1, 2))
    numbers = sorted(set(a) | set(b))
    for n, m in zip(numbers, numbers[1:]):
        if n in a and n in b:
            assert a[n][0] == pytest.approx(b[n][0], abs=1e-3)
        end = max(_ns(t) + _ns(d) for t, d in (a.get(n), b.get(n)) if t is not None)
        nxt = min(_ns(s[0]) for s in (a.get(m), b.get(m)) if s is not None)
        assert nxt >= end, (n, m)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 500), st.integers(0, 2)), max_size=60))
def test_drawn_starts_never_overlap_and_move_only_as_much_as_needed(slices):
    ts = np.array([s[0] for s in slices], dtype=np.int64)
    dur = np.array([s[1] for s in slices], dtype=np.int64)
    track = np.array([s[2] for s in slices], dtype=np.int64)
    at = drawn_starts(ts, dur, track)
    assert (at >= ts).all()
    for k in set(track.tolist()):
        idx = np.flatnonzero(track == k)
        order = idx[np.lexsort((ts[idx],))]
        reach = None
        for i in order:
            # drawn from its own start, or from the previous slice's drawn end when that is later
            assert at[i] == (ts[i] if reach is None else max(ts[i], reach))
            reach = at[i] + dur[i]


def test_demo_pair_nests_on_every_track():
    session = Session([str(DEMO_A), str(DEMO_B)], use_cache=False)
    session.load_all()
    for pp in (session.pass_pairs(session.compare()), session.pass_pairs(session.compare(), [2, 3])):
        doc = perfetto_trace(pp)
        assert improper(doc) == []
        _check_slots(doc)


@pytest.mark.slow
@pytest.mark.parametrize("swap", [False, True])
def test_eager_against_compiled_nests_on_every_track(swap):
    """The slower side (eager, 3× compiled's time per decode pass) used to run into its own next pass
    on the passes track (47 of 48) and into another pass's kernels on the stream track (by up to
    45.7 µs). Now: no track has a slice that partly overlaps another, in either order of the pair, and
    no kernel is drawn later than the raw trace's own largest overlap on a stream."""
    paths = [real_trace("h100_llama_eager_sdpa.json.gz"), real_trace("h100_llama_compiled.json.gz")]
    if swap:
        paths.reverse()
    session = Session([str(p) for p in paths], use_cache=False)
    session.load_all()
    cmp = session.compare()
    doc = perfetto_trace(session.pass_pairs(cmp))
    assert improper(doc) == []
    _check_slots(doc)
    assert len(_passes(doc, 1)) == len(_passes(doc, 2)) == 48
    own = {pid: raw_stream_overlap_us(p) for pid, p in zip((1, 2), paths)}
    late = defaultdict(float)
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e["tid"] != PASS_TID:
            late[e["pid"]] = max(late[e["pid"]], e["args"].get("drawn_later_us", 0.0))
    for pid in (1, 2):
        assert 0 < own[pid] < 1.0
        assert late[pid] <= own[pid] + 1e-3
    # a drawn pass keeps its kernels' offsets from the pass start (but for those drawn later)
    starts = {(e["pid"], e["args"]["pass"]): e["ts"] for e in doc["traceEvents"]
              if e.get("ph") == "X" and e["tid"] == PASS_TID}
    first = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e["tid"] != PASS_TID and e["args"]["pass"] is not None:
            key = (e["pid"], e["args"]["pass"])
            first[key] = min(first.get(key, np.inf), e["ts"])
    assert all(first[k] == pytest.approx(starts[k], abs=1e-3) for k in starts)
