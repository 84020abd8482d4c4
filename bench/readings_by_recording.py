"""Readings of every real trace, original against each poorer recording of it.

    python bench/readings_by_recording.py [TRACE ...]        (default: every trace in ../shared/traces
                                                             and tests/data/recorded)

Each trace is re-written without Python stacks, shapes, runtime events or CPU ops (the cuts of
../shared/tools/strip_recording.py) and read again: passes, layers, kernels measured inside the
passes (pass_extent), and the per-pass ratio of the variant's median pass span and kernel time per
pass against the original's (1.00 = the same reading). Prints a Markdown table.
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "functional"))
sys.path.insert(0, str(ROOT / "tests"))

from test_recording_options import FEATURES, strip  # noqa: E402

from kerneldiff.core.analysis.cut_work import compared_mask  # noqa: E402
from kerneldiff.core.analysis.pass_extent import in_pass_mask  # noqa: E402
from kerneldiff.core.analysis.timeline import timeline  # noqa: E402
from kerneldiff.core.orchestration import load  # noqa: E402


def reading(path: Path) -> dict:
    m = load(path, use_cache=False, workers=0)
    k = m.kernels
    sel = compared_mask(m, "all")
    inp = sel & in_pass_mask(m)
    n = max(len(set(k.step[inp].tolist())), 1)
    spans = [w.span_us for w in timeline(m, "all", keep_cut=False).passes]
    return {"passes": len(m.steps), "layers": m.num_layers, "in_pass": int(inp.sum()),
            "kernel_per_pass": float(k.dur[inp].sum()) / n, "median_span": float(np.median(spans)) if spans else 0.0}


def main(paths: list[Path]) -> None:
    print("| trace | recording | passes | layers | kernels in passes | kernel µs / pass (× orig) | median pass span (× orig) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for p in paths:
            with gzip.open(p, "rt", encoding="utf-8") as f:
                doc = json.load(f)
            o = reading(p)
            rows = [("original", o)]
            for feat in FEATURES:
                out = Path(tmp) / "v.json"
                out.write_text(json.dumps(strip(doc, feat)))
                rows.append((f"no {feat}", reading(out)))
            for name, r in rows:
                kr = r["kernel_per_pass"] / o["kernel_per_pass"] if o["kernel_per_pass"] else float("nan")
                sr = r["median_span"] / o["median_span"] if o["median_span"] else float("nan")
                print(f"| {p.name if name == 'original' else ''} | {name} | {r['passes']} | {r['layers']} | "
                      f"{r['in_pass']:,} | {r['kernel_per_pass']:,.1f} ({kr:.2f}) | {r['median_span']:,.1f} ({sr:.2f}) |",
                      flush=True)


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:]]
    if not args:
        shared = ROOT.parent / "shared" / "traces"
        args = sorted(shared.glob("*.json.gz")) + sorted((shared / "hta_two_ranks").glob("*.json.gz")) \
            + sorted((ROOT / "tests" / "data" / "recorded").glob("*.json.gz"))
    main(args)
