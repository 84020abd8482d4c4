"""The readings of one trace's columns, computed in one place and one order: each kernel joined to
its launch and operator (attribution), classified (by name, then by the operator that launched it),
eager attention marked, passes and their phases, layers, then the trace-quality warnings.

The loader (`kerneldiff.core.ingest.loader.read_trace`) hands over the columns; the session runs
this pipeline on them (`kerneldiff.core.orchestration.load`), and the model cache keeps the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kerneldiff.core.analysis import attribution, eager_attention, layers, phases

if TYPE_CHECKING:
    from kerneldiff.core.analysis.classify import Classifier
    from kerneldiff.core.model import TraceModel

# report(fraction 0..1, stage): where the pipeline is in a load's progress bar
Report = Callable[[float, str], Any]

# the share of the bar each stage starts at (reading the file owns 0..0.9)
PHASES_AT, LAYERS_AT = 0.93, 0.96


def read(model: TraceModel, classifier: Classifier, report: Report | None = None) -> TraceModel:
    """Every reading of `model`, written into it (its columns `cpu_op`, `launch`, `cat`, `rule`,
    `step`, `phase`, `layer`, its steps, layers and warnings); returns it."""
    model.categories = list(classifier.categories)
    attribution.link(model)
    classifier.assign(model)   # after link: operator rules read each kernel's launching cpu_op
    if report is not None:
        report(PHASES_AT, "phases")
    eager_attention.mark(model, classifier)
    phases.assign(model, classifier)
    if report is not None:
        report(LAYERS_AT, "layers")
    layers.segment(model, classifier)
    attribution.quality_warnings(model, classifier)
    return model
