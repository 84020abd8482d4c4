"""What every report subcommand shares: the options checked before any trace is read
(--fusion-param, --peaks/--peak) and where a report goes (stdout or -o, CSV tables, trailing blanks
trimmed). `compare` of two traces and of two runs both use it, so neither imports the other's privates."""

from __future__ import annotations

import re
import sys

from kerneldiff.core.errors import shown_path
from kerneldiff.core.numbers import safe_text, strict_json

from .args import UsageError


def fusion_overrides(items: list[str]) -> dict[str, float | bool]:
    """--fusion-param items, checked before any trace is read (kerneldiff.core.compare.fusion_model)."""
    if not items:   # nothing to check: the fusion model (and the result types it imports) loads later
        return {}
    from kerneldiff.core.session import check_overrides

    raw = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep:
            raise UsageError(f"--fusion-param wants KEY=VALUE, got {it!r}")
        raw[k.strip()] = v
    try:
        return check_overrides(raw)
    except ValueError as e:
        raise UsageError(f"--fusion-param {e}") from None


def peak_table(args):
    """The PeakTable --peaks / --peak ask for (None: the shipped table as it is)."""
    path, items = getattr(args, "peaks", None), getattr(args, "peak", None) or []
    if not path and not items:
        return None
    from kerneldiff.core.session import PeakTable

    try:
        return PeakTable.load(path, items)
    except ValueError as e:   # the message names --peak KEY or the file and entry
        raise UsageError(str(e)) from None


# blanks Rich pads a line with, before any closing colour codes
_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$")


def without_trailing_blanks(text: str) -> str:
    """Rich's captured output without the blanks it pads lines with (titles, wrapped evidence)."""
    return "\n".join(_TRAILING.sub(r"\1", line) for line in text.split("\n"))


def emit(text: str, path: str | None) -> int:
    # safe_text: a file name that is not UTF-8 (in a CSV header, a label) is written as its escape
    if path:
        from pathlib import Path   # only when writing a file: output to stdout needs none of it

        Path(path).write_text(safe_text(text) + "\n", encoding="utf-8")
        print(f"wrote {shown_path(path)}", file=sys.stderr)
    else:
        sys.stdout.write(safe_text(text) + "\n")
    return 0


def table_json(head, rows) -> str:
    """A table's rows as JSON objects, a missing value as null (CSV writes an empty cell)."""
    from kerneldiff.core.report.tables import json_records

    return strict_json(json_records(head, rows))


def rows_csv(head, rows) -> str:
    """A table (header and rows) as RFC 4180 CSV text."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    w.writerow(head)
    w.writerows(rows)
    return buf.getvalue()


def csv_text(cmp, name: str) -> str:
    from kerneldiff.core.report.tables import table

    return rows_csv(*table(cmp, name))


def csv_files(output: str | None, names, text_of) -> int:
    """--table all: one CSV file per table beside -o's stem (out.csv -> out.operations.csv, ...)."""
    if not output:
        print("kerneldiff: --table all with CSV needs -o FILE (one file per table)", file=sys.stderr)
        return 2
    from pathlib import Path

    base = Path(output)
    stem = base.name[:-4] if base.name.endswith(".csv") else base.name
    for name in names:
        p = base.with_name(f"{stem}.{name}.csv")
        p.write_text(safe_text(text_of(name)), encoding="utf-8")
        print(f"wrote {shown_path(p)}", file=sys.stderr)
    return 0
