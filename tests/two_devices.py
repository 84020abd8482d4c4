"""One trace file holding two GPUs: a real trace's events copied under a second GPU pid / device
and a second host pid (correlation and External ids reused, as two ranks' traces merged into one
file have them). Shared by the device tests."""

from __future__ import annotations

import gzip
import json

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")


def doubled_events(src) -> dict:
    """The trace at `src` with every event copied onto a second device."""
    d = json.load(gzip.open(src))
    ev = d["traceEvents"]
    gpu_pids = {e.get("pid") for e in ev if e.get("cat") in GPU_CATS}
    extra = []
    for e in ev:
        c = json.loads(json.dumps(e))
        if isinstance(c.get("pid"), int):
            c["pid"] = c["pid"] + 1 if c["pid"] in gpu_pids else c["pid"] + 100_000
        a = c.get("args")
        if isinstance(a, dict) and "device" in a and c.get("cat") in GPU_CATS:
            a["device"] = int(a["device"]) + 1
        extra.append(c)
    d["traceEvents"] = ev + extra
    return d


def write_gz(d: dict, dst) -> None:
    with gzip.open(dst, "wt") as f:
        json.dump(d, f)
