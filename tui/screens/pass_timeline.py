"""One forward pass as a text-mode timeline: each side's kernels as blocks, one line per stream, the
launch calls marked on a line above them. +/- zoom, h/l (or ←/→ with shift) pan, ←/→ walk the
kernels, ↑/↓ switch side, 0 fits the pass, Enter opens the selected kernel's detail.

Presentation only: the kernels of the pass, by stream, come from the session
(kerneldiff.core.analysis.pass_lanes), read in a thread worker once the screen is up.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from kerneldiff.core.session import PassKernels
from kerneldiff.core.session import KernelRef

from ..text import DIM, SIDE_LETTER, SIDE_STYLE, fmt_us, literal, readable, shorten, span
from ..widgets.footer import Footer
from ..widgets.header import Breadcrumb
from .base import ExplorerScreen

LABEL = 7   # the left margin: "A s7   " (side and stream)
MAX_LANES = 8    # streams drawn per side, busiest first (real passes use 1-4): 200,000 streams drew a line each


# A cell's glyph says how much of its time the lane is busy, in eighths (▁ to █): at full view a pass
# that is 91% idle drew as an almost solid strip, every cell holding some kernel drawn full, until
# zoomed about 5x. A kernel starting in a cell that the one before it filled shows as a boundary (▌).
LEVELS = " ▁▂▃▄▅▆▇█"
IDLE = "·"      # a cell no kernel of the lane touches: idle reads as such, apart from a thin ▁
LEGEND = f"▁…█ busy share · ▌ kernel start · {IDLE} idle · ╷ launch · ▓ selected"


def lane_cells(start: np.ndarray, end: np.ndarray, off: float, upc: float, n: int) -> list[str]:
    """The `n` cells (each `upc` µs from `off`) of one stream's kernels [start, end)."""
    busy = np.zeros(n)
    starts = set()
    for s0, e0 in zip(start.tolist(), end.tolist()):
        a = int((s0 - off) // upc)
        b = max(int(np.ceil((e0 - off) / upc)), a + 1)
        if b <= 0 or a >= n:
            continue
        if 0 <= a < n:
            starts.add(a)
        for c in range(max(a, 0), min(b, n)):
            lo, hi = off + c * upc, off + (c + 1) * upc
            busy[c] += max(min(e0, hi) - max(s0, lo), 0.0)
    cells = []
    for c in range(n):
        frac = min(busy[c] / upc, 1.0) if upc > 0 else 0.0
        if frac <= 0:
            # a kernel shorter than the float resolution still shows
            cells.append("▁" if c in starts else IDLE)
            continue
        level = LEVELS[max(1, min(8, int(np.ceil(frac * 8))))]
        full_before = c > 0 and cells[c - 1] == "█"
        cells.append("▌" if level == "█" and c in starts and full_before else level)
    return cells


def _runs(cells: list[str]) -> list[tuple[str, int]]:
    """Consecutive equal glyphs as (glyph, count)."""
    out: list[tuple[str, int]] = []
    for c in cells:
        if out and out[-1][0] == c:
            out[-1] = (c, out[-1][1] + 1)
        else:
            out.append((c, 1))
    return out


class PassTimeline(Widget, can_focus=True):
    """Both sides' kernels of one pass on a common time scale (µs per cell)."""

    DEFAULT_CSS = "PassTimeline { height: 1fr; }"

    def __init__(self, sides: list[PassKernels], id: str | None = None) -> None:
        super().__init__(id=id)
        self.sides = sides
        self.offset_us = 0.0
        self.us_per_cell = 1.0
        self.cursor = (0, 0)     # (side, kernel)
        self._fitted = False

    # --- geometry -------------------------------------------------------------------------
    @property
    def cells(self) -> int:
        return max(self.size.width - LABEL, 1)

    def show(self, sides: list[PassKernels]) -> None:
        """Draw these sides (read after the widget was mounted), fitted to the width."""
        self.sides = sides
        self.cursor = (0, 0)
        if self.size.width > LABEL:
            self._fitted = True
            self.fit()
        else:
            self.refresh()

    def fit(self) -> None:
        longest = max((s.span_us for s in self.sides), default=0.0)
        self.us_per_cell = max(longest / self.cells, 1e-3)
        self.offset_us = 0.0
        self.refresh()

    def on_resize(self) -> None:
        if not self._fitted and self.size.width > LABEL:
            self._fitted = True
            self.fit()

    def zoom(self, factor: float) -> None:
        # zoom about the selected kernel when there is one (it stays where it is on the screen)
        c = self.selected()
        at = float(c[0].start[c[1]]) if c else self.offset_us + self.cells * self.us_per_cell / 2
        col = (at - self.offset_us) / self.us_per_cell
        self.us_per_cell = max(self.us_per_cell * factor, 1e-3)
        self.offset_us = max(at - col * self.us_per_cell, 0.0)
        self.refresh()

    def pan(self, cells: int) -> None:
        self.offset_us = max(self.offset_us + cells * self.us_per_cell, 0.0)
        self.refresh()

    def selected(self) -> tuple[PassKernels, int] | None:
        s, i = self.cursor
        if s < len(self.sides) and 0 <= i < len(self.sides[s].rows):
            return self.sides[s], i
        return None

    def move(self, d: int) -> None:
        s, i = self.cursor
        n = len(self.sides[s].rows) if s < len(self.sides) else 0
        if n:
            self.cursor = (s, min(max(i + d, 0), n - 1))
            self._keep_in_view()
        self.refresh()

    def switch_side(self, d: int) -> None:
        if not self.sides:
            return
        s, i = self.cursor
        t = min(max(s + d, 0), len(self.sides) - 1)
        if t != s and len(self.sides[t].rows):
            # the other side's kernel nearest in time
            at = float(self.sides[s].start[i]) if self.selected() else self.offset_us
            j = int(np.clip(np.searchsorted(self.sides[t].start, at), 0, len(self.sides[t].rows) - 1))
            self.cursor = (t, j)
            self._keep_in_view()
        self.refresh()

    def _keep_in_view(self) -> None:
        c = self.selected()
        if c is None:
            return
        st, en = float(c[0].start[c[1]]), float(c[0].end[c[1]])
        width = self.cells * self.us_per_cell
        if st < self.offset_us or st >= self.offset_us + width:
            self.offset_us = max(st - width / 4, 0.0)
        elif en > self.offset_us + width and en - st < width:
            self.offset_us = max(en - width * 0.9, 0.0)

    # --- drawing ----------------------------------------------------------------------------
    def lines(self) -> list[Text]:
        out: list[Text] = []
        n, off, upc = self.cells, self.offset_us, self.us_per_cell
        sel = self.selected()
        for si, s in enumerate(self.sides):
            style = f"bold {SIDE_STYLE[s.side]}"
            head = span(f"{SIDE_LETTER[s.side]} ", style)
            head.append(literal(s.label, style))
            idle = s.idle_us
            head.append(f"  span {fmt_us(s.span_us)}  idle {fmt_us(idle)}"
                        + (f" ({idle / s.span_us:.0%})" if s.span_us > 0 else "") + f"  {len(s.rows)} kernels", style=DIM)
            out.append(head)
            # launch calls: ╷ at the start of each launch call in view
            marks = [" "] * n
            for t in s.launch[~np.isnan(s.launch)].tolist():
                c = int((t - off) // upc)
                if 0 <= c < n:
                    marks[c] = "╷"
            line = span("launch ".rjust(LABEL), DIM)
            line.append("".join(marks), style=DIM)
            out.append(line)
            shown = set(s.busiest[:MAX_LANES])
            if sel is not None and sel[0] is s:
                shown.add(int(s.stream[sel[1]]))      # the selected kernel's stream is always drawn
            for stream in sorted(shown):
                cells = lane_cells(s.start[s.lanes[stream]], s.end[s.lanes[stream]], off, upc, n)
                row = Text(f"s{stream}".rjust(LABEL - 1)[: LABEL - 1] + " ")
                for glyph, run in _runs(cells):   # idle dim, busy in the side's colour
                    row.append(glyph * run, style=DIM if glyph == IDLE else SIDE_STYLE[s.side])
                if sel is not None and sel[0] is s and int(s.stream[sel[1]]) == stream:
                    i = sel[1]
                    a = int((float(s.start[i]) - off) // upc)
                    b = max(int(np.ceil((float(s.end[i]) - off) / upc)), a + 1)
                    a, b = max(a, 0), min(b, n)
                    if a < b:
                        # the selected block: ▓ and reverse video (reads without colour too)
                        row = row[: LABEL + a] + Text("▓" * (b - a), style="reverse bold") + row[LABEL + b:]
                out.append(row)
            hidden = len(s.streams) - len(shown)
            if hidden > 0:
                out.append(Text(f"{'':{LABEL}}… {hidden:,} more streams not drawn "
                                f"({s.share_outside(shown):.0%} of the kernel time)",
                                style=DIM))
            if si + 1 < len(self.sides):
                out.append(Text(""))
        # the time axis
        axis = Text(" " * LABEL)
        ticks = Text(" " * LABEL)
        step = max(n // 4, 10)
        for c in range(0, n, step):
            label = fmt_us(off + c * upc)
            if c + len(label) > n:   # a tick whose time would not fit is left out
                break
            axis.append(("┬" + " " * (step - 1))[: min(step, n - c)], style=DIM)
            ticks.append(label.ljust(step)[: min(step, n - c)], style=DIM)
        out += [axis, ticks, Text(" " * LABEL + LEGEND, style=DIM)]
        return out

    def render(self) -> Text:
        return Text("\n").join(self.lines())


class PassTimelineScreen(ExplorerScreen):
    """One pass of the comparison, A above B, kernels as blocks per stream."""

    BINDINGS = [
        Binding("plus,equals_sign", "zoom(0.5)", "Zoom in", key_display="+"),
        Binding("minus", "zoom(2.0)", "Zoom out", key_display="-", show=False),
        Binding("h,shift+left", "pan(-8)", "Pan left", show=False),
        Binding("l,shift+right", "pan(8)", "Pan right", show=False),
        Binding("left", "move(-1)", "Previous kernel", show=False),
        Binding("right", "move(1)", "Next kernel", show=False),
        Binding("up", "side(-1)", "Side A", show=False),
        Binding("down", "side(1)", "Side B", show=False),
        Binding("0", "fit", "Fit the pass", show=False),
        Binding("enter", "open_kernel", "Kernel detail"),
    ]

    DEFAULT_CSS = """
    PassTimelineScreen #selected { height: 2; padding: 0 1; background: $boost; }
    PassTimelineScreen PassTimeline { padding: 0 1; }
    """

    def __init__(self, session, comp, number: int, passes: tuple[object | None, object | None], crumbs: list[str]) -> None:
        super().__init__()
        self.session = session
        self.comp = comp
        self.number = number
        self.passes = passes
        self.crumbs = crumbs
        self.ready = False       # the pass's kernels are read and drawn

    class SidesRead(Message):
        """Both sides' kernels of the pass, read by the worker."""

        def __init__(self, sides: list[PassKernels]) -> None:
            super().__init__()
            self.sides = sides

    def compose(self) -> ComposeResult:
        yield Breadcrumb(*self.crumbs)
        yield PassTimeline([], id="pass-timeline")
        yield Static(Text("reading the pass's kernels…", style=DIM), id="selected")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(PassTimeline).focus()
        self._read_sides()

    @work(thread=True, exclusive=True, exit_on_error=False, group="pass-kernels", name="pass kernels")
    def _read_sides(self) -> None:
        try:
            sides = [self.session.pass_kernels(i, int(p.pass_), self.comp.phase, getattr(self.comp, side).label)
                     for i, (side, p) in enumerate(zip(("a", "b"), self.passes)) if p is not None]
        except Exception as e:     # said on screen, never a traceback
            self.app.notify(f"pass {self.number}: could not read its kernels ({type(e).__name__}: {e})",
                            severity="error", markup=False)
            return
        self.post_message(self.SidesRead(sides))

    def on_pass_timeline_screen_sides_read(self, m: SidesRead) -> None:
        self.timeline.show(m.sides)
        self.ready = True
        self._show_selected()

    @property
    def sides(self) -> list[PassKernels]:
        return self.timeline.sides

    def current_table(self):
        return None

    @property
    def timeline(self) -> PassTimeline:
        return self.query_one(PassTimeline)

    def action_zoom(self, factor: float) -> None:
        self.timeline.zoom(factor)

    def action_pan(self, cells: int) -> None:
        self.timeline.pan(cells)

    def action_move(self, d: int) -> None:
        self.timeline.move(d)
        self._show_selected()

    def action_side(self, d: int) -> None:
        self.timeline.switch_side(d)
        self._show_selected()

    def action_fit(self) -> None:
        self.timeline.fit()

    def _show_selected(self) -> None:
        if not self.ready:
            return
        c = self.timeline.selected()
        t = Text()
        if c is None:
            t.append("no kernels in this pass", style=DIM)
        else:
            s, i = c
            name = self.session.kernel_name(KernelRef(0 if s.side == "a" else 1, int(s.rows[i])))
            t.append(f"{SIDE_LETTER[s.side]} #{i + 1} ", style=f"bold {SIDE_STYLE[s.side]}")
            t.append(literal(shorten(readable(name), max(self.size.width - 12, 20))))
            t.append(f"\nstart {fmt_us(float(s.start[i]))}  dur {fmt_us(float(s.end[i] - s.start[i]))}  "
                     f"stream {int(s.stream[i])}  ←/→ kernel ↑/↓ side +/- zoom h/l pan 0 fit", style=DIM)
        self.query_one("#selected", Static).update(t)

    def action_open_kernel(self) -> None:
        from .kernel import KernelDetailScreen, _short, kernel_ref

        c = self.timeline.selected()
        if c is None:
            return
        s, i = c
        index = 0 if s.side == "a" else 1
        row = int(s.rows[i])
        detail = self.session.kernel_detail(KernelRef(index, row))
        name = detail.name
        phase = self.comp.phase
        ref = kernel_ref(self.session, index, s.label, name, detail.category, detail.rule,
                         self.session.name_durations(KernelRef(index, row), phase), row, detail)
        ref.count_note = "launches of this name in the trace" if phase == "all" else \
            f"launches of this name in the {phase} phase"
        context = span(f"Pass {self.number}", "bold")
        context.append(f"   {SIDE_LETTER[s.side]} kernel {i + 1} of {len(s.rows)}, start {fmt_us(float(s.start[i]))}")
        self.app.push_screen(KernelDetailScreen([ref], context, [*self.crumbs, _short(name)]))
