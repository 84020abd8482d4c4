"""Screens of the explorer (one App, `kerneldiff.tui.app.KernelDiffApp`), module by module. Each kind
of result opens on its own top screen (`kerneldiff.tui.app.result_screens`); the others are reached
from it.

Before a result:
- start.py: `StartScreen`, what each trace is (from the probe) and its load progress
- error.py: `ErrorScreen`, a trace that failed to load, and the way on (browse the other)

Two GPU traces compared:
- main.py: `MainScreen`, the comparison in tabs (top screen of a `Comparison`)
- layer.py: `LayerScreen`, one layer's aligned kernel pairs
- drill.py: `SideKernelsScreen`, an operation's (or the time outside layers') kernels on each side
- shapes.py: `ShapeKernelsScreen`, the kernels that ran one shape
- modules.py: `ModulesScreen`, the module tree and the host hotspots
- module_pairs.py: `ModulePairsScreen`, one module's kernel pairs
- pass_timeline.py: `PassTimelineScreen`, one forward pass as a timeline
- kernel.py: `KernelDetailScreen`, one kernel (or a pair) in full

One GPU trace on its own:
- browse.py: `BrowseScreen` (top screen of a `TraceOverview`), `BrowseLayerScreen`

AMD AIE (NPU) runs:
- aie.py: `AieScreen` (top screen of an `AieView`), `AieCoreScreen`; its views in aie_views.py

Two runs of rank traces:
- runs.py: `RunsScreen` (top screen of a `RunsView`), `RunsHelpScreen`; its views in ../run_views.py

Everywhere:
- help.py: `HelpScreen`, every key binding
- base.py: `ExplorerScreen` and `TabbedExplorerScreen`, what the screens above share (back, filter,
  sort, export; tabs)
"""
