"""Flat tables of a pair of runs (ranks, collectives, stragglers), for CSV and `--table`, and the
JSON document of a run comparison: the representative ranks' comparison with the runs' findings."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

RUN_TABLES = ("ranks", "collectives", "stragglers")

RANK_FIELDS = ("rank", "file", "wall_us", "busy_us", "compute_us", "comm_us", "exposed_comm_us", "idle_us",
               "kernels", "gpu_time_us", "collectives", "world_size", "device", "tokens")
SIDE_FIELDS = ("count", "total_us", "transfer_us", "wait_us", "exposed_us", "mean_us", "algbw_gbps", "busbw_gbps",
               "pct_link_peak", "skew_p50_us", "skew_max_us", "algorithm", "dtype", "group", "bandwidth_note",
               "matched", "rejected", "unmatched", "clock_offset_us")
STRAGGLER_FIELDS = ("rank", "last", "collectives", "share", "late_us", "host_late_us", "compute_longer_us",
                    "peer_wait_us", "compute_before_us", "others_compute_before_us")


def run_document(cmp, found) -> dict[str, Any]:
    """The comparison's JSON with `ranks`, `collectives`, `stragglers` and `runs` added."""
    f = asdict(found)
    doc = cmp.to_dict()
    doc["ranks"] = f["ranks"]
    doc["collectives"] = f["collectives"]
    doc["stragglers"] = f["stragglers"]
    doc["runs"] = {k: f[k] for k in ("rank_source", "representative", "spread", "links", "matched_by", "notes",
                                   "pairing")}
    return doc


def _v(x):
    if x is None:
        return ""
    if isinstance(x, dict):   # per rank: "rank:value" pairs
        return " ".join(f"{k}:{_v(v)}" for k, v in x.items())
    return round(x, 3) if isinstance(x, float) else x


def run_table(found, name: str) -> tuple[list[str], list[list[Any]]]:
    if name == "ranks":
        head = ["run", *RANK_FIELDS]
        rows = [[side, *(_v(getattr(r, k)) for k in RANK_FIELDS)] for side in ("a", "b") for r in found.ranks[side]]
        return head, rows
    if name == "collectives":
        # a_<field>, b_<field> side by side, as every table of the export schema (docs/EXPORT_SCHEMA.md)
        head = ["kind", "bytes", "place", "layers"] + [f"{s}_{k}" for k in SIDE_FIELDS for s in ("a", "b")] + \
               ["ratio_a_over_b", "gap_us_a_minus_b"]
        rows = []
        for c in found.collectives:
            layers = sorted(set((c.a.layers if c.a else []) + (c.b.layers if c.b else [])))
            row = [c.kind, c.nbytes if c.nbytes >= 0 else "", c.place, " ".join(map(str, layers))]
            for k in SIDE_FIELDS:
                row += [_v(getattr(side, k)) if side is not None else "" for side in (c.a, c.b)]
            rows.append(row + [_v(c.ratio), _v(c.gap_us)])
        return head, rows
    if name == "stragglers":
        head = ["run", *STRAGGLER_FIELDS]
        rows = [[side, *(_v(getattr(s, k)) for k in STRAGGLER_FIELDS)]
                for side, s in found.stragglers.items() if s is not None]
        return head, rows
    raise KeyError(name)
