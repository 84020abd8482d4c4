"""The kerneldiff explorer app: probe (instant) → load in threads (with progress) → compare → browse.

State lives here; screens render it. Work that takes time (loading, comparing) runs in thread
workers that post messages back (kerneldiff.tui.messages); the handlers below apply them on the UI thread.
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
import time
from functools import partial
from typing import Any, Callable

from rich.text import Text
from textual.app import App
from textual.binding import Binding
from textual.worker import get_current_worker

from kerneldiff.core.errors import LoadCancelled, TraceError
from kerneldiff.core.ingest.probe import TraceInfo, probe
from kerneldiff.core.model import PHASE_FILTERS

from .commands import ExplorerCommands
from .messages import ComparisonFailed, ComparisonReady, LoadProgress, TraceCancelled, TraceFailed, TraceLoaded
from .screens.start import StartScreen
from .text import SIDE_LETTER

# Only the start screen is imported up front: the first frame (probe metadata) must not wait for
# numpy, DataTable and the other screens, which load while the traces do.

PHASE_ORDER = PHASE_FILTERS
# A progress bar needs no more than ~10 updates a second; more only costs redraws.
PROGRESS_INTERVAL = 0.1


def _default_compare(a, b, phase: str = "all"):
    from kerneldiff.core.compare.engine import compare

    return compare(a, b, phase=phase)


class KernelDiffApp(App):
    TITLE = "kerneldiff"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {ExplorerCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit", tooltip="Quit kerneldiff (the terminal is restored)"),
        Binding("question_mark", "help", "Help", key_display="?", tooltip="This list of keys"),
        Binding("p", "cycle_phase", "Phase", tooltip="Cycle the phase filter (all / prefill / decode / mixed) and recompare"),
    ]

    def __init__(self, paths: list[str], phase: str = "all", registry: str | None = None, use_cache: bool = True,
                 autoload: bool = True, compare: Callable[..., Any] | None = None, loader: Callable[..., Any] | None = None,
                 aie: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.started = time.perf_counter()
        self.paths = [str(p) for p in paths]
        self.phase = phase
        self.registry = registry
        self.use_cache = use_cache
        self.autoload = autoload
        self.compare_fn = compare or _default_compare
        self.loader = loader
        n = len(self.paths)
        self.infos: list[TraceInfo | None] = [None] * n
        self.errors: list[str | None] = [None] * n
        self.models: list[Any] = [None] * n
        self.loading: set[int] = set()
        self.comparison: Any = None
        self.single_index: int | None = 0 if n == 1 else None
        self.first_frame_seconds: float | None = None
        self.last_export = None
        self.exit_code = 0
        self._cancel: dict[int, threading.Event] = {}
        self._compare_gen = 0
        # AMD AIE (NPU) traces: options from the launcher; in AIE mode `models` hold kerneldiff.core.aie.analysis.AieRun
        # and `comparison` the AIE session the AIE screens show
        self.aie_options = aie
        self.aie_mode = False

    # --- start ----------------------------------------------------------------------------------
    def get_default_screen(self) -> StartScreen:
        # probes read only the head of each file (milliseconds), so the first frame can show them
        for i, path in enumerate(self.paths):
            try:
                self.infos[i] = probe(path)
            except TraceError as e:
                self.errors[i] = str(e)
        if any(info is not None and info.kind == "aie" for info in self.infos):
            from .screens.aie_load import route_kinds

            self.aie_mode, self.errors = route_kinds(self.paths, self.infos, self.errors)
        return StartScreen()

    def first_frame_shown(self) -> None:
        if self.first_frame_seconds is None:
            self.first_frame_seconds = time.perf_counter() - self.started
            if self.autoload:
                self.start_loading()
                if not self.loading:  # every probe failed: say so on the error screen right away
                    self._after_loads()

    def side_key(self, index: int) -> str:
        return "a" if index == 0 else "b"

    @property
    def start_screen(self) -> StartScreen:
        """The default screen, at the bottom of the stack: it owns the trace cards."""
        return next(s for s in self.screen_stack if isinstance(s, StartScreen))

    # --- loading ------------------------------------------------------------------------------
    def start_loading(self) -> None:
        for i, path in enumerate(self.paths):
            if self.models[i] is not None or self.infos[i] is None or i in self.loading:
                continue
            if self.errors[i] is not None and self.infos[i].kind == "aie":
                continue
            self.errors[i] = None
            cancel = threading.Event()
            self._cancel[i] = cancel
            self.loading.add(i)
            self.start_screen.card(i).set_progress(0.0, "starting", 0, self.infos[i].size)
            self.run_worker(partial(self._load, i, cancel), thread=True, exclusive=True, group=f"load-{i}",
                            exit_on_error=False, name=f"load {os.path.basename(path)}")
        self.start_screen.refresh_hint()
        self.refresh_bindings()

    def _load(self, index: int, cancel: threading.Event) -> None:
        """Thread worker: load one trace, posting throttled progress."""
        from kerneldiff.core.ingest.loader import load

        load_fn = self._aie_loader() if self.aie_mode else (self.loader or load)
        worker = get_current_worker()
        path = self.paths[index]
        last = [0.0, ""]

        def progress(fraction: float, stage: str, done: int, total: int) -> bool:
            if cancel.is_set() or worker.is_cancelled:
                return False
            now = time.perf_counter()
            if stage != last[1] or now - last[0] >= PROGRESS_INTERVAL:
                last[0], last[1] = now, stage
                self.post_message(LoadProgress(index, fraction, stage, done, total))
            return True

        kwargs: dict[str, Any] = dict(progress=progress, cancel=cancel, registry=self.registry, info=self.infos[index])
        params = inspect.signature(load_fn).parameters
        if "use_cache" in params:
            kwargs["use_cache"] = self.use_cache
        try:
            model = load_fn(path, **kwargs)
        except LoadCancelled:
            self.post_message(TraceCancelled(index))
        except TraceError as e:
            self.post_message(TraceFailed(index, str(e)))
        except MemoryError:
            self.post_message(TraceFailed(index, f"{path}: out of memory while loading"))
        except Exception as e:  # never a traceback on the user's screen
            self.post_message(TraceFailed(index, f"{path}: unexpected error while loading "
                                                 f"({type(e).__name__}: {' '.join(str(e).split())})"))
        else:
            self.post_message(TraceLoaded(index, model))

    def on_load_progress(self, m: LoadProgress) -> None:
        if m.index in self.loading:  # a late report from a cancelled load is dropped
            self.start_screen.card(m.index).set_progress(m.fraction, m.stage, m.done, m.total)

    def on_trace_loaded(self, m: TraceLoaded) -> None:
        self.loading.discard(m.index)
        self.models[m.index] = m.model
        model = m.model
        if self.aie_mode:
            from .screens.aie_load import card_summary

            summary = card_summary(model)
        else:
            summary = f"loaded: {len(model.kernels)} kernels · {len(model.steps)} steps · {model.num_layers} layers/step"
            if model.warnings:
                summary += f" · {len(model.warnings)} warnings"
        self.start_screen.card(m.index).set_done(summary)
        self._after_loads()

    def on_trace_failed(self, m: TraceFailed) -> None:
        self.loading.discard(m.index)
        self.errors[m.index] = m.message
        self.start_screen.card(m.index).set_error(m.message)
        self._after_loads()

    def on_trace_cancelled(self, m: TraceCancelled) -> None:
        self.loading.discard(m.index)
        self.start_screen.card(m.index).set_status(Text("cancelled — Enter loads again"))
        self.start_screen.refresh_hint()
        self.refresh_bindings()

    def cancel_loading(self) -> None:
        if not self.loading:
            return
        for i in list(self.loading):
            self._cancel[i].set()
        self.notify("loading cancelled")

    def _after_loads(self) -> None:
        from .screens.error import ErrorScreen

        self.start_screen.refresh_hint()
        self.refresh_bindings()
        if self.loading:
            return
        if any(self.errors):
            if any(self.models) or all(e is not None for e in self.errors):
                self.exit_code = 2
                if not isinstance(self.screen, ErrorScreen):
                    self.push_screen(ErrorScreen())
            return
        if all(m is not None for m in self.models):
            self.start_compare(self.phase)

    def open_or_load(self) -> None:
        """Enter on the start screen: open what is loaded, show errors, or (re)load."""
        from .screens.error import ErrorScreen

        if self.loading:
            return
        if self.comparison is not None:
            self._push_main()
        elif any(self.errors) and all(m is not None or e is not None for m, e in zip(self.models, self.errors)):
            self.push_screen(ErrorScreen())
        elif all(m is not None for m in self.models):
            self.start_compare(self.phase)  # loaded, but the comparison failed or was never made
        else:
            self.start_loading()

    def browsable_index(self) -> int | None:
        for i, m in enumerate(self.models):
            if m is not None:
                return i
        return None

    def browse(self, index: int) -> None:
        """Browse one loaded trace on its own (after the other failed to load)."""
        self.single_index = index
        self.comparison = None
        self.start_compare(self.phase)

    # --- comparing ----------------------------------------------------------------------------
    def _pair(self) -> tuple[Any, Any]:
        if self.single_index is not None:
            m = self.models[self.single_index]
            return m, m  # browse mode renders side A of a self-comparison
        return self.models[0], self.models[1]

    def start_compare(self, phase: str) -> None:
        if self.aie_mode:
            self._open_aie()
            return
        self._compare_gen += 1
        a, b = self._pair()
        self.run_worker(partial(self._compare, a, b, phase, self._compare_gen), thread=True, exclusive=True,
                        group="compare", exit_on_error=False, name=f"compare {phase}")

    def _compare(self, a, b, phase: str, generation: int) -> None:
        try:
            comp = self.compare_fn(a, b, phase=phase)
        except TraceError as e:
            self.post_message(ComparisonFailed(str(e)))
        except Exception as e:
            self.post_message(ComparisonFailed(f"comparison failed ({type(e).__name__}: {' '.join(str(e).split())})"))
        else:
            msg = ComparisonReady(comp, phase)
            msg.generation = generation
            self.post_message(msg)

    def on_comparison_ready(self, m: ComparisonReady) -> None:
        from .screens.kernel import KernelDetailScreen
        from .screens.main import MainScreen

        if getattr(m, "generation", self._compare_gen) != self._compare_gen:
            return  # a newer phase was asked for meanwhile
        first = self.comparison is None
        self.comparison = m.comparison
        self.phase = m.phase
        self.start_screen.refresh_hint()
        self.refresh_bindings()
        if first or not any(isinstance(s, MainScreen) for s in self.screen_stack):
            self._push_main()
            return
        # phase changed: detail screens show stats of the old phase, so leave them
        while isinstance(self.screen, KernelDetailScreen):
            self.pop_screen()
        for s in self.screen_stack:
            if hasattr(s, "show_comparison") and s.is_mounted:
                s.show_comparison(m.comparison)

    def on_comparison_failed(self, m: ComparisonFailed) -> None:
        self.notify(m.message, title="Comparison failed", severity="error", markup=False, timeout=10)

    def _push_main(self) -> None:
        from .screens.main import MainScreen

        if self.aie_mode:
            from .screens.aie import AieScreen

            if not isinstance(self.screen, AieScreen):
                self.push_screen(AieScreen(self.comparison))
            return
        if isinstance(self.screen, MainScreen):
            return
        self.push_screen(MainScreen(self.comparison, single=self.single_index is not None))

    # --- AMD AIE (NPU) traces -----------------------------------------------------------------
    def aie_settings(self):
        from .screens.aie_load import aie_settings

        return aie_settings(self.aie_options)  # run_app validated the options before starting

    def _aie_loader(self) -> Callable[..., Any]:
        from .screens.aie_load import make_loader

        return make_loader(self.aie_options)

    def _open_aie(self) -> None:
        """Every AIE trace analysed: show them (the comparison of two runs is cheap, done here)."""
        from .screens.aie_views import AieSession

        runs = [self.models[self.single_index]] if self.single_index is not None else list(self.models)
        self.comparison = AieSession.of(runs, self.aie_settings())
        self.start_screen.refresh_hint()
        self.refresh_bindings()
        self._push_main()

    def phase_choices(self) -> list[str]:
        present: set[str] = set()
        for m in self._pair() if any(self.models) else ():
            if m is not None:
                present.update(m.phases_present())
        return [p for p in PHASE_ORDER if p == "all" or p in present]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cycle_phase":
            return self.comparison is not None and not self.aie_mode
        return True

    def action_cycle_phase(self) -> None:
        if self.comparison is None:
            self.notify("nothing loaded yet", severity="warning")
            return
        if self.aie_mode:
            self.notify("AIE traces have no prefill/decode phases", timeout=3)
            return
        choices = self.phase_choices()
        if len(choices) < 2:
            self.notify("these traces have no prefill/decode annotations: only 'all'", timeout=3)
            return
        nxt = choices[(choices.index(self.phase) + 1) % len(choices)] if self.phase in choices else choices[0]
        self.notify(f"phase {nxt}: comparing…", timeout=2)
        self.start_compare(nxt)

    # --- drill-down helpers ---------------------------------------------------------------------
    def _label(self, side: str) -> str:
        comp = self.comparison
        if comp is None:
            return SIDE_LETTER[side]
        s = getattr(comp, side)
        return (s.gpu or s.label) if self.single_index is not None else s.label

    def open_pair(self, pair, layer: int | None, crumbs: list[str], single: bool = False) -> None:
        from .screens.kernel import KernelDetailScreen, KernelRef, pair_context

        a, b = self._pair()
        refs = [KernelRef("a", self._label("a"), pair.a_name, pair.a_category, pair.a_rule, pair.a, pair.a_row, a)]
        if not single:
            refs.append(KernelRef("b", self._label("b"), pair.b_name, pair.b_category, pair.b_rule, pair.b,
                                  pair.b_row, b))
        self.push_screen(KernelDetailScreen(refs, pair_context(pair, layer, single), [*crumbs, f"#{pair.position}"],
                                            single=single))

    def open_same_kernel(self, k, crumbs: list[str]) -> None:
        from .screens.kernel import KernelDetailScreen, KernelRef, same_kernel_context

        single = self.single_index is not None
        a, b = self._pair()
        refs = []
        for side, model, stats in (("a", a, k.a), ("b", b, k.b))[: 1 if single else 2]:
            row = first_row(model, k.name)
            rule = model.rule(row) if row >= 0 else ""
            refs.append(KernelRef(side, self._label(side), k.name, k.category, rule, stats, row, model))
        short = k.name if len(k.name) <= 24 else k.name[:23] + "…"
        self.push_screen(KernelDetailScreen(refs, same_kernel_context(k, single), [*crumbs, short], single=single))

    # --- help / quit ----------------------------------------------------------------------------
    def action_help(self) -> None:
        from .screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        for ev in self._cancel.values():
            ev.set()  # loader threads stop at their next batch, so exit does not wait on them
        self.exit(self.exit_code)


def first_row(model, name: str) -> int:
    """A kernel row with this exact name (for detail views), -1 if none."""
    import numpy as np

    sid = model.strings.get(name)
    if sid is None:
        return -1
    rows = np.flatnonzero(model.kernels.name == sid)
    return int(rows[0]) if len(rows) else -1


def _warm_up_workers(paths: list[str]) -> None:
    """Big traces are decoded by worker processes; start their fork server while the first frame
    is drawn, so the first load does not pay its ~0.3 s start-up."""
    try:
        big = any(os.path.getsize(p) >= 8 * 1024 * 1024 for p in paths)
    except OSError:
        return  # the probe will report the file
    if big:
        from kerneldiff.core.ingest.loader import prepare

        threading.Thread(target=prepare, name="kerneldiff-prepare", daemon=True).start()


def _has_terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def run_app(paths: list[str], phase: str = "all", registry: str | None = None, use_cache: bool = True,
            aie: dict[str, Any] | None = None) -> int:
    """Open the explorer on one trace (browse) or two (compare). Returns the exit code.
    `aie`: GEMM shape / warm-up / iterations / clock for AMD AIE traces (keys of
    kerneldiff.tui.screens.aie_load.OPTION_KEYS; absent or None = not given)."""
    if phase not in PHASE_ORDER:
        print(f"kerneldiff: unknown phase {phase!r} (choose from {', '.join(PHASE_ORDER)})", file=sys.stderr)
        return 2
    if not 1 <= len(paths) <= 2:
        print("kerneldiff: give one or two traces", file=sys.stderr)
        return 2
    if aie:
        from .screens.aie_load import aie_settings

        try:
            aie_settings(aie)
        except ValueError as e:
            print(f"kerneldiff: {e}", file=sys.stderr)
            return 2
    if not _has_terminal():
        # a script or a pipe: a full-screen app would wait forever for keys nobody sends
        from kerneldiff.core.session import Session

        try:
            Session(paths).probe(strict=True)
        except TraceError as e:
            print(f"kerneldiff: {e}", file=sys.stderr)
            return 2
        print("kerneldiff: the explorer needs a terminal; for a report use `kerneldiff compare A B` or "
              "`kerneldiff info A`", file=sys.stderr)
        return 2
    _warm_up_workers(paths)
    app = KernelDiffApp(paths, phase=phase, registry=registry, use_cache=use_cache, aie=aie)
    result = app.run()
    return int(result) if isinstance(result, int) else app.exit_code
