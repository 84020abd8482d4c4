"""The kernels behind one row of a comparison, side by side: what an operation (a category family, as
the comparison groups them) or the time outside every layer is made of on each trace.

Pure functions from a loaded `TraceModel` to `kerneldiff.core.analysis.trace_totals.KernelTotal`s (one per
kernel name: count, durations, share of the side's GPU time in the phase), largest total first.
"""

from __future__ import annotations

import numpy as np

from kerneldiff.core.analysis.trace_totals import KernelTotal, _kernel_totals
from kerneldiff.core.analysis.cut_work import compared_mask
from kerneldiff.core.model import TraceModel


def _family_rows(model: TraceModel, mask: np.ndarray, family: str, classifier) -> np.ndarray:
    """Rows in `mask` whose category belongs to `family` (the comparison's operation; unclassified
    kernels are "Other")."""
    k = model.kernels
    families = [classifier.group(c) for c in model.categories] + ["Other"]
    hit = np.array([f == family for f in families], dtype=bool)
    cat = k.cat.astype(np.int64)
    return np.flatnonzero(mask & hit[np.where(cat >= 0, cat, len(families) - 1)])


def _totals(model: TraceModel, rows: np.ndarray, mask: np.ndarray) -> list[KernelTotal]:
    if len(rows) == 0:
        return []
    out = _kernel_totals(model, rows, float(model.kernels.dur[mask].sum()))
    out.sort(key=lambda r: (-r.stats.total_us, r.name))
    return out


def operation_kernels(model: TraceModel, family: str, phase: str = "all", classifier=None) -> list[KernelTotal]:
    """The kernels of one operation (category family) on this trace, in the phase."""
    if classifier is None:
        from kerneldiff.core.analysis.classify import Classifier

        classifier = Classifier.load()
    mask = compared_mask(model, phase)
    return _totals(model, _family_rows(model, mask, family, classifier), mask)


def outside_layer_kernels(model: TraceModel, phase: str = "all") -> list[KernelTotal]:
    """The kernels outside every layer (embedding, lm_head, sampling, between passes), in the phase."""
    mask = compared_mask(model, phase)
    return _totals(model, np.flatnonzero(mask & (model.kernels.layer < 0)), mask)
