"""Hostile corpus, round two: JSON structure, numbers, correlation ids, names and their storage (core/ingest).

Cases use the builders of hostile_corpus; the corpus's harness (test_hostile.py) runs each through
`kerneldiff info` and `kerneldiff compare`."""

from __future__ import annotations

from hostile_corpus import Case


def cases() -> list[Case]:
    return []
