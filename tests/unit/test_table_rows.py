"""What a result table shows: the filter picks a subset of the rows a view built and a sort
permutes it (indices into the rows, kerneldiff.tui.widgets.table_rows.RowOrder). Checked against
the plain list filtering and sorting the table did before it held indices, on random rows."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.tui.widgets.table_rows import Column, Row, RowOrder, ShownRows, Sort, _sort_key

COLUMNS = [Column("name", "Name", "name"), Column("us", "µs", "us", 8), Column("cat", "Cat", "text", 6)]
# named orders give comparable keys (numbers, names) or None, as the views' do
SORTS = {"gap": Sort("gap", lambda r: r.values[1] if isinstance(r.values[1], (int, float)) else None, ("us",)), "name": Sort("name", lambda r: r.values[0], reverse=False)}


def reference(rows: list[Row], text: str, sort, reverse: bool) -> list[Row]:
    """The table's order before it held indices: filter the list, sort what has a value, the rest after."""
    rows = [r for r in rows if text in r.search] if text else list(rows)
    if isinstance(sort, str):
        key = SORTS[sort].key
        keyed = [(key(r), r) for r in rows]
        present = sorted([(k, r) for k, r in keyed if k is not None], key=lambda kr: kr[0], reverse=reverse)
        return [r for _k, r in present] + [r for k, r in keyed if k is None]
    if sort is not None:
        kind = COLUMNS[sort].kind
        present = sorted([r for r in rows if r.values[sort] is not None],
                         key=lambda r: _sort_key(r.values[sort], kind), reverse=reverse)
        return present + [r for r in rows if r.values[sort] is None]
    return rows


names = st.text(alphabet="abAB_[]\x1b\u200b漢 ", max_size=6)
values = st.tuples(st.one_of(st.none(), names), st.one_of(st.none(), st.floats(allow_nan=False), st.integers(-3, 3),
                                                         st.just("n/a")),
                   st.one_of(st.none(), st.sampled_from(["gemm", "attn", "Gemm"])))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(values, max_size=40), st.sampled_from(["", "a", "b_", "[", "\u200b", "zz"]),
       st.sampled_from([None, 0, 1, 2, "gap", "name"]), st.booleans())
def test_order_is_the_filtered_sorted_list(vals, text, sort, reverse):
    rows = [Row(str(i), v, (), search=(f"{v[0] or ''} {v[2] or ''}").lower()) for i, v in enumerate(vals)]
    order = RowOrder(COLUMNS, rows, SORTS)
    shown = ShownRows(rows, order.order(text, sort, reverse))
    assert [r.key for r in shown] == [r.key for r in reference(rows, text, sort, reverse)]
    # a second order on the same rows (keys read once and kept) is as right as the first
    assert [r.key for r in ShownRows(rows, order.order("", sort, not reverse))] == \
        [r.key for r in reference(rows, "", sort, not reverse)]
    assert sorted(shown.order) == sorted(set(shown.order))   # a subset, each row once


def test_shown_rows_is_a_sequence_of_the_rows():
    rows = [Row(str(i), (i,), ()) for i in range(5)]
    shown = ShownRows(rows, [4, 0, 2])
    assert len(shown) == 3 and shown[0] is rows[4] and shown[-1] is rows[2]
    assert [r.key for r in shown] == ["4", "0", "2"] and [r.key for r in shown[1:]] == ["0", "2"]
    assert shown == [rows[4], rows[0], rows[2]] and not ShownRows(rows, [])


def test_a_search_text_given_as_a_function_is_made_at_the_first_filter_only():
    """A view of 100,000 kernels passes what makes each row's search text: nothing is made for the
    first frame, and a filter makes each once and matches it as the text itself."""
    made = []

    def text(i: int) -> str:
        made.append(i)
        return f"kernel_{i} {'gemm' if i % 2 else 'attn'}"

    rows = [Row(str(i), (f"k{i}",), (), search=lambda i=i: text(i)) for i in range(6)]
    order = RowOrder(COLUMNS, rows, SORTS)
    assert [r.key for r in ShownRows(rows, order.order("", 0, False))] == [str(i) for i in range(6)]
    assert made == []
    assert [r.key for r in ShownRows(rows, order.order("gemm", 0, False))] == ["1", "3", "5"]
    assert [r.key for r in ShownRows(rows, order.order("attn", 0, False))] == ["0", "2", "4"]
    assert sorted(made) == list(range(6)) and rows[3].search == "kernel_3 gemm"
