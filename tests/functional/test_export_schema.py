"""docs/EXPORT_SCHEMA.md is the one export schema: every table's CSV columns and JSON keys, from the
CLI (`--table`, CSV and JSON, two traces and runs) and the explorer (`e`/`E`), are the ones it lists,
in its order; and its rules hold on real traces: a missing value is an empty cell and null in JSON
(never "" or a 0.0 standing in for none), the `outside` row has no rank and no idle, a pair's fusion
group is the JSON document's 0-based index."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from kerneldiff.cli.main import main
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.report.run_tables import RUN_TABLES
from kerneldiff.core.report.table_names import MODEL_TABLES, TABLES

from conftest import real_trace

DOC = Path(__file__).resolve().parents[2] / "docs" / "EXPORT_SCHEMA.md"


def schema() -> dict[str, list[str]]:
    """table -> its columns, in order, as the document's tables list them (every `name` in the
    first cell of a row under a `### table` heading)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("### "):
            current = line[4:].strip()
            out[current] = []
        elif current and line.startswith("| `"):
            first = line.split(" | ")[0]
            out[current] += re.findall(r"`([^`]+)`", first)
    return out


def _cli_csv(args, capsys) -> list[list[str]]:
    assert main(args) == 0
    return list(csv.reader(io.StringIO(capsys.readouterr().out)))


