"""One trace on the start screen: what the probe found, then the load progress."""

from __future__ import annotations

import os

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from kerneldiff.core.session import TraceInfo

from ..state import CANCELLED, FAILED, LOADED, LOADING, TraceState
from ..text import DIM, SIDE_STYLE, fmt_bytes, literal, span
from .load_bar import LoadBar


def _device_line(info: TraceInfo) -> str:
    d = info.device
    bits = []
    if isinstance(d.get("numSms"), int):
        bits.append(f"{d['numSms']} {'CUs' if info.vendor == 'AMD' else 'SMs'}")
    if info.memory_gb:
        bits.append(f"{info.memory_gb} GB")
    if isinstance(d.get("computeMajor"), int) and isinstance(d.get("computeMinor"), int):
        bits.append(f"cc {d['computeMajor']}.{d['computeMinor']}")
    if isinstance(d.get("warpSize"), int):
        bits.append(f"warp {d['warpSize']}")
    if info.device_count > 1:
        bits.append(f"{info.device_count} devices")
    return " · ".join(bits) or "no device properties"


def _ranks_line(info: TraceInfo) -> str:
    dist = info.distributed
    if not dist:
        return "single process"
    rank, world = dist.get("rank"), dist.get("world_size")
    s = f"rank {rank} of {world}" if rank is not None and world is not None else "distributed"
    if dist.get("backend"):
        s += f" ({dist['backend']})"
    return s


def _yes(v: bool | None) -> str:
    return "?" if v is None else ("yes" if v else "no")


def info_table(info: TraceInfo) -> Table:
    g = Table.grid(padding=(0, 1))
    g.add_column(style="bold", no_wrap=True)
    g.add_column(overflow="fold")
    g.add_row("GPU", literal(info.gpu or "unknown"))
    g.add_row("Vendor", literal(info.vendor))
    g.add_row("File", Text(f"{fmt_bytes(info.size)}" + (" gzip" if info.compressed else " json")))
    g.add_row("Kind", literal(info.kind + ("" if info.metadata_complete else " (metadata incomplete)")))
    g.add_row("Device", literal(_device_line(info)))
    g.add_row("Ranks", literal(_ranks_line(info)))
    rt = " · ".join(f"{k.replace('_version', '')} {v}" for k, v in info.runtime.items())
    g.add_row("Runtime", literal(rt or "—"))
    g.add_row("Stacks", Text(f"with_stack {_yes(info.with_stack)} · shapes {_yes(info.record_shapes)}"))
    return g


class TraceCard(Vertical):
    """Probe metadata of one trace, a progress bar and a status line (`show` a TraceState)."""

    DEFAULT_CSS = """
    TraceCard { border: round $primary; height: auto; padding: 0 1; width: 1fr; }
    TraceCard.-error { border: round $error; }
    TraceCard.-done { border: round $success; }
    TraceCard > .title { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    TraceCard > LoadBar { margin-top: 1; }
    TraceCard > .status { height: auto; }
    """

    def __init__(self, side: str, path: str, info: TraceInfo | None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.side = side
        self.path = path
        self.info = info

    def compose(self) -> ComposeResult:
        title = span(f"{self.side.upper()} ", f"bold {SIDE_STYLE.get(self.side, '')}")
        title.append(literal(os.path.basename(self.path) or self.path, "bold"))
        yield Static(title, classes="title")
        if self.info is not None:
            yield Static(info_table(self.info), classes="info")
        yield LoadBar()
        yield Static(Text("waiting", style=DIM), classes="status")

    def show(self, state: TraceState) -> None:
        if state.status == LOADING:
            self.set_progress(state.fraction, state.stage, state.done, state.total)
        elif state.status == LOADED:
            self.set_done(state.message)
        elif state.status == FAILED:
            self.set_error(state.message)
        elif state.status == CANCELLED:
            self.set_status(Text("cancelled — Enter loads again"))
        else:
            self.set_status(Text("waiting", style=DIM))

    def set_progress(self, fraction: float, stage: str, done: int, total: int) -> None:
        self.query_one(LoadBar).update(round(100 * max(0.0, min(1.0, fraction)), 1))
        text = span(stage, "bold")
        if total:
            text.append(f"  {fmt_bytes(done)} of {fmt_bytes(total)}")
        self.query_one(".status", Static).update(text)
        self.remove_class("-error", "-done")

    def set_status(self, text: Text | str, state: str = "") -> None:
        self.query_one(".status", Static).update(text if isinstance(text, Text) else Text(text))
        self.remove_class("-error", "-done")
        if state:
            self.add_class(f"-{state}")

    def set_error(self, message: str) -> None:
        self.query_one(LoadBar).update(0)
        self.set_status(literal(message, "bold red"), "error")

    def set_done(self, summary: str) -> None:
        self.query_one(LoadBar).update(100)
        self.set_status(Text(summary), "done")
