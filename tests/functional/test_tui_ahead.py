"""The explorer on a pair it never saw: a child forked before Textual loads and compares the pair as
the CLI would (Session.compare_ahead), the explorer's progress bars follow the child, and the
comparison it shows is the one loading in one process gives. Run in a fresh interpreter: the fork
needs a process holding one thread, as `kerneldiff A B` is before it imports Textual."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from kerneldiff.core.demo import DEMO_A, DEMO_B

SCRIPT = r"""
import asyncio, json, shutil, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
tmp = Path(sys.argv[2])
paths = []
for name, src in (("a", sys.argv[3]), ("b", sys.argv[4])):
    dst = tmp / f"{name}-{Path(src).name}"
    shutil.copy(src, dst)
    paths.append(str(dst))

from kerneldiff.tui.app import explorer_session
s = explorer_session(paths)
wait = s.compare_ahead("all")
plan = wait()
ahead = s._ahead

from kerneldiff.core import comparison_cache as cc
from kerneldiff.core.session import Session
from kerneldiff.tui.app import KernelDiffApp
from tui_driver import wait_until

stages = []

shown_progress = KernelDiffApp.on_load_progress

def recording(self, m):
    stages.append((m.index, m.stage))
    shown_progress(self, m)

KernelDiffApp.on_load_progress = recording

async def main():
    app = KernelDiffApp(paths, session=s)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: app.result is not None, timeout=120)
        return app.result

shown = asyncio.run(main())
ahead.join(60)   # the child stores the comparison after sending it
alone = Session(paths, use_cache=False)
alone.load_all()
print(json.dumps({"plan": plan, "child_reaped": ahead is not None and ahead._beside.pid == 0,
                  "ahead_left": s._ahead is not None, "stages": sorted(set(stages)),
                  "same": cc.dumps(shown) == cc.dumps(alone.compare("all")),
                  "stored": len(list(cc.cache_dir().glob(f"*{cc.SUFFIX}")))}))
"""


def test_the_explorer_follows_the_child_to_the_comparison(tmp_path):
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    r = subprocess.run([sys.executable, "-c", SCRIPT, tests, str(tmp_path), str(DEMO_A), str(DEMO_B)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["plan"] is False                 # nothing cached: the explorer's loads follow the child
    assert out["child_reaped"] and not out["ahead_left"]
    assert out["same"] and out["stored"] == 1   # the child's comparison, stored once
    # each card's bar showed progress (the child's, read from the board, then the cache's "done")
    assert {i for i, _ in out["stages"]} == {0, 1}