def _cli_json(args, capsys) -> list[dict]:
    assert main([*args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_document_names_every_table():
    assert set(schema()) == set(TABLES) | set(MODEL_TABLES) | set(RUN_TABLES)
    assert all(schema().values())


@pytest.mark.slow   # every table twice through the CLI: ~6 s
def test_every_table_of_a_pair_from_the_cli(capsys):
    want = schema()
    base = ["compare", str(DEMO_A), str(DEMO_B), "--no-cache", "--table"]
    for name in (*TABLES, *MODEL_TABLES):
        rows = _cli_csv([*base, name], capsys)
        assert rows[0] == want[name], name
        records = _cli_json([*base, name], capsys)
        assert all(list(r) == want[name] for r in records), name
        assert not any(v == "" for r in records for v in r.values()), name      # missing: null


@pytest.mark.slow   # ~4 s
def test_every_table_of_runs_from_the_cli(tmp_path, capsys):
    from kerneldiff.core.synth.ranks import write_run

    write_run(tmp_path / "a", ranks=2, straggler=1, straggle_us=50, transfer_us=80, overlap_us=30)
    write_run(tmp_path / "b", ranks=2, straggler=0, straggle_us=120, transfer_us=60)
    want = schema()
    base = ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--no-cache", "--table"]
    for name in (*RUN_TABLES, "ledger", *MODEL_TABLES):
        rows = _cli_csv([*base, name], capsys)
        assert rows[0] == want[name], name
        records = _cli_json([*base, name], capsys)
        assert records and all(list(r) == want[name] for r in records), name
        assert not any(v == "" for r in records for v in r.values()), name


@pytest.mark.slow   # ~3.5 s
async def test_explorer_exports_follow_the_schema(demo_models, tmp_path, monkeypatch):
    """Summary (the ledger), Layers, Operations and Same kernels, as CSV and JSON: the schema's
    columns; JSON writes a missing value as null, as the CLI does (the `outside` row's rank)."""
    from tui_driver import demo_app, wait_for_main

    monkeypatch.setenv("KERNELDIFF_EXPORT_DIR", str(tmp_path))
    want = schema()
    app = demo_app(demo_models)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        for key, name in (("0", "ledger"), ("1", "layers"), ("2", "operations"), ("4", "same-kernels")):
            await pilot.press(key)
            await pilot.pause()
            await pilot.press("e")
            await pilot.pause()
            head = next(csv.reader(app.last_export.open()))
            assert head == want[name], name
            await pilot.press("E")
            await pilot.pause()
            records = json.loads(app.last_export.read_text())
            assert records and all(list(r) == want[name] for r in records), name
            assert not any(v == "" for r in records for v in r.values()), name
            if name == "layers":
                outside = next(r for r in records if r["layer"] == "outside")
                assert outside["rank"] is None and outside["a_idle_us"] is None and outside["b_idle_us"] is None


async def test_explorer_modules_export_follows_the_schema(demo_models, tmp_path, monkeypatch):
    """The Modules tab's `e`/`E`: the rows shown (the root and the expanded nodes) in the schema's
    columns, each the CLI's `--table modules` row of the same node."""
    from tui_driver import demo_app, wait_for_main, wait_for_screen

    from kerneldiff.core.report.module_table import module_table
    from kerneldiff.tui.screens.modules import ModulesScreen
    from kerneldiff.tui.widgets.result_table import ResultTable

    monkeypatch.setenv("KERNELDIFF_EXPORT_DIR", str(tmp_path))
    want = schema()["modules"]
    app = demo_app(demo_models)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_main(pilot)
        await pilot.press("m")
        await wait_for_screen(pilot, ModulesScreen)
        for _ in range(100):
            await pilot.pause(0.05)
            if app.screen.ready:
                break
        shown = [r.payload.path for r in app.screen.query_one("#modules", ResultTable).rows_shown]
        await pilot.press("e")
        await pilot.pause()
        with app.last_export.open() as fh:
            rows = list(csv.reader(fh))
        assert rows[0] == want
        assert [r[0] for r in rows[1:]] == shown
        await pilot.press("E")
        await pilot.pause()
        records = json.loads(app.last_export.read_text())
        assert all(list(r) == want for r in records)
        assert not any(v == "" for r in records for v in r.values())
        head, full = module_table(app.session.modules(app.result.phase))
        by_path = {r[0]: r for r in full}
        assert all([str(v) for v in by_path[r[0]]] == r for r in rows[1:])


@pytest.mark.slow
def test_rules_on_the_eager_and_compiled_pair(capsys):
    """One-sided pairs have no mean on the side that runs nothing (not 0.0); `outside` has no idle;
    `fusion_group` and `fusion_group_finding` are the JSON document's 0-based indices; the ledger's
    split is named as in the JSON document (count_gap_us, speed_gap_us) and sums to each gap."""
    pair = [str(real_trace("h100_llama_eager_sdpa.json.gz")), str(real_trace("h100_llama_compiled.json.gz"))]
    base = ["compare", *pair, "--table"]
    pairs = _cli_json([*base, "pairs"], capsys)
    one_sided = [p for p in pairs if p["a_kernel"] is None or p["b_kernel"] is None]
    assert one_sided
    for p in one_sided:
        for side in "ab":
            if p[f"{side}_kernel"] is None:
                assert p[f"{side}_count"] == 0 and p[f"{side}_mean_us"] is None and p[f"{side}_median_us"] is None
    assert main(["compare", *pair, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by = {(al["layer"], p["position"]): (p["group"], al["groups"]) for al in doc["alignments"] for p in al["pairs"]}
    grouped = [p for p in pairs if p["fusion_group"] is not None]
    assert grouped
    for p in grouped:
        group, groups = by[(p["layer"], p["position"])]
        assert p["fusion_group"] == group
        finding = groups[group]["finding"]
        assert p["fusion_group_finding"] == (finding if finding >= 0 else None)
    layers = _cli_json([*base, "layers"], capsys)
    outside = [r for r in layers if r["layer"] == "outside"]
    assert len(outside) == 1 and outside[0]["rank"] is None and outside[0]["a_idle_us"] is None
    ledger = _cli_json([*base, "ledger"], capsys)
    json_ledger = {e["cause"]: e for e in doc["ledger"]}
    for e in ledger:
        j = json_ledger[e["cause"]]
        assert e["count_gap_us"] == (None if j["count_gap_us"] is None else pytest.approx(j["count_gap_us"], abs=1e-4))
        if e["count_gap_us"] is not None:
            assert e["count_gap_us"] + e["speed_gap_us"] == pytest.approx(e["gap_us_a_minus_b"], abs=1e-3)
    assert sum(e["gap_us_a_minus_b"] for e in ledger) == pytest.approx(doc["wall"]["wall_gap_us"], abs=1e-2)
