"""One kernel's place under the roofline: the FLOPs and bytes its launches do (each launch's share of
its launching operator's work, `kerneldiff.core.analysis.flops`), over their time, against the
GPU's peaks (`kerneldiff.core.analysis.peaks`): achieved TFLOP/s and TB/s, the roof it sits under
and how close it gets, with the peak used and where that figure comes from. What the Shapes tab
gives per shape, for the kernel the detail view shows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kerneldiff.core.numbers import finite

TINY = 1e-12   # seconds: less and no rate exists


@dataclass
class KernelRoof:
    launches: int                 # of the kernel's name in the trace
    covered: int                  # of which the launching operator's shapes give the work
    covered_us: float
    flops: float
    bytes: float
    tflops: float | None = None
    tbps: float | None = None
    peak_figure: str = ""         # the compute peak the math runs at ("bf16", "fp32", …; "/"-joined when several)
    peak_tflops: float | None = None
    peak_tbps: float | None = None
    pct_peak: float | None = None
    pct_peak_bw: float | None = None
    bound: str | None = None      # "compute" | "memory"
    pct_roofline: float | None = None
    gpu: str = ""                 # the peaks' GPU, as the table names it
    source: str = ""              # where the figures come from


def kernel_roof(model, row: int, peaks) -> KernelRoof | None:
    """The roofline reading of every launch of kernel row `row`'s name; None when no launch's work
    is known (its operator's shapes were not recorded, or it does no counted work). `peaks`: the
    side's `Peaks` (None: rates without a roof)."""
    from kerneldiff.core.analysis.flops import work_of

    k = model.kernels
    same = np.flatnonzero(k.name == k.name[row])
    w = work_of(model)
    carried = same[(w.share[same] > 0) & (w.kernel_work[same] >= 0)]
    if len(carried) == 0:
        return None
    fl, by = w.flops[carried], w.bytes[carried]
    covered_us = float(np.maximum(k.dur[carried], 0).sum())
    out = KernelRoof(launches=len(same), covered=len(carried), covered_us=covered_us, flops=float(fl.sum()),
                     bytes=float(by.sum()))
    sec = covered_us * 1e-6
    if not sec >= TINY:
        return out
    out.tflops, out.tbps = finite(out.flops / sec / 1e12), finite(out.bytes / sec / 1e12)
    if peaks is None:
        return out
    out.gpu, out.source = peaks.name, peaks.source
    figures = sorted({w.works[i].peak for i in w.kernel_work[carried].tolist()})
    out.peak_figure = "/".join(figures)
    pf = {f: peaks.flops(f) for f in figures}
    bw = peaks.bandwidth()
    out.peak_tflops = pf[figures[0]] / 1e12 if len(figures) == 1 and pf[figures[0]] else None
    out.peak_tbps = peaks.hbm_tbps
    ideal_c = None
    if all(pf.values()):
        cls = [w.works[i].peak for i in w.kernel_work[carried].tolist()]
        ideal_c = float(sum(f / pf[c] for f, c in zip(fl.tolist(), cls)))
        out.pct_peak = finite(100.0 * ideal_c / sec)
    if bw:
        ideal_m = out.bytes / bw
        out.pct_peak_bw = finite(100.0 * ideal_m / sec)
        if ideal_c is not None and (ideal_c > 0 or ideal_m > 0):
            out.bound = "compute" if ideal_c >= ideal_m else "memory"
            out.pct_roofline = finite(100.0 * max(ideal_c, ideal_m) / sec)
    return out
