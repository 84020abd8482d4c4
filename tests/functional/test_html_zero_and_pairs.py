"""The HTML report's waterfall draws its zero line on every row and labels it, and its attention
shapes mark with ↔ the one-sided rows the explorer pairs (GQA expanded on one side),
saying with what. Truth for the pairing from the raw events: eager Llama's SDPA calls take 8 key
heads, compiled Llama's take 32 (expanded before the call)."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from conftest import real_trace

PAIR = ("h100_llama_eager_sdpa.json.gz", "h100_llama_compiled.json.gz")


def kv_heads(name: str) -> set[int]:
    """The key tensor's head count of every scaled-dot-product attention call, from the raw events."""
    with gzip.open(real_trace(name)) as fh:
        ev = json.load(fh)["traceEvents"]
    out = set()
    for e in ev:
        if e.get("cat") == "cpu_op" and "scaled_dot_product" in e.get("name", "") and e["name"].startswith("aten::_"):
            dims = (e.get("args") or {}).get("Input Dims") or []
            if len(dims) > 1 and len(dims[1]) == 4:
                out.add(dims[1][1])
    return out


@pytest.mark.slow
def test_zero_line_and_attention_pairs():
    from kerneldiff.core.compare.one_sided import attention_counterparts
    from kerneldiff.core.report.html import render_html
    from kerneldiff.core.session import Session

    assert kv_heads(PAIR[0]) == {8} and kv_heads(PAIR[1]) == {32}   # compiled expands the 8 KV heads
    s = Session([str(real_trace(p)) for p in PAIR], use_cache=False)
    s.load_all()
    cmp = s.compare()
    page = render_html(cmp)
    ledger = page.split('<section id="ledger">', 1)[1].split("</section>", 1)[0]
    assert ledger.count('class="zero"') == len(cmp.ledger) + 1          # every cause and the total
    assert re.search(r'class="bar zerolab"><span[^>]*>0</span>', ledger)
    shapes = page.split('<section id="shapes">', 1)[1].split("</section>", 1)[0]
    pairs = attention_counterparts(cmp)
    assert pairs and all(c.kv_heads for c in pairs.values())
    table = shapes.split('id="t-attention"', 1)[1].split("</table>", 1)[0]
    from kerneldiff.core.report.html import MAX_SHAPES

    shown = [i for i in pairs if i < MAX_SHAPES]
    assert table.count("↔") == len(shown)
    assert shown and "other KV heads (GQA expanded)" in shapes
