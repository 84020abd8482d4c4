"""The one way in: what the front ends (the CLI, the explorer, the benchmarks) import of core, with
`kerneldiff.core.report`, `kerneldiff.core.errors` and `kerneldiff.core.numbers` beside it.

It holds the session protocol every kind of session implements (`TraceSession`, and
`ExplorerSession` for what the explorer opens), `open_session` (which picks the kind from the
files), and re-exports the sessions and every result type and helper the front ends take. The
implementations live below it: `kerneldiff.core.trace_session.Session` (one GPU trace or a pair),
`kerneldiff.core.aie.session.AieSession` (AMD AIE runs), `kerneldiff.core.ranks.session.RunSession`
(two runs of rank traces); `KernelRef` (`kerneldiff.core.kernel_ref`) is how a kernel crosses.
This module sits at the top of core's layers, so it may name any of them. The GPU-trace session
is imported with it (light: its readings are imported when asked for); everything else the first
time it is asked for (PEP 562), so importing this module stays light.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

from kerneldiff.core.errors import TraceError
from kerneldiff.core.kernel_ref import KernelRef
from kerneldiff.core.trace_session import KernelDetail, LoadedTrace, Progress, Session, probe_trace  # noqa: F401


@runtime_checkable
class TraceSession(Protocol):
    """The one session protocol the front ends rely on, whatever the kind: `Session` (one GPU trace
    or a pair), `kerneldiff.core.aie.session.AieSession` (AMD AIE runs) and
    `kerneldiff.core.ranks.session.RunSession` (two runs of rank traces) implement it. What a kind
    offers beyond it (a pair's drill-downs, a run's findings) is that class's own."""

    kind: str                   # "kineto", "aie" or "runs"
    paths: list[str]            # what was opened: trace files (Session, AieSession) or runs (RunSession)

    @property
    def single(self) -> bool: ...
    def warm_up(self) -> None: ...
    def load_all(self, progress: Callable[[int, float, str, int, int], Any] | None = None,
                 cancel: threading.Event | None = None) -> list[Any]: ...
    def label(self, index: int) -> str: ...
    def phases(self) -> list[str]: ...
    def compare(self, phase: str = "all") -> Any: ...


@runtime_checkable
class ExplorerSession(TraceSession, Protocol):
    """What the explorer asks of a session it opens (`Session`, `AieSession`): what to show, a
    comparison stored before (None where nothing is), and each loaded trace in a few words
    (`LoadedTrace`, or the kind's own analysis)."""

    errors: list[str | None]

    def result(self, phase: str = "all", index: int | None = None) -> Any: ...
    def stored_comparison(self, phase: str = "all") -> Any: ...
    def loaded_trace(self, index: int) -> Any: ...


def open_session(paths: list[str], *, aie: dict[str, Any] | None = None, **kwargs) -> ExplorerSession:
    """Probe the paths and return the session for their kind: AIE traces get an AieSession (with the
    launcher's AIE options), everything else a Session (with `kwargs`). An AIE trace beside a trace of
    another kind cannot be compared: a Session, where the AIE trace carries that error and the other
    stays loadable (to browse it). Probe errors stay in `errors`."""
    paths = [os.fspath(p) for p in paths]
    infos: list[TraceInfo | None] = []
    errors: list[str | None] = []
    for path in paths:
        try:
            infos.append(probe_trace(path, strict=False))
            errors.append(None)
        except TraceError as e:
            infos.append(None)
            errors.append(str(e))
    session: Any
    if any(i is not None and i.kind == "aie" for i in infos):
        from kerneldiff.core.aie.session import AieSession, mixed_kind_errors

        all_aie, errors = mixed_kind_errors(paths, infos, errors)
        session = AieSession(paths, options=aie) if all_aie else Session(paths, **kwargs)
    else:
        session = Session(paths, **kwargs)
    session.infos, session.errors = infos, errors
    return session


