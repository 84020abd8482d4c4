"""numbers.unique_inverse is np.unique(values, return_inverse=True) for integers, whatever their span."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.core.numbers import unique_inverse

INTS = st.lists(st.integers(-2**62, 2**62), max_size=300)


@settings(max_examples=200, deadline=None)
@given(st.one_of(INTS, st.lists(st.integers(-3, 40), max_size=300)), st.sampled_from([np.int8, np.int32, np.int64]))
def test_unique_inverse_is_numpys(values, dtype):
    if dtype is not np.int64:
        info = np.iinfo(dtype)
        values = [v for v in values if info.min <= v <= info.max]
    a = np.array(values, dtype=dtype)
    uniq, inverse = unique_inverse(a)
    want_u, want_i = np.unique(a, return_inverse=True)
    assert uniq.dtype == want_u.dtype and uniq.tolist() == want_u.tolist()
    assert inverse.tolist() == want_i.reshape(-1).tolist()


def test_a_span_wider_than_half_the_type():
    """int8 0 and -128 span 128, which int8 itself cannot hold (found by the test above)."""
    for values in ([0, -128], [127, -128, 5], [-128, 127]):
        a = np.array(values, np.int8)
        uniq, inverse = unique_inverse(a)
        want_u, want_i = np.unique(a, return_inverse=True)
        assert uniq.dtype == want_u.dtype and uniq.tolist() == want_u.tolist()
        assert inverse.tolist() == want_i.reshape(-1).tolist()
