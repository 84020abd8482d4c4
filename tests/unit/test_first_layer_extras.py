"""The first inferred layer: setup work a compiler scheduled inside it is told from the layer's own
kernels by aligning it with a regular layer (core.analysis.layers._align_extras)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kerneldiff.core.analysis.layers import _align_extras

REGULAR = [(1, "norm"), (2, "q"), (2, "k"), (3, "rope"), (2, "v"), (4, "attn"), (2, "o"), (1, "norm"), (2, "up"),
           (5, "act"), (2, "down")]


def test_the_compiled_llama_case():
    # embedding fused into the first norm (same category, other name), rotary setup after q_proj
    first = [(1, "embedding_norm"), (2, "q"), (6, "expand"), (6, "unsqueeze"), (2, "rotary_f32"), *REGULAR[2:]]
    assert _align_extras(first, REGULAR) == [2, 3, 4]


def test_a_first_layer_missing_a_regular_kernel_is_left_alone():
    assert _align_extras(REGULAR[:3] + REGULAR[4:], REGULAR) is None


@given(st.lists(st.tuples(st.integers(0, len(REGULAR)), st.integers(6, 9)), max_size=6))
def test_inserted_setup_kernels_are_found_where_they_were_put(inserts):
    first = list(REGULAR)
    for pos, cat in sorted(inserts, key=lambda x: x[0], reverse=True):
        first.insert(pos, (cat, f"setup{cat}"))
    # the positions of the inserted kernels after all insertions
    where = [i for i, x in enumerate(first) if x[1].startswith("setup")]
    assert _align_extras(first, REGULAR) == where
