"""No module of the package imports Textual's private API (a module or name starting with `_`,
e.g. `textual._segment_tools`, `textual.widgets._data_table`): those change without notice between
Textual releases, and keeping clear of them is what lets pyproject follow Textual's releases.
Read from the source with `ast`, lazy imports inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = ("core", "tui", "cli")


def private_textual_imports(source: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "textual" and any(p.startswith("_") for p in parts[1:]):
                out.append(name)
    return out


def test_the_rule_catches_what_it_is_for():
    assert private_textual_imports("from textual._segment_tools import line_crop") == \
        ["textual._segment_tools", "textual._segment_tools.line_crop"]
    assert private_textual_imports("from textual.widgets._data_table import RowKey")
    assert private_textual_imports("import textual._two_way_dict")
    assert private_textual_imports("def f():\n    from textual.widget import _Styled\n")
    assert not private_textual_imports("from textual.widgets import DataTable\nfrom textual.strip import Strip")


@pytest.mark.slow
def test_no_private_textual_import_anywhere():
    files = [p for d in PACKAGE_DIRS for p in (ROOT / d).rglob("*.py")]
    assert len(files) > 50
    found = {str(p.relative_to(ROOT)): hits for p in files
             if (hits := private_textual_imports(p.read_text(encoding="utf-8")))}
    assert not found, f"private Textual API imported: {found}"
    # and no string-built import of it either (importlib.import_module("textual._…"))
    text = {str(p.relative_to(ROOT)) for p in files if "textual._" in p.read_text(encoding="utf-8")}
    assert not text, f"'textual._' named in {sorted(text)}"
