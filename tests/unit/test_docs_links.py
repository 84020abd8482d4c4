"""The README and the docs point at files and sections that exist: every relative link and image
(the README's screenshots are the snapshot tests' SVGs), and every `#anchor` a heading of its file."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors: a heading lower-cased, punctuation dropped, spaces as hyphens."""
    heads = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return [m for m in LINK.findall(text) if not re.match(r"[a-z]+:", m)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc):
    links = _links(doc)
    bad = []
    for link in links:
        target, _, anchor = link.partition("#")
        file = (doc.parent / unquote(target)).resolve() if target else doc
        if not file.exists():
            bad.append(f"{link}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            bad.append(f"{link}: no heading #{anchor} in {file.name}")
    assert not bad, bad


def test_the_docs_are_linked_from_the_readme_and_it_stays_small():
    readme = ROOT / "README.md"
    linked = {(ROOT / unquote(link.partition("#")[0])).resolve() for link in _links(readme)}
    assert all(d.resolve() in linked for d in DOCS[1:]), "a doc the README does not point to"
    assert any("__snapshots__" in link and link.endswith(".svg") for link in _links(readme))   # a screenshot
    assert readme.stat().st_size <= 25_000


def test_the_checker_sees_a_broken_link(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("# Title\n[ok](#title) [gone](missing.md) [bad](#nowhere)\n")
    assert _links(doc) == ["#title", "missing.md", "#nowhere"]
    assert _anchors(doc) == {"title"}


def test_ci_runs_the_readmes_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = next(line for line in readme.splitlines() if line.startswith("python3 -m venv") and "pytest" in line)
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
