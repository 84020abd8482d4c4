"""The kerneldiff explorer app: one session (kerneldiff.core.session) → probe (instant) → load in
threads (with progress) → compare two traces, or browse one; or two runs of rank traces, summarised
before it opens (`explore_runs`). Each kind of result has its screen (`result_screens`).

State lives here, in reactive attributes (`traces`, `phase`, `phases`, `result`, `browsing`); the
screens watch it and post messages for what the user asks (kerneldiff.tui.messages). Work that takes
time (loading, comparing) runs in thread workers that post messages back; the handlers below apply
them on the UI thread. Messages go up, method calls go down.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from functools import partial
from typing import Any, Callable

from textual.app import App
from textual.notifications import Notification, Notify
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import get_current_worker

from kerneldiff.core.session import LoadedTrace
from kerneldiff.core.errors import LoadCancelled, TraceError

from .commands import ExplorerCommands
from .messages import (BrowseRequested, CancelRequested, ComparisonShown, Exported, LoadProgress, OpenRequested,
                       ResultFailed, ResultReady, StartShown, TraceCancelled, TraceFailed, TraceLoaded)
from .screens.start import StartScreen
from .state import CANCELLED, FAILED, LOADED, LOADING, TraceState, initial_states

# Only the start screen is imported up front: the first frame (probe metadata) must not wait for
# numpy, DataTable and the other screens, which load while the traces do.

# A progress bar needs no more than ~10 updates a second; more only costs redraws.
PROGRESS_INTERVAL = 0.1


def explorer_session(paths: list[str], *, aie: dict[str, Any] | None = None, registry: str | None = None,
                     use_cache: bool = True, loader: Callable[..., Any] | None = None, all_passes: bool = False):
    """The session behind the explorer (probing now: milliseconds); an AIE trace beside a GPU trace
    keeps its error and the GPU trace stays loadable, to browse it (`open_session`). Comparisons
    are kept beside the models, so a pair compared before opens on its comparison at once."""
    from kerneldiff.core.session import open_session

    return open_session(paths, aie=aie, registry=registry, use_cache=use_cache, loader=loader,
                        keep_comparisons=True, side_by_side=True, **({"all_passes": True} if all_passes else {}))


def stored_result(session, phase: str):
    """The comparison of the session's two traces as stored when they were last compared in `phase`
    (read before either is loaded), or None: no pair, a trace the probe refused, nothing stored."""
    if session.single or any(session.errors):
        return None
    return session.stored_comparison(phase)


def explorer_result(session, phase: str, index: int | None):
    """What the explorer shows: the session's result for both traces (`index` None) or trace
    `index` alone; an AIE session's runs as the AIE screens' view."""
    from kerneldiff.core.session import AieResult

    result = session.result(phase, index)
    if isinstance(result, AieResult):
        from .screens.aie_views import AieView

        return AieView.of(result)
    return result


def load_summary(session, index: int) -> str:
    """The start screen's one line for loaded trace `index`."""
    t = session.loaded_trace(index)
    if not isinstance(t, LoadedTrace):      # an AIE run's own analysis
        from .screens.aie_views import card_summary

        return card_summary(t)
    s = (f"loaded: {t.kernels:,} kernels · {t.steps:,} step{'' if t.steps == 1 else 's'} · "
         f"{t.layers_per_step} layers/step")
    if t.warnings:
        s += f" · {t.warnings:,} warning{'' if t.warnings == 1 else 's'}"
    return s


def _one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())}"