# --- what the front ends take from here -----------------------------------------------------------
# The front ends (cli/, tui/) import core's result types, and the few helpers that read nothing but
# them or turn an option's text into a setting, from this module alone (with report/, errors and
# numbers). Each is loaded the first time it is asked for (PEP 562), as importing it where it lives
# would: importing the session stays light.
_RESULTS = frozenset({
    # a comparison of two traces (kerneldiff.core.compare.result)
    "Comparison", "Side", "Excluded", "Comparability", "SplitPart", "LedgerEntry", "OperationRow", "LayerSide",
    "LayerRow", "KernelPair", "LayerAlignment", "SavingEstimate", "GroupKernel", "PairGroup", "FusionFinding",
    "SameKernel", "WallClock"})
_WORK_RESULTS = frozenset({"KernelShare", "ShapeSide", "GemmShape", "AttentionShape", "ThroughputSide",
                           "ThroughputRow"})
_OVERVIEW = frozenset({"TraceOverview", "KernelTotal", "LayerTotal", "OperationTotal", "StepTotal"})
_AIE_RESULTS = frozenset({"AieComparison", "AieRun", "AieParams", "AieGemmShape"})
_AIE_SESSION = frozenset({"AIE", "AieResult", "AieSession", "AieSettings", "aie_settings"})
_NAMES = frozenset({"short_name", "distinct_short_names", "readable", "demangle", "visible"})
# `kerneldiff synth` is the trace generator's own front end: what it calls, by the name it has here
_SYNTH = frozenset({"SynthConfig", "parse_size", "write_pair", "write_trace", "SYNTH_GPUS", "write_run",
                    "AiePlan", "write_aie_trace"})

if TYPE_CHECKING:   # what __getattr__ hands out, for type checkers
    from kerneldiff.core.ingest.probe import TraceInfo
    from kerneldiff.core.aie.analysis import AieComparison, AieParams, AieRun, GemmShape as AieGemmShape  # noqa: F401
    from kerneldiff.core.aie.session import AIE, AieResult, AieSession, AieSettings, aie_settings  # noqa: F401
    from kerneldiff.core.analysis.pass_lanes import PassKernels  # noqa: F401
    from kerneldiff.core.analysis.peaks import PeakTable  # noqa: F401
    from kerneldiff.core.analysis.stats import Stats  # noqa: F401
    from kerneldiff.core.analysis.summary import TraceSummary  # noqa: F401
    from kerneldiff.core.analysis.trace_totals import (KernelTotal, LayerTotal, OperationTotal,  # noqa: F401
                                                       StepTotal, TraceOverview)
    from kerneldiff.core.compare.fusion_model import check_overrides  # noqa: F401
    from kerneldiff.core.compare.layer_significance import critical  # noqa: F401
    from kerneldiff.core.compare.module_compare import ledger_parts, top_rows  # noqa: F401
    from kerneldiff.core.compare.one_sided import attention_counterparts, operation_counterpart  # noqa: F401
    from kerneldiff.core.compare.result import (Comparability, Comparison, Excluded, FusionFinding,  # noqa: F401
                                                GroupKernel, KernelPair, LayerAlignment, LayerRow, LayerSide,
                                                LedgerEntry, OperationRow, PairGroup, SameKernel, SavingEstimate,
                                                Side, SplitPart, WallClock)
    from kerneldiff.core.compare.work_result import (AttentionShape, GemmShape, KernelShare, ShapeSide,  # noqa: F401
                                                     ThroughputRow, ThroughputSide)
    from kerneldiff.core.demo import DEMO_A, DEMO_B  # noqa: F401
    from kerneldiff.core.fileio import kind_of  # noqa: F401
    from kerneldiff.core.gate.spec import parse_checks, parse_limit  # noqa: F401
    from kerneldiff.core.ingest.cache import setting_problem  # noqa: F401
    from kerneldiff.core.names.demangle import demangle, readable  # noqa: F401
    from kerneldiff.core.names.display import distinct_short_names, short_name  # noqa: F401
    from kerneldiff.core.names.visible import visible  # noqa: F401
    from kerneldiff.core.phase_names import PHASE_FILTERS  # noqa: F401
    from kerneldiff.core.ranks.session import RunSession  # noqa: F401
    from kerneldiff.core.aie.synth import AiePlan, write_aie_trace  # noqa: F401
    from kerneldiff.core.synth.names import GPUS as SYNTH_GPUS  # noqa: F401
    from kerneldiff.core.synth.pair import SynthConfig, parse_size, write_pair, write_trace  # noqa: F401
    from kerneldiff.core.synth.ranks import write_run  # noqa: F401


