"""`kerneldiff compare` read by a performance engineer: a phase a trace lacks is said (exit 2), `--table`
works with JSON and is refused where it means nothing, the text report has no trailing blanks, writes
× like the explorer and names the statistic of every column."""

from __future__ import annotations

import dataclasses
import io
import json

import pytest
from hypothesis import given, settings, strategies as st
from rich.console import Console

from kerneldiff.cli.text_report import render_text
from kerneldiff.cli.main import main
from kerneldiff.core.compare.engine import compare
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.report.tables import table

A, B = str(DEMO_A), str(DEMO_B)


def test_absent_phase_is_said_not_printed_empty(capsys):
    assert main(["compare", A, B, "--phase", "mixed", "--no-cache"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert len(err.splitlines()) == 1
    assert "phase 'mixed' is absent from A and B" in err and "A has prefill, decode" in err
    assert "choose --phase from: all, prefill, decode" in err
    assert main(["compare", A, B, "--phase", "decode", "--no-cache", "--format", "json"]) == 0


@pytest.mark.slow
def test_table_with_json_and_refused_with_text(capsys, demo_models):
    assert main(["compare", A, B, "--format", "json", "--table", "layers", "--no-cache"]) == 0
    rows = json.loads(capsys.readouterr().out)
    head, expected = table(compare(demo_models[A], demo_models[B]), "layers")
    assert [list(r) for r in rows[0:1]] == [head] and len(rows) == len(expected)
    assert [r["layer"] for r in rows] == [e[1] for e in expected]
    assert main(["compare", A, B, "--format", "json", "--table", "all", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["schema"] == 1     # all: the whole comparison
    assert main(["compare", A, B, "--format", "text", "--table", "layers", "--no-cache"]) == 2
    assert "--table picks one table for --format csv or json" in capsys.readouterr().err
    assert main(["compare", A, B, "--table", "layers", "--no-cache"]) == 0   # --table alone: CSV (issue 30)
    assert capsys.readouterr().out.startswith("rank,layer,stack,stack_layer,a_total_us,b_total_us,")


def test_json_report_is_the_document_asdict_and_json_dumps_give(demo_models):
    """strict_json writes the Comparison through orjson: the document json.dumps made of
    `json_ready(cmp.to_dict())` (field order included), ASCII only; no result type has a field
    orjson would leave out (a leading underscore)."""
    from kerneldiff.core.compare import result, work_result
    from kerneldiff.core.analysis import peaks, timeline
    from kerneldiff.core.numbers import json_ready, strict_json

    for mod in (result, work_result, peaks, timeline):
        for obj in vars(mod).values():
            if dataclasses.is_dataclass(obj) and obj.__module__ == mod.__name__:
                assert not [f.name for f in dataclasses.fields(obj) if f.name.startswith("_")], obj
    for phase in ("all", "prefill", "decode"):
        cmp = compare(demo_models[A], demo_models[B], phase=phase)
        text = strict_json(cmp)
        assert text.isascii()
        old = json.dumps(json_ready(cmp.to_dict()), indent=2, allow_nan=False, default=str)
        assert json.loads(text, object_pairs_hook=list) == json.loads(old, object_pairs_hook=list)


def test_strict_json_writes_what_json_dumps_writes():
    """orjson's output made ASCII as json.dumps makes it (µ, an emoji as a surrogate pair, DEL); what
    orjson refuses (a lone surrogate, an integer beyond 64 bits) goes the json.dumps way: same text."""
    import numpy as np

    from kerneldiff.core.numbers import json_ready, strict_json

    @dataclasses.dataclass
    class Row:
        x: float
        rows: list

    for doc in ({"s": "12µs × 3 … \U0001F600 \x7f \u2028 \"q\" \\ \n\x00", "nan": float("nan"), "inf": -float("inf")},
                ["bad\udcff.json", 1], {"k\udcff": 2**70}, [np.float32(0.1), np.int64(5), np.float64("nan"), np.bool_(True)],
                Row(float("inf"), [Row(1.5, [])]), {1: "x", None: 2}, [], {}):
        old = json.dumps(json_ready(doc), indent=2, allow_nan=False, default=str)
        assert strict_json(doc) == old


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), max_size=4), st.booleans())
def test_strict_json_of_any_text_is_what_json_dumps_writes(texts, keys):
    """Any characters, few or many distinct (the per-character replacement and the one-pass path),
    lone surrogates included: the text json.dumps writes."""
    from kerneldiff.core.numbers import json_ready, strict_json

    doc = {t: i for i, t in enumerate(texts)} if keys else texts
    assert strict_json(doc) == json.dumps(json_ready(doc), indent=2, allow_nan=False, default=str)


def test_text_report_has_no_trailing_blanks_and_writes_the_times_sign(capsys, tmp_path):
    assert main(["compare", A, B, "--width", "100", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert out and all(line == line.rstrip() for line in out.splitlines())
    assert "2.0× as often" in out and "x as often" not in out      # the fusion evidence, as the explorer says it
    assert "−475.8µs" in out and "+6.02ms" in out                    # gaps signed as in the explorer
    target = tmp_path / "report.txt"
    assert main(["compare", A, B, "--width", "100", "-o", str(target), "--no-cache"]) == 0
    text = target.read_text()
    assert all(line == line.rstrip() for line in text.splitlines())


def _text(cmp, width: int = 120) -> str:
    buf = io.StringIO()
    render_text(cmp, Console(file=buf, width=width, color_system=None, highlight=False, markup=False))
    return buf.getvalue()


def test_columns_name_their_statistic(demo_models):
    cmp = compare(demo_models[A], demo_models[B])
    text = _text(cmp)
    assert "A total" in text and "A med/pass" in text and "A mean" in text and "total gap" in text
    assert "outside" in text                                          # the kernels outside every layer
    # different pass counts: the operations are per pass, and the columns say so
    per = dataclasses.replace(cmp, basis="per_pass", a=dataclasses.replace(cmp.a, passes=3))
    text = _text(per)
    assert "A/pass" in text and "B/pass" in text and "per pass" in text
    att = next(o for o in cmp.operations if o.category == "Attention")
    from kerneldiff.core.report import format as fmt

    assert fmt.us(att.a.total_us / 3) in text


def test_one_sided_layers_in_the_report(demo_models):
    from model_edits import without_layers

    cmp = compare(without_layers(demo_models[A]), demo_models[B])
    text = _text(cmp)
    assert "Layers only on B" in text and "nothing compared" in text
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Layers (largest first)"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("└"))
    rows = [l for l in lines[start:end] if l.startswith("│ ")]
    assert len(rows) == len(cmp.layers[:10]) + 1 and rows[-1].startswith("│ outside")   # and the time outside them
    assert all(l.rstrip("│ ").endswith("—") for l in rows)          # no gap: nothing compared
