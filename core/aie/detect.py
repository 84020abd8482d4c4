"""Is this an AIE (NPU) trace? Answered from a trace's first events by the main probe, which runs
before every GPU load: kept apart from the AIE analysis so the GPU path does not import it."""

from __future__ import annotations

import re

KERNEL_START = "INSTR_EVENT_0"   # ph "B" marks a kernel start
KERNEL_END = "INSTR_EVENT_1"     # ph "E" marks a kernel end
LOCK_STALL = "LOCK_STALL"        # B/E span: the core waits on a lock
AIE_EVENT_NAMES = (KERNEL_START, KERNEL_END, LOCK_STALL)
# process names mlir-aie gives traced tiles ("core_trace for tile2,0", "mem_trace for ...")
TILE_PROCESS = re.compile(r"\b(core|mem|memtile|shim|intfc)_trace\b")


def is_aie_events(first_events: list) -> bool:
    """True when the first events of a trace look like an AIE trace (for the main probe)."""
    for ev in first_events:
        if not isinstance(ev, dict):
            continue
        name, ph = ev.get("name"), ev.get("ph")
        if name == "process_name" and ph == "M":
            args = ev.get("args")
            pname = args.get("name") if isinstance(args, dict) else None
            if isinstance(pname, str) and TILE_PROCESS.search(pname):
                return True
        elif name in AIE_EVENT_NAMES and ph in ("B", "E"):
            return True
    return False
