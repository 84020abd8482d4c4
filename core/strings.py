"""Interned string table: every name in a trace is stored once and referenced by an int id."""

from __future__ import annotations


class StringTable:
    __slots__ = ("_ids", "strings")

    def __init__(self, strings: list[str] | None = None) -> None:
        self.strings: list[str] = list(strings or [])
        self._ids: dict[str, int] = {s: i for i, s in enumerate(self.strings)}

    def get(self, s: str) -> int | None:
        return self._ids.get(s)

    def __getitem__(self, i: int) -> str:
        return self.strings[i]

    def __len__(self) -> int:
        return len(self.strings)
