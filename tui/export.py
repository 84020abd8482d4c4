"""Write the table on screen to CSV or JSON and say where.

A comparison's table is written in the CLI's `--table` schema (kerneldiff.core.report.tables: stable
a_/b_ keys, rounded figures, the `outside` row), its rows as the screen shows them (filter and
order); a table core has no flat form of (a drill-down's kernels, one trace's overview) is written
from its columns, under the same conventions."""

from __future__ import annotations

import csv
import json
import math
import os
import re
from pathlib import Path
from typing import Any

ENV_DIR = "KERNELDIFF_EXPORT_DIR"


def export_dir() -> Path:
    return Path(os.environ.get(ENV_DIR) or os.getcwd())


def _plain(v: Any) -> Any:
    if hasattr(v, "item"):  # numpy scalar (float32 too), then checked like a float
        v = v.item()
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    return v


# explorer table (TableSpec.name) -> the comparison's flat table of the same rows
CORE_TABLES = {"summary": "ledger", "layers": "layers", "operations": "operations", "fusion": "fusions", "same_kernels": "same-kernels",
               "warnings": "warnings", "timeline": "timeline", "gemm_shapes": "gemm-shapes",
               "attention_shapes": "attention-shapes"}


def _core_table(spec_name: str) -> str | None:
    if spec_name == "module_pairs" or (spec_name.startswith("layer") and spec_name.endswith("_pairs")):
        return "pairs"
    return CORE_TABLES.get(spec_name)


def table_export(comp, table) -> tuple[list[str], list[list[Any]]]:
    """Header and rows of the explorer table `table` (a ResultTable) as shown, in the export schema."""
    from kerneldiff.core.report.tables import OUTSIDE, table_records

    if table.spec.name == "modules":   # the module tree's nodes shown (their payloads), in its schema
        from kerneldiff.core.report.module_table import MODULE_COLUMNS, module_row

        return list(MODULE_COLUMNS), [module_row(r.payload) for r in table.rows_shown]
    name = _core_table(table.spec.name) if comp is not None else None
    if name is not None:
        head, records = table_records(comp, name)
        by_object: dict[int, list[list[Any]]] = {}
        for obj, row in records:
            by_object.setdefault(id(obj), []).append(row)
        rows: list[list[Any]] = []
        for r in table.rows_shown:
            objs = r.payload if isinstance(r.payload, tuple) else (r.payload,)
            for obj in objs:
                rows += by_object.get(id(obj), []) if obj is not None else []
        if name == "warnings":   # strings: their rows are themselves
            rows = [[r.payload] for r in table.rows_shown]
        if rows or not table.rows_shown:
            return head, rows
        # rows of another kind than the table's name says (a drill-down named like a tab): from the columns
    header, rows = table.export_records()
    layer = header.index("layer") if "layer" in header else -1
    out = []
    for row in rows:
        row = [_rounded(v) for v in row]
        if layer >= 0 and row[layer] is None:
            row[layer] = OUTSIDE
        out.append(row)
    return header, out


def _rounded(v: Any) -> Any:
    v = _plain(v)
    return round(v, 4) if isinstance(v, float) else v


def _create(path: Path):
    """A new file, opened for writing; the next free name (-2, -3, ...) when the name is taken.
    O_EXCL and O_NOFOLLOW: a symlink planted in a shared directory (even a dangling one, which
    `exists()` calls absent) is never followed, and no existing file is ever overwritten."""
    stem, suffix = path.stem, path.suffix
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for i in range(1, 10_000):
        candidate = path if i == 1 else path.parent / f"{stem}-{i}{suffix}"
        try:
            return candidate, os.open(candidate, flags, 0o644)
        except FileExistsError:
            continue
    raise FileExistsError(f"{path}: 10,000 exports of this table already there")


def write_table(name: str, header: list[str], rows: list[list[Any]], fmt: str = "csv",
                directory: Path | None = None) -> Path:
    """Write rows under `header` to kerneldiff-<name>.<fmt> (never overwriting); return the path."""
    if fmt not in ("csv", "json"):
        raise ValueError(f"unknown export format {fmt!r}")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "table"
    d = directory or export_dir()
    d.mkdir(parents=True, exist_ok=True)
    path, fd = _create(d / f"kerneldiff-{safe}.{fmt}")
    # backslashreplace: a file name that is not UTF-8 (in a column header) is written as its escape
    with open(fd, "w", newline="", encoding="utf-8", errors="backslashreplace") as f:
        if fmt == "csv":
            w = csv.writer(f)  # QUOTE_MINIMAL quotes the commas inside template kernel names
            w.writerow(header)
            for r in rows:
                w.writerow(["" if v is None else _plain(v) for v in r])
        else:
            from kerneldiff.core.report.tables import json_records

            records = json_records(header, [[_plain(v) for v in r] for r in rows])
            f.write(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    return path


def write_reports(session, comparison, directory: Path | None = None) -> tuple[Path, Path]:
    """The HTML report of a comparison (the pass with the largest wall-clock gap drawn to scale) and
    the Perfetto file of its phase (every pass, gzipped), as kerneldiff-report-<phase>.html and
    kerneldiff-pair-<phase>.json.gz (never overwriting); returns both paths. Runs in a worker thread:
    the Perfetto file of a long run takes seconds."""
    import gzip

    from kerneldiff.core.numbers import safe_text
    from kerneldiff.core.report.html import render_html
    from kerneldiff.core.report.perfetto import write_perfetto

    d = directory or export_dir()
    d.mkdir(parents=True, exist_ok=True)
    phase = re.sub(r"[^A-Za-z0-9_.-]+", "_", comparison.phase)
    drawn = comparison.gap_pass()
    page = render_html(comparison, session.pass_pairs(comparison, [drawn]) if drawn is not None else None)
    html_path, fd = _create(d / f"kerneldiff-report-{phase}.html")
    with open(fd, "w", encoding="utf-8") as f:
        f.write(safe_text(page))
    pair_path, fd = _create(d / f"kerneldiff-pair-{phase}.json.gz")
    with open(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6) as f:
        write_perfetto(session.pass_pairs(comparison), f)
    return html_path, pair_path