class KernelDiffApp(App):
    TITLE = "kerneldiff"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {ExplorerCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit", tooltip="Quit kerneldiff (the terminal is restored)"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, tooltip="Quit kerneldiff, from anywhere"),
        Binding("question_mark", "help", "Help", key_display="?", tooltip="This list of keys"),
        Binding("p", "cycle_phase", "Phase", tooltip="Cycle the phase filter through the phases both traces have (all / prefill / decode / mixed; "
                "unknown: passes whose phase could not be read) and recompare"),
    ]

    # --- state (the screens watch it) --------------------------------------------------------------
    # one per trace: load status. Its keys (Enter, Esc) change with a status, not with progress: the
    # bindings are refreshed on a status change only (watch_traces), as each refresh rebuilds the
    # footer (~10 widgets restyled), ten times a second per trace while loading, against the loads
    traces: reactive[tuple[TraceState, ...]] = reactive(())
    phase: reactive[str] = reactive("all")                                  # of the result shown
    phases: reactive[tuple[str, ...]] = reactive(("all",), bindings=True)   # what `p` cycles through
    # what the explorer shows: a Comparison, one trace's TraceOverview (browse), an AieView or a RunsView
    result: reactive[Any] = reactive(None, always_update=True, bindings=True)
    browsing: reactive[int | None] = reactive(None)                          # the trace browsed on its own

    def __init__(self, paths: list[str], phase: str = "all", registry: str | None = None, use_cache: bool = True,
                 autoload: bool = True, loader: Callable[..., Any] | None = None, aie: dict[str, Any] | None = None,
                 session=None, all_passes: bool = False, result: Any = None) -> None:
        """`session`: a ready (probed) session to explore instead of one opened on `paths`; `loader`:
        a stand-in for the trace loader (tests); `all_passes`: compare every pass (--all-passes);
        `result`: what to show, made before the app (two runs, every rank summarised: a RunsView),
        so the app opens on its screen with nothing left to load."""
        super().__init__()
        self.started = time.perf_counter()
        # probes read only the head of each file (milliseconds), so the first frame can show them
        self.session = session if session is not None else explorer_session(
            [str(p) for p in paths], aie=aie, registry=registry, use_cache=use_cache, loader=loader,
            all_passes=all_passes)
        self.autoload = autoload
        self.first_frame_seconds: float | None = None
        self.last_export = None   # the path of the last table exported (e / E)
        self.exit_code = 0
        self._cancel: dict[int, threading.Event] = {}
        self._generation = 0
        self._next_phase: str | None = None   # asked for before the traces were loaded
        self._topics: dict[str, Notification] = {}   # the notification on screen for each topic
        self.set_reactive(KernelDiffApp.phase, phase)
        self.set_reactive(KernelDiffApp.traces, initial_states(self.session.errors) if result is None else
                          tuple(TraceState.loaded("") for _ in self.session.paths))
        self.set_reactive(KernelDiffApp.browsing, 0 if self.session.single else None)
        # a pair compared before: its stored comparison is the first screen (the start screen is never
        # made), and the traces load behind it, for what reads them (drill-downs, another phase)
        self.stored = result if result is not None else stored_result(self.session, phase) if autoload else None
        if self.stored is not None:
            self.set_reactive(KernelDiffApp.phases, tuple(self.session.phases()))
            self.set_reactive(KernelDiffApp.result, self.stored)

    # --- notifications that go stale ------------------------------------------------------------
    # A notice about a state ("phase decode: recomputing…", "loading cancelled", a filter's row
    # count) stayed up for its timeout after that state had ended, over the table it talked about.
    # Such a notice is posted under a topic: a newer one replaces it, and `withdraw` takes it down
    # when the state it describes ends.

    def notify_about(self, topic: str, message: str, **kwargs) -> None:
        self.withdraw(topic)
        kwargs.setdefault("timeout", self.NOTIFICATION_TIMEOUT)
        n = Notification(message, kwargs.pop("title", ""), kwargs.pop("severity", "information"),
                         kwargs.pop("timeout"), markup=kwargs.pop("markup", True))
        self._topics[topic] = n
        self.post_message(Notify(n))

    def withdraw(self, *topics: str) -> None:
        for topic in topics:
            n = self._topics.pop(topic, None)
            if n is not None and n in self._notifications:
                self._unnotify(n)

    @property
    def loading(self) -> frozenset[int]:
        """The traces being loaded now."""
        return frozenset(i for i, s in enumerate(self.traces) if s.status == LOADING)

    def watch_traces(self, old: tuple[TraceState, ...], new: tuple[TraceState, ...]) -> None:
        if [s.status for s in old] != [s.status for s in new]:
            self.refresh_bindings()

    def _set_trace(self, index: int, state: TraceState) -> None:
        states = list(self.traces)
        states[index] = state
        self.traces = tuple(states)

    # --- start ----------------------------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        if self.stored is not None:
            return self._result_screen()[1]()
        return StartScreen(self.session.paths, self.session.infos)

    def on_mount(self) -> None:
        if self.stored is not None:
            self.call_after_refresh(self._stored_shown)

    def _stored_shown(self) -> None:
        """The stored comparison is on the screen: now load the traces behind it."""
        if self.first_frame_seconds is None:
            self.first_frame_seconds = time.perf_counter() - self.started
            self.start_loading()

    def on_start_shown(self, _m: StartShown) -> None:
        if self.first_frame_seconds is None:
            self.first_frame_seconds = time.perf_counter() - self.started
            if self.autoload and self.result is None:
                self.start_loading()
                if not self.loading:  # every probe failed: say so on the error screen right away
                    self._after_loads()

    # --- loading ------------------------------------------------------------------------------
    def start_loading(self) -> None:
        """Load every trace that is neither loaded nor failed, each in its own thread worker."""
        self.withdraw("load")
        states = list(self.traces)
        for i, path in enumerate(self.session.paths):
            if states[i].status in (LOADING, LOADED, FAILED):
                continue
            cancel = threading.Event()
            self._cancel[i] = cancel
            states[i] = TraceState.loading(0.0, "starting", 0, self.session.infos[i].size)
            self.run_worker(partial(self._load, i, cancel), thread=True, exclusive=True, group=f"load-{i}",
                            exit_on_error=False, name=f"load {os.path.basename(path)}")
        self.traces = tuple(states)

    def _load(self, index: int, cancel: threading.Event) -> None:
        """Thread worker: load one trace through the session, posting throttled progress."""
        worker = get_current_worker()
        path = self.session.paths[index]
        last = [0.0, ""]

        def progress(fraction: float, stage: str, done: int, total: int) -> bool:
            if cancel.is_set() or worker.is_cancelled:
                return False
            now = time.perf_counter()
            if stage != last[1] or now - last[0] >= PROGRESS_INTERVAL:
                last[0], last[1] = now, stage
                self.post_message(LoadProgress(index, fraction, stage, done, total))
            return True

        try:
            self.session.load(index, progress, cancel)
            summary = load_summary(self.session, index)
        except LoadCancelled:
            self.post_message(TraceCancelled(index))
        except TraceError as e:
            self.post_message(TraceFailed(index, str(e)))
        except MemoryError:
            self.post_message(TraceFailed(index, f"{path}: out of memory while loading"))
        except Exception as e:  # never a traceback on the user's screen
            self.post_message(TraceFailed(index, f"{path}: unexpected error while loading ({_one_line(e)})"))
        else:
            self.post_message(TraceLoaded(index, summary))

    def on_load_progress(self, m: LoadProgress) -> None:
        if self.traces[m.index].status == LOADING:  # a late report from a cancelled load is dropped
            self._set_trace(m.index, TraceState.loading(m.fraction, m.stage, m.done, m.total))

    def on_trace_loaded(self, m: TraceLoaded) -> None:
        self._set_trace(m.index, TraceState.loaded(m.summary))
        self._after_loads()

    def on_trace_failed(self, m: TraceFailed) -> None:
        self._set_trace(m.index, TraceState.failed(m.message))
        self._after_loads()

    def on_trace_cancelled(self, m: TraceCancelled) -> None:
        self._set_trace(m.index, TraceState(CANCELLED))

    def on_cancel_requested(self, _m: CancelRequested) -> None:
        if not self.loading:
            return
        for i in self.loading:
            self._cancel[i].set()
        self.notify_about("load", "loading cancelled")

    def _after_loads(self) -> None:
        """Every load has ended: compare (or browse), or show what failed."""
        if self.loading:
            return
        states = self.traces
        if any(s.status == FAILED for s in states):
            if all(s.status in (LOADED, FAILED) for s in states):  # nothing left to load
                self.exit_code = 2
                self._show_errors()
            return
        if all(s.status == LOADED for s in states):
            if self.result is None:
                self.start_result(self.phase)
            elif self._next_phase is not None:   # asked for while a stored comparison's traces loaded
                phase, self._next_phase = self._next_phase, None
                self.notify_about("result", f"phase {phase}: recomputing…", timeout=4)
                self.start_result(phase)

    def _show_errors(self) -> None:
        from .screens.error import ErrorScreen, Failure

        if isinstance(self.screen, ErrorScreen):
            return
        failures = [Failure(i, path, s.message) for i, (path, s) in enumerate(zip(self.session.paths, self.traces))
                    if s.status == FAILED]
        ok = next((i for i, s in enumerate(self.traces) if s.status == LOADED), None)
        self.push_screen(ErrorScreen(failures, None if ok is None else (ok, self.session.label(ok))))

    def on_open_requested(self, _m: OpenRequested) -> None:
        """Enter on the start screen: open what is loaded, show errors, or (re)load."""
        if self.loading:
            return
        states = self.traces
        if self.result is not None:
            self._open_result()
        elif any(s.status == FAILED for s in states) and all(s.status in (LOADED, FAILED) for s in states):
            self._show_errors()
        elif all(s.status == LOADED for s in states):
            self.start_result(self.phase)  # loaded, but the comparison failed or was never made
        else:
            self.start_loading()

    def on_browse_requested(self, m: BrowseRequested) -> None:
        """Browse one loaded trace on its own (after the other failed to load)."""
        from .screens.error import ErrorScreen

        if isinstance(self.screen, ErrorScreen):
            self.pop_screen()
        self.browsing = m.index
        self.result = None
        self.start_result(self.phase)

    # --- comparing / browsing -------------------------------------------------------------------
    def start_result(self, phase: str) -> None:
        """Compute what the explorer shows for `phase` in a thread worker (a newer request wins)."""
        self._generation += 1
        self.run_worker(partial(self._result, phase, self.browsing, self._generation), thread=True, exclusive=True,
                        group="result", exit_on_error=False, name=f"compare {phase}")

    def _result(self, phase: str, index: int | None, generation: int) -> None:
        try:
            result = explorer_result(self.session, phase, index)
            phases = tuple(self.session.phases())
        except TraceError as e:
            self.post_message(ResultFailed(str(e)))
        except Exception as e:
            self.post_message(ResultFailed(f"comparison failed ({_one_line(e)})"))
        else:
            self.post_message(ResultReady(result, phase, phases, generation))

    def on_result_ready(self, m: ResultReady) -> None:
        from .screens.kernel import KernelDetailScreen

        if m.generation != self._generation:
            return  # a newer phase was asked for meanwhile
        self.withdraw("result")
        first = self.result is None
        if not first:
            # the phase changed: detail screens show the old phase's figures, so leave them
            while isinstance(self.screen, KernelDetailScreen):
                self.pop_screen()
        self.phases = m.phases
        self.phase = m.phase
        self.result = m.result  # the screens showing it update themselves
        if first or not self._result_open():
            self._open_result()

    def on_comparison_shown(self, m: ComparisonShown) -> None:
        """Store a comparison once it is on the screen (a pair opened again opens on it), in a thread
        worker (a stored one, or one whose traces are still loading, is not stored again)."""
        phase = m.comparison.phase
        self.run_worker(partial(self.session.keep_comparison, phase, m.comparison), thread=True,
                        group="keep", exit_on_error=False, name=f"keep {phase}")

    def on_result_failed(self, m: ResultFailed) -> None:
        self.withdraw("result")
        self.notify(m.message, title="Comparison failed", severity="error", markup=False, timeout=10)

    def _result_screen(self) -> tuple[type, Callable[[], Screen]]:
        """The screen that shows `result` (`result_screens`, by the result's type) and how to make it."""
        from kerneldiff.core.session import Comparison

        from .screens.main import MainScreen

        if isinstance(self.result, Comparison):   # asked first: it needs neither numpy nor the other screens
            return MainScreen, partial(MainScreen, self.session)
        for result_type, screen, make in result_screens():
            if isinstance(self.result, result_type):
                return screen, partial(make, self)
        return MainScreen, partial(MainScreen, self.session)     # nothing to show yet

    def _result_open(self) -> bool:
        screen = self._result_screen()[0]
        return any(isinstance(s, screen) for s in self.screen_stack)

    def _open_result(self) -> None:
        screen, make = self._result_screen()
        if not isinstance(self.screen, screen):
            self.push_screen(make())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cycle_phase":
            return self.result is not None and len(self.phases) > 1
        return True

    def action_cycle_phase(self) -> None:
        if self.result is None:
            self.notify("nothing loaded yet", severity="warning")
            return
        choices = list(self.phases)
        if len(choices) < 2:
            self.notify("no prefill/decode annotations: only 'all'", timeout=3)
            return
        nxt = choices[(choices.index(self.phase) + 1) % len(choices)] if self.phase in choices else choices[0]
        if not self.traces_ready:   # a stored comparison, its traces still loading: compared once they are
            self._next_phase = nxt
            self.notify_about("result", f"phase {nxt}: once the traces are loaded…", timeout=4)
            return
        self.notify_about("result", f"phase {nxt}: recomputing…", timeout=4)
        self.start_result(nxt)

    @property
    def traces_ready(self) -> bool:
        """Can what reads the traces run? Not while a stored comparison is shown before its traces
        are loaded (they load behind it; a failed load shows the error screen)."""
        return self.stored is None or all(s.status == LOADED for s in self.traces)

    def on_exported(self, m: Exported) -> None:
        self.last_export = m.path

    # --- help / quit ----------------------------------------------------------------------------
    def action_help(self) -> None:
        from .screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            # a screen with keys of its own (the runs screen) makes the help that lists them
            self.push_screen(getattr(self.screen, "help_screen", HelpScreen)())

    async def action_quit(self) -> None:
        for ev in self._cancel.values():
            ev.set()  # loader threads stop at their next batch, so exit does not wait on them
        self.exit(self.exit_code)


