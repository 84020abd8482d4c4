"""Both traces in one Chrome-trace JSON for Perfetto's UI (ui.perfetto.dev) or chrome://tracing:
A and B as two processes, one track per stream plus a track of passes, B's passes lined up on A's
(`kerneldiff.core.compare.pass_pairs`), and each matched kernel pair joined by a flow arrow.

Flows are the "v2" kind: the two kernel slices carry the same `bind_id`, one `flow_out`, the other
`flow_in`, so each binds to its own slice whatever else starts at that instant. The arrow runs from
the pair's earlier kernel to the later one (A's on a tie): Perfetto's importer reads events in time
order and drops a flow whose end it meets before its start. Every kernel's args carry its layer,
pass and original start, and, when it is paired, the pair's ratio and gap (the aligned position's
means, as the layer view shows them) and its own duration against its partner's.

Every track nests: `pass_pairs` gives each pass pair a slot as long as the longer pass, and a kernel
that the profiler recorded starting before the previous kernel of its stream ended (CUPTI's clock
puts some a fraction of a µs early: up to 0.29 µs in the H100 Llama traces, 0.71 µs in the compiled
one) is drawn from that kernel's end, its duration unchanged; its args keep the recorded start
(`trace_ts`) and say by how much it was drawn later (`drawn_later_us`). Perfetto would otherwise
nest it inside its neighbour or drop it.
"""

from __future__ import annotations

from typing import Any, BinaryIO, Iterator

import numpy as np

from kerneldiff.core.names.display import short_name
from kerneldiff.core.compare.pass_pairs import PassPairs, SideKernels
from kerneldiff.core.numbers import strict_json

PIDS = {"a": 1, "b": 2}
PASS_TID = 0              # the passes' track; streams get 1, 2, … in order of their ids


def _r(x: float) -> float:
    return round(float(x), 3)    # ns resolution: what the traces record


def _process_name(side: SideKernels) -> str:
    gpu = side.gpu.strip()
    # a label may carry its side already ("A: trace_0.json.gz" when both files share a name)
    prefix = "" if side.label.startswith(f"{side.key.upper()}: ") else f"{side.key.upper()}: "
    return f"{prefix}{side.label}" + (f" ({gpu})" if gpu and gpu != side.label else "")


def _tids(side: SideKernels) -> dict[int, int]:
    return {s: i + 1 for i, s in enumerate(sorted(set(side.stream.tolist())))}


def _ns(x) -> np.ndarray:
    return np.rint(np.asarray(x, dtype=np.float64) * 1000.0).astype(np.int64)


def drawn_starts(ts_ns: np.ndarray, dur_ns: np.ndarray, track: np.ndarray) -> np.ndarray:
    """Each slice's start (ns) as drawn: its own, or the end of the slice before it on its track when
    that ends later, so the slices of one track never partly overlap."""
    out = ts_ns.copy()
    order = np.lexsort((ts_ns, track))
    prev_track, reach = None, 0
    for i, t, d, k in zip(order.tolist(), ts_ns[order].tolist(), dur_ns[order].tolist(), track[order].tolist()):
        if k != prev_track:
            prev_track, reach = k, t
        start = max(t, reach)
        out[i] = start
        reach = start + d
    return out


