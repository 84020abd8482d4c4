"""Which host thread a launch-bound gap is read on: the thread that launched the kernel ending the
gap (the GPU waited for its launch), not the thread that made the most launches. A generated trace
with a Python thread that launches most kernels and runs one long call throughout, and a second
thread (as the autograd thread of a training step) that runs an operator before launching the
kernel the GPU waits for."""

from __future__ import annotations

import pytest

from conftest import kineto_doc, write_trace


def _doc(second_thread: bool = True):
    ev, corr = [], 1

    def launch(tid, ts, k_ts, k_dur):
        nonlocal corr
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": tid, "ts": ts,
                   "dur": 2.0, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": f"k{corr}", "pid": 0, "tid": 7, "ts": k_ts, "dur": k_dur,
                   "args": {"device": 0, "stream": 7, "correlation": corr}})
        corr += 1

    ev.append({"ph": "X", "cat": "python_function", "name": "train.py(10): main_loop", "pid": 1, "tid": 1,
               "ts": 0.0, "dur": 1000.0, "args": {}})
    for i in range(4):                     # the Python thread's launches: GPU idle 18 -> 25, 28 -> 35, 38 -> 45
        launch(1, 10.0 + 10 * i, 15.0 + 10 * i, 3.0)
    tid = 2 if second_thread else 1
    ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::backward_op", "pid": 1, "tid": tid, "ts": 100.0,
               "dur": 50.0, "args": {}})
    launch(tid, 140.0, 150.0, 10.0)        # the GPU idles 48 -> 150 waiting for this launch
    return kineto_doc(ev)


def _side(tmp_path, second_thread):
    from kerneldiff.core.analysis.host_hotspots import host_side
    from kerneldiff.core.session import Session

    path = write_trace(tmp_path / f"t{int(second_thread)}.json", _doc(second_thread))
    m = Session([str(path)], use_cache=False).load(0)
    h = host_side(m, "all", False)
    return {name: v / 1000 for (_kind, name), v in zip(h.names, h.idle_ns.tolist()) if v}, h


def test_a_gap_is_read_on_the_thread_that_launched_its_kernel(tmp_path):
    idle, h = _side(tmp_path, True)
    assert h.gap_threads == 2
    # the Python thread's gaps (3 x 7 µs): its loop, and its launch calls while they ran
    # the second thread's (48 -> 150): nothing recorded there until its operator began at 100, then
    # the operator and its launch call; none of it is the Python thread's long call
    assert idle["aten::backward_op"] == pytest.approx(40.0 + 8.0)    # around its 2 µs launch call
    assert idle["cudaLaunchKernel"] == pytest.approx(3 * 2.0 + 2.0)
    assert idle["(no host event)"] == pytest.approx(52.0)
    assert idle["train.py(10): main_loop"] == pytest.approx(3 * 5.0)
    assert sum(idle.values()) == pytest.approx(h.idle_total_ns / 1000) == pytest.approx(3 * 7.0 + 102.0)


def test_on_one_thread_the_same_gap_is_that_threads(tmp_path):
    idle, h = _side(tmp_path, False)
    assert h.gap_threads == 1
    # the same events on the Python thread: the long call holds what the operator does not
    assert idle["aten::backward_op"] == pytest.approx(48.0)
    assert idle["train.py(10): main_loop"] == pytest.approx(3 * 5.0 + 52.0)
    assert "(no host event)" not in idle


def test_the_comparison_says_when_gaps_come_from_several_threads(tmp_path):
    from kerneldiff.core.compare.host_compare import compare_host
    from kerneldiff.core.session import Session

    two = write_trace(tmp_path / "two.json", _doc(True))
    one = write_trace(tmp_path / "one.json", _doc(False))
    a, b = Session([str(two), str(one)], use_cache=False).load_all()
    h = compare_host(a, b)
    assert [n for n in h.notes if "threads" in n] == \
        ["A's launch-bound gaps end with kernels launched from 2 threads: each gap is read on the thread that "
         "launched its kernel"]
    # the same gaps on both sides, read on different threads: the gap moves between the rows
    row = {r.name: r for r in h.idle_by_op}
    assert row["(no host event)"].gap_us == pytest.approx(52.0)
    assert row["train.py(10): main_loop"].gap_us == pytest.approx(-52.0)