def result_screens() -> tuple[tuple[type, type, Callable[[KernelDiffApp], Screen]], ...]:
    """What shows each kind of result: (the result's type, its screen, how the app makes that screen)."""
    from kerneldiff.core.session import Comparison, TraceOverview

    from .run_views import RunsView
    from .screens.aie import AieScreen
    from .screens.aie_views import AieView
    from .screens.browse import BrowseScreen
    from .screens.main import MainScreen
    from .screens.runs import RunsScreen

    return ((Comparison, MainScreen, lambda app: MainScreen(app.session)),
            (TraceOverview, BrowseScreen, lambda app: BrowseScreen(app.session, app.browsing)),
            (AieView, AieScreen, lambda app: AieScreen(app.result)),
            (RunsView, RunsScreen, lambda app: RunsScreen(app.result)))


def runs_explorer(session, found) -> KernelDiffApp:
    """The explorer on two runs of rank traces: `session` (a RunSession, its ranks loaded) and its
    findings; it opens on the runs screen, and Enter on a rank ends it with that rank chosen."""
    from .run_views import RunsView

    app = KernelDiffApp(session.paths, session=session, result=RunsView.of(found))
    app.title = "kerneldiff — runs"
    return app


def explore_runs(session, found) -> tuple[str, int] | None:
    """Explore two runs (`runs_explorer`): the rank chosen, ("a" | "b", rank), or None on quit."""
    choice = runs_explorer(session, found).run()
    return choice if isinstance(choice, tuple) else None


