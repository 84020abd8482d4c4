"""Write the table on screen to CSV or JSON (raw values, names in full) and say where."""

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


def _unique(path: Path) -> Path:
    if not path.exists():
        return path
    stem, suffix = path.stem, path.suffix
    i = 2
    while (path.parent / f"{stem}-{i}{suffix}").exists():
        i += 1
    return path.parent / f"{stem}-{i}{suffix}"


def write_table(name: str, header: list[str], rows: list[list[Any]], fmt: str = "csv",
                directory: Path | None = None) -> Path:
    """Write rows under `header` to kerneldiff-<name>.<fmt> (never overwriting); return the path."""
    if fmt not in ("csv", "json"):
        raise ValueError(f"unknown export format {fmt!r}")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "table"
    d = directory or export_dir()
    d.mkdir(parents=True, exist_ok=True)
    path = _unique(d / f"kerneldiff-{safe}.{fmt}")
    if fmt == "csv":
        # backslashreplace: a file name that is not UTF-8 (in a column header) is written as its escape
        with open(path, "w", newline="", encoding="utf-8", errors="backslashreplace") as f:
            w = csv.writer(f)  # QUOTE_MINIMAL quotes the commas inside template kernel names
            w.writerow(header)
            for r in rows:
                w.writerow(["" if v is None else _plain(v) for v in r])
    else:
        records = [{h: _plain(v) for h, v in zip(header, r)} for r in rows]
        path.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8",
                        errors="backslashreplace")
    return path
