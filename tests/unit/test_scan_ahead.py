"""A reader in one process scans its next buffer in a thread while this one's rows become columns
(`slices.Scanner.scan_ahead`). It must read exactly what one scan at a time reads, whatever cuts the
buffers make, raise what the thread raised, and leave no thread behind a reader that stops early."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import kerneldiff.core.ingest.loader as loader
import kerneldiff.core.ingest.scan as scan
import kerneldiff.core.ingest.slices as slices
import kerneldiff.core.ingest.source as source
from conftest import real_trace, write_trace
from kerneldiff.core.ingest.source import EventReader, read_columns
from kerneldiff.core.processes.forkserver import cpus
from test_reader import nasty_doc

pytestmark = pytest.mark.skipif(not scan.available(), reason="the compiled scanner was not built")


def _scans_ahead(monkeypatch) -> list:
    """Counts the scans started ahead."""
    calls: list = []
    original = slices.Scanner.scan_ahead
    monkeypatch.setattr(slices.Scanner, "scan_ahead", lambda self, *a: calls.append(a[1:]) or original(self, *a))
    return calls


def _read(path, monkeypatch, ahead: bool):
    monkeypatch.setattr(slices, "SCAN_AHEAD", ahead)
    monkeypatch.setattr(source, "cpus", lambda: 4)   # gzip too (on two CPUs it leaves them to the inflater)
    col, reader = read_columns(str(path))
    return col.strings, col.arrays(), reader.meta, reader.notes


def _assert_same(a, b) -> None:
    (sa, ca, ma, na), (sb, cb, mb, nb) = a, b
    assert sa == sb
    assert ca.keys() == cb.keys()
    for g in ca:
        assert ca[g].keys() == cb[g].keys(), g
        for c in ca[g]:
            assert np.array_equal(ca[g][c], cb[g][c], equal_nan=ca[g][c].dtype.kind == "f"), (g, c)
    assert (ma, na) == (mb, nb)


@pytest.mark.parametrize("slice_size,rows", [(4096, 32768), (1024, 64), (16384, 300)])
@pytest.mark.parametrize("gz", [False, True])
def test_scanning_ahead_reads_what_one_scan_at_a_time_reads(tmp_path, monkeypatch, slice_size, rows, gz):
    # small buffers: many of them, events cut at their ends; few rows a scan: full scans within one;
    # the odd events (strings holding "},{", escapes) hand stretches to msgspec in between
    monkeypatch.setattr(slices, "SLICE", slice_size)
    monkeypatch.setattr(slices, "WINDOW", 512)
    monkeypatch.setattr(slices.Scanner, "ROWS", rows)
    path = write_trace(tmp_path / ("t.json.gz" if gz else "t.json"), nasty_doc(3000), gz=gz)
    one_at_a_time = _read(path, monkeypatch, ahead=False)
    ahead = _scans_ahead(monkeypatch)
    _assert_same(_read(path, monkeypatch, ahead=True), one_at_a_time)
    assert len(ahead) > 5   # the scans ahead did run
    assert all(first == 1 for first, _ in ahead)


@pytest.mark.parametrize("name", ["mi300x_qwen1.5-0.5b_hf.json.gz", "b200_vllm_eager.json.gz"])
def test_scanning_ahead_on_real_traces(monkeypatch, name):
    path = real_trace(name)
    monkeypatch.setattr(slices, "SLICE", 64 * 1024)
    one_at_a_time = _read(path, monkeypatch, ahead=False)
    ahead = _scans_ahead(monkeypatch)
    _assert_same(_read(path, monkeypatch, ahead=True), one_at_a_time)
    assert ahead


def test_what_the_scan_ahead_raises_reaches_the_reader(tmp_path, monkeypatch):
    monkeypatch.setattr(slices, "SLICE", 4096)
    monkeypatch.setattr(source, "cpus", lambda: 2)   # a CPU for the scan, whatever this machine has
    path = write_trace(tmp_path / "t.json", nasty_doc(2000))
    original, calls = scan.scan, []

    def failing(*a):
        calls.append(threading.current_thread().name)
        if len(calls) == 4:
            raise MemoryError("scan 4")
        return original(*a)

    monkeypatch.setattr(scan, "scan", failing)
    with pytest.raises(MemoryError, match="scan 4"):
        read_columns(str(path))
    assert calls[3] == "kerneldiff-scan"   # it was raised in the thread, and again in the reader


def test_a_reader_stopped_early_leaves_no_scan_running(tmp_path, monkeypatch):
    monkeypatch.setattr(slices, "SLICE", 4096)
    monkeypatch.setattr(source, "cpus", lambda: 2)
    path = write_trace(tmp_path / "t.json", nasty_doc(3000))
    ahead = _scans_ahead(monkeypatch)
    reader = EventReader(str(path))
    batches = reader.batches()
    for _ in zip(range(3), batches):
        pass
    assert ahead   # a scan was started ahead of the batches taken
    batches.close()   # as a cancelled load's generator is closed
    reader.close()
    assert not [t for t in threading.enumerate() if t.name == "kerneldiff-scan"]


@pytest.mark.skipif(cpus() < 2, reason="one CPU: nothing to scan ahead on")
def test_only_a_load_given_the_machine_scans_ahead(tmp_path, monkeypatch):
    # a load held to one process (a pair read one process each, --workers 1) leaves the other core
    # to the other load; a load whose workers are the reader's choice takes it for the scan
    monkeypatch.setattr(slices, "SLICE", 4096)
    path = str(write_trace(tmp_path / "t.json", nasty_doc(2000)))
    ahead = _scans_ahead(monkeypatch)
    alone = loader.read_trace(path)
    assert ahead
    ahead.clear()
    held = loader.read_trace(path, workers=1)
    assert not ahead
    assert alone.kernels.columns.keys() == held.kernels.columns.keys()
    for c in alone.kernels.columns:
        assert np.array_equal(alone.kernels.columns[c], held.kernels.columns[c], equal_nan=True), c


def test_gzip_on_two_cpus_leaves_the_second_core_to_the_inflater(tmp_path, monkeypatch):
    monkeypatch.setattr(slices, "SLICE", 4096)
    doc = nasty_doc(2000)
    plain, gz = (str(write_trace(tmp_path / n, doc, gz=n.endswith(".gz"))) for n in ("t.json", "t.json.gz"))
    ahead = _scans_ahead(monkeypatch)
    for n_cpus, path, scans in ((1, plain, False), (2, plain, True), (2, gz, False), (4, gz, True)):
        monkeypatch.setattr(source, "cpus", lambda n=n_cpus: n)
        ahead.clear()
        reader = EventReader(path)
        reader.close()
        assert reader.ahead == scans
        read_columns(path)
        assert bool(ahead) == scans, (n_cpus, path)
