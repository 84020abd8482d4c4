"""A GPU-trace session: one Kineto trace (browse) or two (compare), from file paths to results:
probe → load → compare (or a one-trace summary) → detail.

The front ends reach it through the facade `kerneldiff.core.session` (`open_session`, or `Session`
re-exported there), so the order of the steps, the one classifier shared by both traces, the cache
and the worker budget are decided here once. AMD AIE (NPU) traces have a session of their own with
the same protocol (`kerneldiff.core.aie.session.AieSession`), and two runs of rank traces another
(`kerneldiff.core.ranks.session.RunSession`, which loads its ranks through this one).

Loading may run in threads (the explorer loads both traces at once): `load(i)` touches only slot i.
How the work is carried out (which process loads which trace, the fork server started ahead,
comparisons kept on disk and computed ahead) is `kerneldiff.core.orchestration`'s.
"""

from __future__ import annotations

import os
import threading
from dataclasses import field
from typing import TYPE_CHECKING, Any, Callable

from kerneldiff.core import orchestration
from kerneldiff.core.errors import LoadCancelled, TraceError, shown_path
from kerneldiff.core.kernel_ref import SIDES, KernelRef
from kerneldiff.core.lazy_dataclass import dataclass   # made on first use (start-up)

if TYPE_CHECKING:
    from kerneldiff.core.analysis.summary import TraceSummary
    from kerneldiff.core.ingest.probe import TraceInfo

# progress(fraction 0..1, stage, done, total) -> False to cancel
Progress = Callable[[float, str, int, int], "bool | None"]


@dataclass
class KernelDetail:
    """Everything the trace records about one kernel row (for the detail views)."""

    side: str
    row: int
    name: str
    category: str
    rule: str
    cpu_ops: list[str]          # the operators enclosing the launch, outermost first
    python_stack: list[str]     # innermost frame first (empty without with_stack)
    modules: list[str] = field(default_factory=list)   # enclosing nn.Module calls, outermost first
    input_dims: str | None = None    # the launching operator's recorded shapes (record_shapes)
    input_types: str | None = None
    grid: str | None = None          # launch configuration (CUPTI args; absent on most ROCm traces)
    block: str | None = None
    registers: int | None = None
    shared_memory: int | None = None
    occupancy: int | None = None     # estimated achieved occupancy, %
    # the operations behind the kernel: its launching operator, the ops an Inductor name lists, or a
    # fused category's operator and registry components (kerneldiff.core.compare.op_fusion.kernel_ops)
    ops: list[str] = field(default_factory=list)
    cpu_op: str | None = None        # the operator the launch is linked to
    device: int = -1
    stream: int = -1


@dataclass
class LoadedTrace:
    """A loaded trace in a few words (the explorer's start screen and error screen say them)."""

    label: str          # the GPU, as the model names it
    kernels: int
    steps: int
    layers_per_step: int
    warnings: int


def probe_trace(path: str, strict: bool = True) -> TraceInfo:
    """`probe(path)`, with running out of memory or recursion (an input no bound foresaw) turned
    into the file's TraceError, so every front end reports it as it reports bad input; without
    `strict`, any other failure too (the explorer shows it on its error screen, never a traceback)."""
    from kerneldiff.core.ingest import probe as reader   # here: importing the session reads no trace

    try:
        return reader.probe(path)
    except TraceError:
        raise
    except MemoryError:
        raise TraceError(path, "out of memory while reading the head of the file") from None
    except RecursionError:
        raise TraceError(path, "input nested too deeply to read") from None
    except Exception as e:
        if strict:
            raise
        raise TraceError(path, f"unexpected error while reading the head of the file "
                               f"({type(e).__name__}: {' '.join(str(e).split())[:200]})") from None


