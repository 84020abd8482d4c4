"""`h` in the explorer: the HTML report and the Perfetto file of the comparison on screen, in its
phase, written by a worker thread; the explorer says where, and the files hold that comparison."""

from __future__ import annotations

import gzip
import json

import pytest

from kerneldiff.core.report import format as fmt
from kerneldiff.core.report.perfetto import read_back
from kerneldiff.tui.screens.main import MainScreen
from tui_driver import demo_app, wait_for_main, wait_until


@pytest.mark.slow
async def test_h_writes_the_report_and_the_pair_of_the_current_phase(demo_models, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELDIFF_EXPORT_DIR", str(tmp_path))
    app = demo_app(demo_models)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("p")                      # all -> the next phase
        await wait_until(pilot, lambda: app.phase != "all" and not any(w.is_running for w in app.workers))
        phase = app.phase
        await pilot.press("h")
        await wait_until(pilot, lambda: app.last_export is not None and not any(w.is_running for w in app.workers))
        assert isinstance(app.screen, MainScreen)
        cmp = app.screen.comparison
        page = tmp_path / f"kerneldiff-report-{phase}.html"
        pair = tmp_path / f"kerneldiff-pair-{phase}.json.gz"
        assert app.last_export == page
        text = page.read_text(encoding="utf-8")
        assert f"phase <b>{phase}</b>" in text and fmt.ratio(cmp.ratio) in text
        doc = json.loads(gzip.decompress(pair.read_bytes()))
        back = read_back(doc)
        assert back[doc["otherData"]["a"]][0] == cmp.a.kernels and back[doc["otherData"]["b"]][0] == cmp.b.kernels
        # again: new names, nothing overwritten
        await pilot.press("h")
        await wait_until(pilot, lambda: app.last_export != page and not any(w.is_running for w in app.workers))
        assert app.last_export.name == f"kerneldiff-report-{phase}-2.html" and page.exists()
