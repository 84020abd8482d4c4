"""The explorer is one App: tui/ defines a single `textual.app.App` subclass, and tui/app.py picks
a screen by the result's type (`result_screens`), never by asking a session which kind it is
(`session.kind`, `isinstance(session, …)`). Read from the source with `ast`; nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

TUI = Path(__file__).resolve().parents[2] / "tui"


def _trees():
    return {p: ast.parse(p.read_text(), str(p)) for p in sorted(TUI.rglob("*.py"))}


def test_one_app_class_in_tui():
    apps = [(p.relative_to(TUI).as_posix(), node.name) for p, tree in _trees().items() for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef)
            and any((b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "") == "App"
                    for b in node.bases)]
    assert apps == [("app.py", "KernelDiffApp")]


def test_app_never_asks_the_session_its_kind():
    tree = ast.parse((TUI / "app.py").read_text())
    kinds = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "kind"]
    assert kinds == []
    asked = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == "isinstance" and "session" in ast.unparse(n.args[0])]
    assert asked == []