@dataclass
class Session:
    """One or two Kineto traces (A, B) and everything computed from them."""

    paths: list[str]
    registry: str | None = None
    use_cache: bool = True
    workers: int | None = None
    fusion_overrides: dict[str, float] = field(default_factory=dict)
    peaks: Any = None        # a kerneldiff.core.analysis.peaks.PeakTable (None: the shipped table)
    # tests inject a slow or failing loader, or one handing out models loaded before (returning
    # None: this file is read as usual)
    loader: Callable[..., Any] | None = None
    fork_pair: bool = False  # load B in a forked child beside A (the CLI: main thread, no progress)
    # the traces load at the same time, each in a thread of this process (the explorer): each is
    # then read in this process, one core each, unless `workers` says otherwise. Worker processes
    # serve one load at a time, so the second load waited for the first one's: on two cores the
    # real eager/compiled pair reached its comparison ~0.8 s later than with two one-core loads
    # (docs/PERFORMANCE.md, "The explorer")
    side_by_side: bool = False
    kind: str = "kineto"
    device: int | None = None   # a file holding several devices is read on this one (None: the first)
    # comparisons kept in the cache beside the models and read back from it (the explorer:
    # kerneldiff.core.comparison_cache); only with use_cache, the real loader and the shipped peaks
    keep_comparisons: bool = False
    # compare every pass, warm-up, capture and compile passes too (default: the steady ones;
    # kerneldiff.core.analysis.pass_kinds)
    all_passes: bool = False
    infos: list[TraceInfo | None] = field(init=False)
    errors: list[str | None] = field(init=False)
    models: list[Any] = field(init=False)

    def __post_init__(self) -> None:
        self.paths = [os.fspath(p) for p in self.paths]
        if not 1 <= len(self.paths) <= 2:
            raise ValueError("a session holds one trace (browse) or two (compare)")
        n = len(self.paths)
        self.infos, self.errors, self.models = [None] * n, [None] * n, [None] * n
        self._identities: list[Any] = [None] * n   # each file as it was loaded (comparison_cache)
        self._stored_phases: list[str] | None = None   # those of a stored comparison read before the loads
        self._ahead = None   # a forked child loading and comparing this pair (compare_ahead)
        self._received: tuple | None = None   # (phase, comparison, phases) that child sent back
        self._one_process = False   # while a pair loads side by side: each load reads in its own process
        self._classifier = None
        self._lock = threading.Lock()

    # --- steps ----------------------------------------------------------------------------------
    @property
    def single(self) -> bool:
        return len(self.paths) == 1

    @property
    def classifier(self):
        """The one classifier both traces are read with (loaded once, on first use)."""
        with self._lock:
            if self._classifier is None:
                from kerneldiff.core.analysis.classify import Classifier

                self._classifier = Classifier.load(self.registry)
            return self._classifier

    def probe(self, strict: bool = True) -> list[TraceInfo | None]:
        """Read every trace's metadata (milliseconds: the head of each file). With strict, the first
        unreadable file raises its TraceError; otherwise its message goes to `errors`."""
        for i, path in enumerate(self.paths):
            if self.infos[i] is not None:
                continue
            try:
                self.infos[i] = probe_trace(path, strict)
            except TraceError as e:
                self.errors[i] = str(e)
                if strict:
                    raise
        return self.infos

    def load(self, index: int, progress: Progress | None = None, cancel: threading.Event | None = None):
        """Load trace `index` into its TraceModel (the cache first when allowed). Raises TraceError or
        LoadCancelled; the model is kept in `models[index]`."""
        ahead = self._ahead
        if ahead is not None and self.models[index] is None:
            try:
                ahead.wait_stored(index, progress, cancel)   # then read from the model cache
            except LoadCancelled:
                self._ahead = None
                raise
        info = self.infos[index]
        if info is None:
            if self.errors[index] is not None:   # the probe already refused it
                raise TraceError(self.paths[index], self.errors[index].removeprefix(shown_path(self.paths[index]) + ": "))
            info = self.infos[index] = probe_trace(self.paths[index])
        self.errors[index] = None
        identity = orchestration.identity(self, index)
        kwargs: dict[str, Any] = dict(progress=progress, cancel=cancel, info=info)
        model = None
        if self.loader is not None:
            model = self.loader(self.paths[index], registry=self.registry, use_cache=self.use_cache, **kwargs)
        if model is None:
            model = orchestration.load(self.paths[index], classifier=self.classifier, use_cache=self.use_cache,
                                       workers=self.load_workers(), **kwargs)
        model = self._keep_passes(self._one_device(model))
        if identity is not None and orchestration.identity(self, index) != identity:
            identity = None   # changed while it was read: its comparison is not stored
        self._identities[index] = identity
        self.models[index] = model
        return model

    def warm_up(self) -> None:
        """Start the worker processes' fork server in a background thread when a trace will need
        them (`kerneldiff.core.orchestration.warm_up`): a UI calls this before its first frame."""
        orchestration.warm_up(self)

    def load_workers(self) -> int | None:
        """The decoding processes a load asks for (None: the reader's choice by size)."""
        if self.workers is None and (self._one_process or self.side_by_side and len(self.paths) > 1):
            return 1
        return self.workers

    def needs_workers(self) -> bool:
        """Will loading read, from its JSON, a probed trace big enough for worker processes (not
        one in the model cache)?"""
        return orchestration.needs_workers(self)

    def _keep_passes(self, model):
        """With all_passes, the model's comparisons keep every pass: what was computed leaving some
        out (in a forked child, or kept with the model) is computed again."""
        if self.all_passes and hasattr(model, "kernels") and not model.__dict__.get("all_passes"):
            model.all_passes = True
            model.__dict__.pop("_memo", None)
        return model

    def _one_device(self, model):
        """A file whose GPU events name several devices is never summed as one GPU: the model of
        the chosen device (`device`, else the first), which says which in its warnings."""
        from kerneldiff.core.analysis.devices import device_totals, pick_device, select_device

        if not hasattr(model, "kernels") or model.device is not None:
            return model
        try:
            chosen = pick_device(model, self.device)
        except ValueError as e:
            raise TraceError(model.path, str(e)) from None
        if chosen is None:
            return model
        totals = device_totals(model)
        view = select_device(model, chosen, self.classifier)
        listed = "; ".join(f"device {t.device}: {t.kernels:,} kernels, {t.gpu_time_us / 1000:.1f} ms" for t in totals)
        view.warnings.insert(0, f"this file holds {len(totals)} devices ({listed}): device {chosen} is read "
                                f"alone (--device N picks another)")
        return view

    def load_all(self, progress: Callable[[int, float, str, int, int], Any] | None = None,
                 cancel: threading.Event | None = None) -> list[Any]:
        """Probe every trace (a bad B is reported before A is loaded), then load each in turn."""
        self.probe(strict=True)
        for info in self.infos:
            if info.kind == "aie":
                raise TraceError(info.path, "this is an AMD AIE (NPU) trace: compare AIE runs with "
                                            "`kerneldiff aie A B`")
        if progress is None and cancel is None and orchestration.load_pair_beside(self):
            return self.models
        for i in range(len(self.paths)):
            if self.models[i] is None:
                step = None if progress is None else (lambda *a, i=i: progress(i, *a))
                self.load(i, step, cancel)
        return self.models

    @property
    def loaded(self) -> bool:
        return all(m is not None for m in self.models)

    def compare(self, phase: str = "all", keep: bool = True):
        """The comparison of A and B in one phase (`kerneldiff.core.compare.result.Comparison`);
        with keep_comparisons, the stored one when this pair was compared so before, and stored
        when it was not (unless `keep` is False: the caller stores it later, `keep_comparison`)."""
        if self.single:
            raise ValueError("a one-trace session has nothing to compare: use summary()")
        if not self.loaded:
            raise ValueError("load both traces before comparing")
        ahead = self._ahead
        if ahead is not None and ahead.phase == phase:
            self._ahead = None
            got = ahead.finish()   # the child's (compare_ahead): this very pair and phase
            if got is not None:
                return got[0]
        return orchestration.compare(self, phase, keep)

    def compare_ahead(self, phase: str = "all") -> Callable[[], bool] | None:
        """A pair whose comparison in `phase` is not stored yet: compute and store it in a forked
        child while this process does other work (`kerneldiff.core.compare_ahead`). With both
        models in the cache the child only compares them (~0.3 s, beside the explorer's import of
        Textual and its first frame); otherwise it loads the pair as the CLI does (a process per
        trace), storing each model, then compares. Returns a function that waits for the child:
        True: the comparison is here (`stored_comparison` answers it); False: it is not, and
        this session's loads and its comparison of `phase` follow the child (a load waits until
        the child has stored its model, passing the child's progress on, then reads the cache).
        None where this does not apply (one trace, a probe error, comparisons not kept, stored
        already, no fork here)."""
        from kerneldiff.core.compare_ahead import compare_ahead

        return compare_ahead(self, phase)

    def keep_comparison(self, phase: str, comparison) -> bool:
        """Store `comparison` (this session's, of `phase`) where comparisons are kept, unless it is
        there already; False when it is not stored (keep_comparisons off, a file changed since it
        was loaded, or the cache refused it). ~50 ms for a real pair: the explorer does it once
        the comparison is on the screen."""
        return orchestration.keep_comparison(self, phase, comparison)

    def stored_comparison(self, phase: str = "all"):
        """The comparison of A and B in `phase` as it was stored when this pair (as the files are now,
        with these options) was last compared, read without loading either trace (milliseconds, no
        numpy); None when there is none or keep_comparisons is off. Until the traces are loaded,
        `phases()` answers from it."""
        return orchestration.stored_comparison(self, phase)

    def gate(self, checks: list, phase: str = "all", max_slowdown: str = "3%", **options):
        """The regression gate's verdict on A (the base) against B (the new trace), for `checks`
        (`kerneldiff.core.gate.spec.Check`s): a `kerneldiff.core.gate.result.GateResult`. `options`:
        `kerneldiff.core.gate.verdict.judge`'s (allow_hardware_change, repeats)."""
        from kerneldiff.core.gate.verdict import judge

        return judge(self.compare(phase), self.models, self.paths, checks, self.classifier, phase, max_slowdown,
                     **options)

    def summary(self, index: int = 0) -> TraceSummary:
        """Trace `index` whole, in summary: operations, passes, layers, phases, devices, its wall
        clock (what `info` prints; `kerneldiff.core.analysis.summary.TraceSummary`)."""
        from kerneldiff.core.analysis.summary import summarize

        return summarize(self._model(index))

    def result(self, phase: str = "all", index: int | None = None):
        """What this session shows: the pair's comparison (`index` None; kept only once shown,
        `keep_comparison`), or trace `index`'s overview."""
        return self.compare(phase, keep=False) if index is None else self.overview(index, phase)

    def overview(self, index: int, phase: str = "all"):
        """Trace `index` on its own in one phase, what the explorer browses
        (`kerneldiff.core.analysis.trace_totals.TraceOverview`)."""
        from kerneldiff.core.analysis.trace_totals import overview

        return overview(self._model(index), phase)

    def loaded_trace(self, index: int) -> LoadedTrace:
        """Loaded trace `index` in a few words: its GPU and how many kernels, steps, layers, warnings."""
        m = self._model(index)
        return LoadedTrace(m.label, len(m.kernels), len(m.steps), m.num_layers, len(m.warnings))

    def label(self, index: int) -> str:
        """The loaded trace's GPU, as its model names it."""
        return self._model(index).label

    def absent_phase(self, phase: str) -> str:
        """Why `phase` cannot be compared (a trace has no kernels in it, naming the phases each has),
        or "" when it can."""
        if phase == "all":
            return ""
        have = [self._model(i).phases_present() for i in range(len(self.paths))]
        missing = [k for k, ph in zip("AB", have) if phase not in ph]
        if not missing:
            return ""
        where = " and ".join(missing)
        listed = "; ".join(f"{k} has {', '.join(ph) or 'none'}" for k, ph in zip("AB", have))
        return (f"phase '{phase}' is absent from {where} ({listed}); choose --phase from: "
                f"{', '.join(self.phases())}")

    def phases(self) -> list[str]:
        """Phase filters that select something in every loaded trace ("all" first)."""
        if not self.loaded and self._stored_phases is not None:
            return list(self._stored_phases)
        from kerneldiff.core.analysis.cut_work import compared_phases
        from kerneldiff.core.model import PHASE_FILTERS

        present = [set(compared_phases(m)) for m in self.models if m is not None]
        # kernels outside every pass (set-up before the first) carry phase "unknown" too: the
        # filter is offered only for passes whose phase could not be read, not for those kernels
        for have, m in zip(present, (m for m in self.models if m is not None)):
            if not any(st.phase == "unknown" for st in m.steps):
                have.discard("unknown")
        common = set.intersection(*present) if present else set()
        return [p for p in PHASE_FILTERS if p == "all" or p in common]

    def operation_kernels(self, index: int, operation: str, phase: str = "all") -> list:
        """The kernels of one of the comparison's operations (a category family) on trace `index`
        (`kerneldiff.core.analysis.trace_totals.KernelTotal`s, largest first)."""
        from kerneldiff.core.compare.row_kernels import operation_kernels

        return operation_kernels(self._model(index), operation, phase, self.classifier)

    def outside_layer_kernels(self, index: int, phase: str = "all") -> list:
        """The kernels of trace `index` outside every layer, largest first."""
        from kerneldiff.core.compare.row_kernels import outside_layer_kernels

        return outside_layer_kernels(self._model(index), phase)

    def pass_numbers(self, phase: str = "all") -> list[int]:
        """The numbers of the passes the loaded traces hold in `phase` (what `--pass N` may name: a
        pass's index among all its trace's passes, A's where both have one at that place)."""
        from kerneldiff.core.compare.pass_pairs import pass_numbers, pass_steps

        return pass_numbers(*(pass_steps(self._model(i), phase) for i in (0, 1)))

    def select_passes(self, spec: str, phase: str = "all") -> list[int]:
        """The pass numbers `--pass` `spec` (`3`, `2-5`) names among those the traces hold in `phase`;
        ValueError saying what is wrong."""
        from kerneldiff.core.compare.pass_pairs import parse_passes

        return parse_passes(spec, self.pass_numbers(phase))

    def pass_pairs(self, comparison, passes: list[int] | None = None):
        """Both traces' kernels in the chosen passes (by number; None: the whole phase) on one time axis,
        B's passes starting with A's, with the kernel pairs of the comparison's layer alignments
        (`kerneldiff.core.compare.pass_pairs.PassPairs`: the Perfetto file, the HTML pass drawing)."""
        from kerneldiff.core.compare.pass_pairs import pass_pairs

        return pass_pairs(comparison, self._model(0), self._model(1), passes)

    def modules(self, phase: str = "all"):
        """Both traces' GPU time by module path, aligned (`kerneldiff.core.compare.module_compare`);
        computed the first time it is asked (memoised on the models)."""
        from kerneldiff.core.compare.module_compare import compare_modules

        return compare_modules(self._model(0), self._model(1), phase)

    def module_pairs(self, comparison, path: str):
        """The comparison's kernel pairs in the module tree's node `path`
        (`kerneldiff.core.compare.module_pairs.ModulePairs`)."""
        from kerneldiff.core.compare.module_pairs import module_pairs

        return module_pairs(comparison, self._model(0), self._model(1), path, comparison.phase)

    def host_hotspots(self, phase: str = "all"):
        """Each side's host operations by self time, and the launch-bound idle by the host operation
        running in it (`kerneldiff.core.compare.host_compare`); computed the first time it is asked."""
        from kerneldiff.core.compare.host_compare import compare_host

        return compare_host(self._model(0), self._model(1), phase)

    def kernel_detail(self, ref: KernelRef) -> KernelDetail:
        """Everything the trace records about one kernel."""
        from kerneldiff.core.analysis.attribution import cpu_op_stack, python_stack
        from kerneldiff.core.analysis.modules import module_path

        index, row = ref.index, ref.row
        m = self._model(index)
        op = int(m.kernels.cpu_op[row])
        dims = int(m.cpu_ops.dims[op]) if op >= 0 else -1
        types = int(m.cpu_ops.types[op]) if op >= 0 else -1
        k = m.kernels

        def text(i: int) -> str | None:
            return m.strings[int(i)] if i >= 0 else None

        def num(v) -> int | None:
            return int(v) if v >= 0 else None

        from kerneldiff.core.compare.op_fusion import display_ops, kernel_ops

        return KernelDetail(SIDES[index], row, m.kernel_name(row), m.category(row), m.rule(row),
                            cpu_op_stack(m, row), python_stack(m, row), module_path(m, row),
                            text(dims), text(types), text(k.grid[row]), text(k.block[row]), num(k.regs[row]),
                            num(k.smem[row]), num(k.occupancy[row]),
                            display_ops(kernel_ops(m, row, self.classifier)), m.cpu_op_name(row),
                            int(k.device[row]), int(k.stream[row]))

    def kernel_roof(self, ref: KernelRef):
        """The kernel's name under the roofline, against the peaks its side is measured against
        (`kerneldiff.core.analysis.kernel_roof.KernelRoof`; None: work unknown)."""
        from kerneldiff.core.analysis.kernel_roof import kernel_roof
        from kerneldiff.core.analysis.peaks import default_table

        m = self._model(ref.index)
        return kernel_roof(m, ref.row, (self.peaks or default_table()).match(m.info, ref.side))

    def kernel_ref(self, index: int, name: str) -> KernelRef | None:
        """The first kernel of trace `index` with exactly this name (None: none)."""
        import numpy as np

        m = self._model(index)
        sid = m.strings.get(name)
        if sid is None:
            return None
        rows = np.flatnonzero(m.kernels.name == sid)
        return KernelRef(index, int(rows[0])) if len(rows) else None

    def kernel_name(self, ref: KernelRef) -> str:
        return self._model(ref.index).kernel_name(ref.row)

    def name_durations(self, ref: KernelRef, phase: str = "all"):
        """Durations of every launch of the kernel's name on its trace in `phase` ("all": the whole
        trace) (`kerneldiff.core.analysis.stats.Stats`)."""
        from kerneldiff.core.analysis.pass_lanes import name_durations

        return name_durations(self._model(ref.index), ref.row, phase)

    def layer_kernels(self, index: int, layer: int, phase: str = "all") -> list:
        """The kernels of one layer of trace `index`, in pass order
        (`kerneldiff.core.analysis.trace_totals.KernelTotal`s)."""
        from kerneldiff.core.analysis.trace_totals import layer_kernels

        return layer_kernels(self._model(index), layer, phase)

    def pass_kernels(self, index: int, step: int, phase: str = "all", label: str = ""):
        """The kernels of pass `step` of trace `index`, one lane per stream
        (`kerneldiff.core.analysis.pass_lanes.PassKernels`)."""
        from kerneldiff.core.analysis.pass_lanes import pass_kernels

        return pass_kernels(self._model(index), SIDES[index], label, step, phase)

    def _model(self, index: int):
        m = self.models[index]
        if m is None:
            raise ValueError(f"trace {self.paths[index]} is not loaded")
        return m
