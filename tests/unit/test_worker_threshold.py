"""The worker threshold (`forkserver.thresholds`): on two CPUs a load in one process scans ahead on
the second core, so workers start only for larger files than on more CPUs."""

from types import SimpleNamespace

import pytest

from kerneldiff.core.processes import forkserver

MB = 1024 * 1024


@pytest.mark.parametrize("n_cpus", [2, 3, 4, 16])
def test_thresholds_keep_gzip_below_plain_and_two_cpus_highest(n_cpus):
    plain, gz = forkserver.thresholds(n_cpus)
    two_plain, two_gz = forkserver.thresholds(2)
    assert 0 < gz < plain                     # gzip holds ~10x its size of JSON
    assert plain <= two_plain and gz <= two_gz


def test_the_real_traces_load_in_one_process_on_two_cpus(monkeypatch):
    """On two CPUs the real 140 MB eager trace (10.5 MB of gzip) and a 150 MB dense one load in one
    process; a 250 MB one and the 1 GB one (84 MB of gzip) take workers. More CPUs: workers from 64 MB."""
    plain, gz = forkserver.thresholds(2)
    monkeypatch.setattr(forkserver, "cpus", lambda: 2)
    monkeypatch.setattr(forkserver, "PARALLEL_MIN_PLAIN", plain)
    monkeypatch.setattr(forkserver, "PARALLEL_MIN_GZIP", gz)
    info = lambda mb, compressed: SimpleNamespace(size=int(mb * MB), compressed=compressed)  # noqa: E731
    assert forkserver.worker_count(info(140, False), None) == 1
    assert forkserver.worker_count(info(150, False), None) == 1
    assert forkserver.worker_count(info(10.5, True), None) == 1
    assert forkserver.worker_count(info(250, False), None) == 2
    assert forkserver.worker_count(info(84, True), None) == 2
    assert forkserver.worker_count(info(140, False), 2) == 2      # asked for: given
    plain4, gz4 = forkserver.thresholds(4)
    monkeypatch.setattr(forkserver, "cpus", lambda: 8)
    monkeypatch.setattr(forkserver, "PARALLEL_MIN_PLAIN", plain4)
    monkeypatch.setattr(forkserver, "PARALLEL_MIN_GZIP", gz4)
    assert forkserver.worker_count(info(140, False), None) == 4
    assert forkserver.worker_count(info(10.5, True), None) == 4
    assert forkserver.worker_count(info(60, False), None) == 1

