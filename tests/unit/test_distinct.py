"""`numbers.distinct` is np.unique without the numpy.ma import: the same sorted distinct values."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kerneldiff.core.numbers import distinct

INTS = hnp.arrays(st.sampled_from([np.int64, np.int32, np.int8, np.uint16]), hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=40))
FLOATS = hnp.arrays(np.float64, st.integers(0, 60), elements=st.floats(allow_nan=False, width=64))


@given(INTS)
def test_distinct_is_np_unique_on_integers(a):
    got, want = distinct(a), np.unique(a)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


@given(FLOATS)
def test_distinct_is_np_unique_on_floats_without_nan(a):
    assert distinct(a).tolist() == np.unique(a).tolist()


def test_distinct_of_nothing_and_of_a_list():
    assert distinct(np.array([], np.int64)).tolist() == [] and distinct(np.array([], np.int64)).dtype == np.int64
    assert distinct([3, 1, 3, 2, 1]).tolist() == [1, 2, 3]
