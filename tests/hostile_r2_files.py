"""Hostile corpus, round two: files that are not regular, the cache, the probe's limits, terminal safety of file names.

Cases use the builders of hostile_corpus; the corpus's harness (test_hostile.py) runs each through
`kerneldiff info` and `kerneldiff compare`."""

from __future__ import annotations

from hostile_corpus import Case


def cases() -> list[Case]:
    return []