def trace_events(pp: PassPairs) -> Iterator[dict[str, Any]]:
    """The document's events, one at a time (a file of millions is written without holding them)."""
    shorts: dict[str, str] = {}      # short_name per distinct name (a few hundred among 100,000 kernels)

    def short(name: str) -> str:
        s = shorts.get(name)
        if s is None:
            s = shorts[name] = short_name(name, 80)
        return s

    drawn = {}
    for side in (pp.a, pp.b):
        t, d = _ns(side.ts), _ns(side.dur)
        drawn[side.key] = (drawn_starts(t, d, side.stream), t, d)
    partner: dict[tuple[str, int], tuple[int, Any]] = {}
    for m_id, m in enumerate(pp.matches, 1):
        partner[("a", m.a)] = (m_id, m)
        partner[("b", m.b)] = (m_id, m)
    for side, other in ((pp.a, pp.b), (pp.b, pp.a)):
        pid = PIDS[side.key]
        tids = _tids(side)
        yield {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": _process_name(side)}}
        yield {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}}
        yield {"ph": "M", "pid": pid, "tid": PASS_TID, "name": "thread_name", "args": {"name": "passes"}}
        yield {"ph": "M", "pid": pid, "tid": PASS_TID, "name": "thread_sort_index", "args": {"sort_index": 0}}
        for stream, tid in tids.items():
            yield {"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": f"stream {stream}"}}
            yield {"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}}
        p_t = _ns([p.start_us + p.shift_us for p in side.passes])
        p_d = _ns([p.span_us for p in side.passes])
        p_at = drawn_starts(p_t, p_d, np.zeros(len(p_t), dtype=np.int64)).tolist()
        for p, at, d in zip(side.passes, p_at, p_d.tolist()):
            yield {"ph": "X", "pid": pid, "tid": PASS_TID, "ts": at / 1000, "dur": d / 1000,
                   "name": f"pass {p.number} ({p.phase})", "cat": "pass",
                   "args": {"pass": p.number, "step": p.name, "phase": p.phase, "shift_us": _r(p.shift_us)}}
        at_ns, ts_ns, dur_ns = drawn[side.key]
        at_l, late = at_ns.tolist(), (at_ns - ts_ns).tolist()
        ts, dur, stream, layer, pass_of = (side.ts.tolist(), dur_ns.tolist(), side.stream.tolist(),
                                          side.layer.tolist(), side.pass_of.tolist())
        shifts = [p.shift_us for p in side.passes]
        numbers = [p.number for p in side.passes]
        for i in range(len(side)):
            args: dict[str, Any] = {"layer": layer[i],
                                    "pass": numbers[pass_of[i]] if pass_of[i] >= 0 else None}
            if pass_of[i] >= 0:
                args["trace_ts"] = _r(ts[i] - shifts[pass_of[i]])
            if late[i]:
                args["drawn_later_us"] = late[i] / 1000
            event = {"ph": "X", "pid": pid, "tid": tids[stream[i]], "ts": at_l[i] / 1000, "dur": dur[i] / 1000,
                     "name": side.names[i], "cat": side.categories[i], "args": args}
            hit = partner.get((side.key, i))
            if hit is not None:
                m_id, m = hit
                j = m.b if side.key == "a" else m.a
                args.update({"pair": m_id, "paired_with": short(other.names[j]), "pair_position": m.position,
                             "pair_ratio_a_over_b": None if m.ratio is None else round(m.ratio, 4),
                             "pair_gap_us_a_minus_b": _r(m.gap_us),
                             "this_us_vs_partner_us": f"{side.dur[i]:.3f} vs {float(other.dur[j]):.3f}"})
                a_first = drawn["a"][0][m.a] <= drawn["b"][0][m.b]
                event["bind_id"] = m_id
                event["flow_out" if a_first == (side.key == "a") else "flow_in"] = True
            yield event


def other_data(pp: PassPairs) -> dict[str, Any]:
    return {"kerneldiff": "two traces aligned pass by pass", "phase": pp.phase, "passes": pp.numbers or "all",
            "a": _process_name(pp.a), "b": _process_name(pp.b), "kernel_pairs": len(pp.matches),
            "layer_passes_unpaired": pp.unpaired_groups}


def perfetto_trace(pp: PassPairs) -> dict[str, Any]:
    """The Chrome-trace document (a dict for json.dumps) of a PassPairs."""
    return {"traceEvents": list(trace_events(pp)), "displayTimeUnit": "ms", "otherData": other_data(pp)}


def write_perfetto(pp: PassPairs, out: BinaryIO, extra=None) -> None:
    """The document as strict JSON (ASCII, as `strict_json` writes it) into a binary file, an event
    at a time: memory stays that of the kernels' columns, not of a dict per kernel. `extra`: more
    tracks on the same axis (`run_report.RankCollectives`: every rank's collectives), with events()
    and other_data()."""
    from itertools import chain

    out.write(b'{"traceEvents":[')
    for i, e in enumerate(chain(trace_events(pp), extra.events() if extra is not None else ())):
        if i:
            out.write(b",")
        out.write(strict_json(e, indent=None).encode("ascii"))
    other = other_data(pp)
    if extra is not None:
        other.update(extra.other_data())
    out.write(b'],"displayTimeUnit":"ms","otherData":' + strict_json(other, indent=None).encode("ascii") + b"}")


def read_back(doc: dict[str, Any]) -> dict[str, tuple[int, float]]:
    """Each side's kernel count and summed duration in a document perfetto_trace wrote (process name
    -> (kernels, µs)): what a test compares with the originals."""
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("ph") == "M" and e["name"] == "process_name"}
    out = {n: (0, 0.0) for n in names.values()}
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e["tid"] != PASS_TID:
            n, t = out[names[e["pid"]]]
            out[names[e["pid"]]] = (n + 1, t + e["dur"])
    return out
