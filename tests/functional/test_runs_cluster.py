"""Runs summarised on a real Dask cluster: a `dask scheduler` and two `dask worker` processes on
127.0.0.1 (started here, stopped by their PIDs), against the local process pool, byte for byte;
a worker killed while it summarises a rank gives the same result (the task is run again) or one
clear error, never a partial run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import real_trace
from kerneldiff.cli.main import main
from kerneldiff.core.synth.ranks import write_run

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask(*args: str) -> list[str]:
    exe = Path(sys.executable).parent / "dask"
    return [str(exe), *args] if exe.exists() else [sys.executable, "-m", "dask", *args]


class Cluster:
    """A scheduler and `n` workers (no nanny: the PID is the worker's own) on 127.0.0.1."""

    def __init__(self, n: int = 2) -> None:
        port = _free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self.scheduler = subprocess.Popen(_dask("scheduler", "--host", "127.0.0.1", "--port", str(port),
                                                "--no-dashboard"), **quiet)
        self.workers = [subprocess.Popen(_dask("worker", self.address, "--nthreads", "1", "--no-nanny",
                                               "--no-dashboard", "--host", "127.0.0.1"), **quiet)
                        for _ in range(n)]
        from distributed import Client

        deadline = time.monotonic() + 90
        while True:
            try:
                with Client(self.address, timeout="5s") as c:
                    if len(c.scheduler_info()["workers"]) >= n:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail("the Dask cluster did not start in 90 s")
            time.sleep(0.5)

    def stop(self) -> None:
        for p in [*self.workers, self.scheduler]:
            if p.poll() is None:
                p.terminate()
        for p in [*self.workers, self.scheduler]:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(2)
    yield c
    c.stop()


def _json(capsys, *args) -> tuple[int, str, str]:
    rc = main(["compare", *args, "--format", "json", "--no-cache"])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cluster_gives_the_local_result_byte_for_byte(cluster, tmp_path, capsys):
    write_run(tmp_path / "a", ranks=4, passes=2, layers=3, straggler=2)
    write_run(tmp_path / "b", ranks=4, passes=2, layers=3, straggler=None, late_launch=1, late_launch_us=40.0)
    runs = [str(tmp_path / "a"), str(tmp_path / "b")]
    rc, local, _ = _json(capsys, *runs)
    assert rc == 0
    rc, remote, err = _json(capsys, *runs, "--scheduler", cluster.address)
    assert rc == 0, err
    assert remote == local


def test_cluster_on_the_real_two_ranks(cluster, capsys, monkeypatch):
    hta = str(real_trace("hta_two_ranks"))
    rc, local, _ = _json(capsys, hta, hta)
    monkeypatch.setenv("KERNELDIFF_SCHEDULER", cluster.address)     # the environment names it too
    rc2, remote, err = _json(capsys, hta, hta)
    assert (rc, rc2) == (0, 0), err
    assert remote == local


def test_a_bad_scheduler_is_one_line(capsys):
    hta = str(real_trace("hta_two_ranks"))
    assert main(["compare", hta, hta, "--scheduler", "http://nowhere"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tcp://HOST:PORT" in err
    port = _free_port()     # nothing listens there
    assert main(["compare", str(real_trace("hta_two_ranks")), str(real_trace("hta_two_ranks")),
                 "--scheduler", f"tcp://127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot connect" in err


def test_a_worker_killed_mid_run_gives_the_whole_result_or_one_error(tmp_path, capsys):
    write_run(tmp_path / "a", ranks=8, passes=3, layers=6, straggler=3)
    runs = [str(tmp_path / "a"), str(tmp_path / "a")]
    rc, local, _ = _json(capsys, *runs)
    assert rc == 0
    c = Cluster(2)
    try:
        from distributed import Client

        result: dict = {}

        def go():
            result["rc"] = main(["compare", *runs, "--format", "json", "--no-cache", "--scheduler", c.address,
                                 "-o", str(tmp_path / "out.json")])

        t = threading.Thread(target=go)
        t.start()
        ours = {p.pid: p for p in c.workers}
        killed = None
        with Client(c.address, timeout="10s") as client:
            pids = client.run(os.getpid)            # {worker address: its PID}
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and t.is_alive():
                busy = [w for w, ts in client.processing().items() if ts and pids.get(w) in ours]
                if busy:
                    killed = pids[busy[0]]
                    os.kill(killed, signal.SIGKILL)  # a worker we started, while it summarises a rank
                    break
                time.sleep(0.02)
        t.join(timeout=300)
        assert not t.is_alive()
        err = capsys.readouterr().err
        assert killed is not None, "no worker was seen busy"
        if result["rc"] == 0:
            assert (tmp_path / "out.json").read_text().strip() == local.strip()   # the task ran again elsewhere
        else:
            assert result["rc"] == 2 and len(err.strip().splitlines()) == 1
            assert not (tmp_path / "out.json").exists()
    finally:
        c.stop()
