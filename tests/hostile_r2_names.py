"""Hostile corpus, round two: names the analysis reads: demangler, classifier, argument stripping, step annotations, AIE tiles.

Cases use the builders of hostile_corpus; the corpus's harness (test_hostile.py) runs each through
`kerneldiff info` and `kerneldiff compare`."""

from __future__ import annotations

from hostile_corpus import Case


def cases() -> list[Case]:
    return []
