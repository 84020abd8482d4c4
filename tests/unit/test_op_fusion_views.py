"""The explorer's views of op-level fusions: both sides' kernels with their operations in the fusion
pane, a group's pairs marked as one group in the pair table."""

from __future__ import annotations

from kerneldiff.core.compare.engine import compare
from test_op_fusion import CLF, _pair


def test_explorer_views_show_groups_and_ops(tmp_path):
    from rich.console import Console

    from kerneldiff.tui import views

    a, b = _pair(tmp_path, "h100", "b200", ("rope",), attention=True)
    c = compare(a, b, classifier=CLF)
    con = Console(width=120, record=True)
    for f in c.fusions:
        con.print(views.fusion_evidence(f, c))
    text = con.export_text()
    assert "aten::neg" in text and "aten::bmm" in text and "_C::rotary_embedding" in text
    assert "measured" in text and "LlamaAttention" in text
    al = c.alignments[1]
    spec = views.pairs_spec(al)
    rows = spec.build({c.key: c.width or c.min_width or 10 for c in spec.columns})
    marks = {r.values[0]: r.values[7] for r in rows}
    for g in al.groups:
        assert {marks[p] for p in g.positions} == {str(g.id + 1)}
    p = next(p for p in al.pairs if p.group >= 0)
    status = views.pair_status(p, 100, c, al.layer).plain
    assert f"group {p.group + 1} = fusion #" in status and " kernel on B for " in status
