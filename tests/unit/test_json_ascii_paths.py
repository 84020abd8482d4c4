"""Both ways `strict_json` makes orjson's UTF-8 output ASCII (runs found with numpy where the process
has it, the codec's error handler where it has not) write what json.dumps writes, for any text:
characters beyond the BMP, DEL, quotes, backslashes, control characters, runs of them side by side."""

from __future__ import annotations

import json

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.core.numbers import _escaped_by_codec, _escaped_runs

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)   # orjson refuses lone surrogates


def _both(doc) -> tuple[str, str, str]:
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    want = json.dumps(doc, indent=2)
    return _escaped_runs(data, np), _escaped_by_codec(data, b"\x7f" in data), want


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT, max_size=5), st.dictionaries(TEXT, TEXT, max_size=3))
def test_both_ways_write_what_json_dumps_writes(texts, mapping):
    for doc in (texts, mapping):
        runs, codec, want = _both(doc)
        assert runs == want and codec == want


def test_both_ways_on_the_characters_a_report_holds():
    doc = {"µs × −": ["a\x7fb", "\x7f\u00b5\x7f", "\U0001F600\u2013\u2212", "end µ", "µ"], "k": "x\x7f"}
    runs, codec, want = _both(doc)
    assert runs == want and codec == want and runs.isascii()
