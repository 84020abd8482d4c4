"""Loaded models edited the way a test needs (copies: the originals are untouched)."""

from __future__ import annotations

import copy

import numpy as np


def without_layers(model, reason: str = "layers not detected: no attention or SSM kernels recognised"):
    """The model as a trace whose layers were not found (a copy; the original is untouched)."""
    m = copy.copy(model)
    m.__dict__.pop("_memo", None)   # the readings memoised on the original (its layer groups) are not this copy's
    m.kernels = model.kernels.take(slice(None))
    m.kernels.layer = np.full(len(m.kernels), -1)
    m.num_layers = 0
    m.warnings = [*model.warnings, reason]
    return m


def layer_slowed(model, layer: int, us: float):
    """The model with one kernel of `layer` in every pass made `us` longer (a copy): that layer
    `us` slower per pass, nothing else changed."""
    m = copy.copy(model)
    m.__dict__.pop("_memo", None)
    m.kernels = model.kernels.take(slice(None))
    k = m.kernels
    rows = np.flatnonzero((k.layer == layer) & (k.step >= 0))
    _, first = np.unique(k.step[rows], return_index=True)   # the layer's first kernel of each pass
    dur = k.dur.astype(np.float64, copy=True)
    dur[rows[first]] += us
    k.dur = dur
    return m