def _collect_from_here() -> None:
    """The collector on, for the app about to run. `kerneldiff A B` imports and reads what the
    explorer shows with it off (cli.app_launch): what exists now lives as long as the explorer, so
    it is frozen (no pass of the collector walks it again; freed as ever once unreferenced)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _has_terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def run_app(paths: list[str], phase: str = "all", registry: str | None = None, use_cache: bool = True,
            aie: dict[str, Any] | None = None, session=None, before_start: Callable[[], Any] | None = None,
            all_passes: bool = False) -> int:
    """Open the explorer on one trace (browse) or two (compare). Returns the exit code.
    `aie`: GEMM shape / warm-up / iterations / clock for AMD AIE traces (keys of
    kerneldiff.core.aie.session.OPTION_KEYS; absent or None = not given). `session`: the explorer's
    session, opened already (else made here); `before_start`: waited for before the app is made (a
    comparison being stored beside it: Session.compare_ahead)."""
    from kerneldiff.core.session import PHASE_FILTERS

    if phase not in PHASE_FILTERS:
        print(f"kerneldiff: unknown phase {phase!r} (choose from {', '.join(PHASE_FILTERS)})", file=sys.stderr)
        return 2
    if not 1 <= len(paths) <= 2:
        print("kerneldiff: give one or two traces", file=sys.stderr)
        return 2
    if aie:
        from kerneldiff.core.session import aie_settings

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
    if before_start is not None:
        before_start()
    app = KernelDiffApp(paths, phase=phase, registry=registry, use_cache=use_cache, aie=aie, session=session,
                        all_passes=all_passes)
    if app.stored is None:   # a stored comparison: its traces are in the cache, and the first frame comes first
        app.session.warm_up()
    _collect_from_here()
    result = app.run()
    return int(result) if isinstance(result, int) else app.exit_code