def __getattr__(name: str):
    if name in _RESULTS:
        from kerneldiff.core.compare import result as mod
    elif name in _WORK_RESULTS:
        from kerneldiff.core.compare import work_result as mod
    elif name in _OVERVIEW:
        from kerneldiff.core.analysis import trace_totals as mod
    elif name == "Stats":
        from kerneldiff.core.analysis import stats as mod
    elif name == "TraceSummary":            # one trace whole, in summary (`info`)
        from kerneldiff.core.analysis import summary as mod
    elif name == "TraceInfo":               # what a probe reads from a file's head
        from kerneldiff.core.ingest import probe as mod
    elif name == "PassKernels":
        from kerneldiff.core.analysis import pass_lanes as mod
    elif name in _AIE_RESULTS:
        from kerneldiff.core.aie import analysis as mod
        name_there = name.removeprefix("Aie") if name == "AieGemmShape" else name
        value = globals()[name] = getattr(mod, name_there)
        return value
    elif name in _AIE_SESSION:
        from kerneldiff.core.aie import session as mod
    elif name == "RunSession":              # two runs of rank traces (loads its ranks through Session)
        from kerneldiff.core.ranks import session as mod
    # `kerneldiff synth`: the generator of GPU pairs, runs of ranks and AIE traces, with their truth
    elif name in ("SynthConfig", "parse_size", "write_pair", "write_trace"):
        from kerneldiff.core.synth import pair as mod
    elif name == "SYNTH_GPUS":
        from kerneldiff.core.synth.names import GPUS

        value = globals()[name] = GPUS
        return value
    elif name == "write_run":
        from kerneldiff.core.synth import ranks as mod
    elif name in ("AiePlan", "write_aie_trace"):
        from kerneldiff.core.aie import synth as mod
    # readings that take nothing but result types: which row of the other side answers a one-sided
    # row; the critical t a layer's departure is judged against; the rows a report shows of a
    # ModuleComparison or HostHotspots
    elif name in ("operation_counterpart", "attention_counterparts"):
        from kerneldiff.core.compare import one_sided as mod
    elif name == "critical":
        from kerneldiff.core.compare import layer_significance as mod
    elif name in ("top_rows", "ledger_parts"):
        from kerneldiff.core.compare import module_compare as mod
    # display names: how a kernel name is shortened, demangled or made safe to print, the same in
    # every front end and report
    elif name in _NAMES:
        from kerneldiff.core.names import demangle, display, visible as shown

        mod = display if name in ("short_name", "distinct_short_names") else shown if name == "visible" else demangle
    elif name == "PHASE_FILTERS":
        from kerneldiff.core import phase_names as mod
    elif name in ("DEMO_A", "DEMO_B"):      # the bundled demo traces' paths
        from kerneldiff.core import demo as mod
    # option parsers: command-line text into the settings a session takes, checked before any trace
    # is read so that a bad option is one line (exit 2)
    elif name == "PeakTable":
        from kerneldiff.core.analysis import peaks as mod
    elif name == "check_overrides":
        from kerneldiff.core.compare import fusion_model as mod
    elif name in ("parse_checks", "parse_limit"):
        from kerneldiff.core.gate import spec as mod
    elif name == "setting_problem":
        from kerneldiff.core.ingest import cache as mod
    elif name == "kind_of":                 # "a directory", "a FIFO": words for bad-input lines
        from kerneldiff.core import fileio as mod
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(mod, name)
    return value
