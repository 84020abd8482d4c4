"""Does a change read the real traces differently? Saves, or checks against saved, the outputs of
`kerneldiff compare --format json --no-cache` on the real pairs (both orders) and `info --json
--no-cache` on every real trace in ../shared/traces. Byte for byte.

    python bench/check_same.py --save /tmp/kd_before     # on the code before the change
    python bench/check_same.py --check /tmp/kd_before    # after: exit 1 on any difference
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "traces"
PAIRS = [
    ("h100_llama_eager_sdpa", "h200_llama_eager_sdpa"),
    ("h100_llama_eager_sdpa", "h100_llama_compiled"),
    ("mi300x_qwen1.5-0.5b_hf", "h100_qwen1.5-0.5b_hf"),
    ("a100_control", "v100_test"),
    ("hta_two_ranks/sampled_rank-0", "hta_two_ranks/sampled_rank-1"),
]


# how long the load took: the one field that may differ
_TIMES = re.compile(rb'"((?:load_)?seconds)": [-0-9.eE+]+')


def _path(name: str) -> str:
    return str(TRACES / f"{name}.json.gz")


def runs():
    kd = [os.environ.get("KD", str(Path(sys.executable).parent / "kerneldiff"))]
    for a, b in PAIRS:
        for x, y in ((a, b), (b, a)):
            yield f"compare_{x}__{y}".replace("/", "_"), kd + ["compare", _path(x), _path(y), "--format", "json", "--no-cache"]
    for p in sorted(TRACES.rglob("*.json.gz")):
        name = str(p.relative_to(TRACES))[: -len(".json.gz")]
        yield f"info_{name}".replace("/", "_"), kd + ["info", str(p), "--json", "--no-cache"]


def main() -> int:
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save")
    g.add_argument("--check")
    args = ap.parse_args()
    if not TRACES.is_dir():
        print(f"{TRACES}: not here; nothing to check")
        return 0
    out = Path(args.save or args.check)
    out.mkdir(parents=True, exist_ok=True)
    bad = 0
    # fixed hash seed: the ledger sums floats in a set's order, which moves the last digit
    env = dict(os.environ, PYTHONHASHSEED="0")
    for key, cmd in runs():
        r = subprocess.run(cmd, capture_output=True, env=env)
        got = _TIMES.sub(rb'"\1": T', r.stdout) + f"\n[rc {r.returncode}]\n".encode() + r.stderr
        f = out / f"{key}.out"
        if args.save:
            f.write_bytes(got)
        elif not f.exists() or f.read_bytes() != got:
            bad += 1
            print(f"DIFFERS: {key}")
    if args.check:
        print(f"{'all same' if not bad else f'{bad} differ'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
