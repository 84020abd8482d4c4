"""A GPU's name from the device properties a trace records: the recorded name where there is one,
else the architecture (compute capability or gfx arch) and memory size. Shared by the probe (the
trace's main device) and the per-device readings (`--device N` names that device, not device 0)."""

from __future__ import annotations

from typing import Any

AMD_ARCH = {
    (9, 4): "gfx942 (MI300 series)",
    (9, 5): "gfx950 (MI350 series)",
    (9, 0): "gfx90a (MI200 series)",
    (9, 8): "gfx908 (MI100)",
    (11, 0): "gfx110x (RDNA3)",
    (12, 0): "gfx120x (RDNA4)",
}
NVIDIA_ARCH = {
    (7, 0): "Volta (sm_70)",
    (7, 5): "Turing (sm_75)",
    (8, 0): "Ampere (sm_80)",
    (8, 6): "Ampere (sm_86)",
    (8, 9): "Ada (sm_89)",
    (9, 0): "Hopper (sm_90)",
    (10, 0): "Blackwell (sm_100)",
    (12, 0): "Blackwell (sm_120)",
}


def gpu_name(vendor: str, dev: dict[str, Any]) -> tuple[str, str]:
    name = str(dev.get("name") or "").strip()
    if name:
        return name, "deviceProperties.name"
    cc = (dev.get("computeMajor"), dev.get("computeMinor"))
    mem = dev.get("totalGlobalMem")
    mem_s = f" {round(mem / 2**30)} GB" if isinstance(mem, (int, float)) and mem > 0 else ""
    if vendor == "AMD" and cc in AMD_ARCH:
        return f"AMD {AMD_ARCH[cc]}{mem_s}", "gfx arch + memory"
    if vendor == "NVIDIA" and cc in NVIDIA_ARCH:
        return f"NVIDIA {NVIDIA_ARCH[cc]}{mem_s}", "compute capability + memory"
    if all(isinstance(x, int) for x in cc):
        return f"{vendor} GPU cc {cc[0]}.{cc[1]}{mem_s}".strip(), "compute capability + memory"
    if mem_s:
        return f"{vendor} GPU{mem_s}", "memory size"
    return "", ""
