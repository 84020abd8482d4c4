"""Sign and format slips: no `−0.00µs` (a figure under the last digit says so), a minus is always
`−`, a count-imbalance finding gives launch counts as whole numbers where they are whole and its
"rest of the gap" as A − B (the real MI300X/H100 Qwen pair: B launches the extra memsets)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kerneldiff.core.report import format as fmt

from conftest import real_trace


@given(st.floats(-1e7, 1e7, allow_nan=False))
def test_no_signed_zero_and_one_minus_sign(x):
    for text in (fmt.us(x), fmt.gap(x)):
        assert "-" not in text
        assert not re.fullmatch(r"[+−]0\.00µs", text), (x, text)
        if x < 0 and text != "0":
            assert text.startswith("−")


def test_tiny_figures_say_they_are_tiny():
    assert fmt.gap(-0.001) == "−<0.01µs" and fmt.gap(0.004) == "+<0.01µs" and fmt.gap(0.0) == "0"
    assert fmt.us(0.0) == "0.00µs" and fmt.us(0.006) == "0.01µs"


def test_count_imbalance_reads_as_a_minus_b_on_the_qwen_pair():
    from kerneldiff.core.session import Session

    s = Session([str(real_trace("mi300x_qwen1.5-0.5b_hf.json.gz")), str(real_trace("h100_qwen1.5-0.5b_hf.json.gz"))],
                use_cache=False)
    s.load_all()
    c = s.compare()
    found = [f for f in c.fusions if f.kind in ("count_imbalance", "launch_count")]   # memsets: launch_count
    assert found
    for f in found:
        counts = re.search(r"\(([\d,.]+) vs ([\d,.]+)\)", f.evidence).groups()
        assert all("." not in n for n in counts) or any(not n.endswith(".0") for n in counts), counts
        rest = float(re.search(r"gap, ([+−][\d,.]+) µs per pass \(A − B\)", f.evidence).group(1)
                     .replace("−", "-").replace(",", ""))
        op = next(o for o in c.operations if o.category == f.fused_category)
        extra = f.component_cost_us / max(getattr(c, f.component_side).passes, 1)
        # the category's gap less the extra launches' time, on the side that makes them
        want = op.gap_us - (extra if f.component_side == "a" else -extra)
        assert rest == pytest.approx(want, abs=0.1)
