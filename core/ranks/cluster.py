"""The map from rank files to rank summaries on a Dask cluster (the optional extra
`kerneldiff[cluster]`, package `distributed`), for runs larger than one machine holds.

Each task reads one rank's file where the worker runs (the files must be reachable there under the
same path: a shared file system) and returns only its compact summary (`ranks.summary.RankSummary`),
never the model; the driver holds the summaries alone. A task whose worker dies is run again on
another (Dask's `allowed-failures`); a task that still fails raises one error naming the rank's
file, and no partial run is returned.

Where: `tcp://HOST:PORT` (an existing scheduler), `local` (a LocalCluster on this machine), from
`--scheduler` or the environment variable KERNELDIFF_SCHEDULER; without either, the local process
pool (`ranks.run.load_ranks`) as before.
"""

from __future__ import annotations

import os
from typing import Any

ENV = "KERNELDIFF_SCHEDULER"
RETRIES = 2          # a task is tried again this often (on top of the scheduler's own reruns after a worker dies)


from kerneldiff.core.errors import TraceError


class ClusterError(TraceError):
    """The cluster could not be used or could not finish the run: one line naming the scheduler or
    the rank's file (a TraceError, so the CLI reports it as any bad input: exit 2)."""


def scheduler_address(given: str | None) -> str | None:
    """The scheduler asked for: the flag's value, else the environment's; None: the local pool."""
    s = given if given is not None else os.environ.get(ENV) or None
    if s is None:
        return None
    s = s.strip()
    if s != "local" and not s.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
        raise ClusterError(s, "is not a scheduler: give tcp://HOST:PORT (or tls://…) or 'local'")
    return s


def _client(address: str, workers: int | None):
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ClusterError(address, "--scheduler needs Dask's distributed package: pip install 'kerneldiff[cluster]'") from None
    try:
        if address == "local":
            cluster = LocalCluster(n_workers=workers or min(os.cpu_count() or 1, 4), threads_per_worker=1,
                                   processes=True, dashboard_address=None)
            return Client(cluster), cluster
        return Client(address, timeout="20s"), None
    except (OSError, TimeoutError) as e:
        raise ClusterError(address, f"cannot connect to this scheduler ({e})") from None


def summaries_on_cluster(work: list[tuple], address: str, workers: int | None = None) -> list[Any]:
    """`ranks.summary.summary_or_error` over `work` on the cluster at `address`, in the order of `work`: each a
    RankSummary or (path, problem) of the rank's own TraceError, as the local pool returns them."""
    from kerneldiff.core.ranks.summary import summary_or_error

    client, cluster = _client(address, workers)
    try:
        futures = client.map(summary_or_error, work, pure=False, retries=RETRIES,
                             key=[f"kerneldiff-rank-{i}-{os.getpid()}-{id(work)}" for i in range(len(work))])
        try:
            return client.gather(futures)
        except Exception as e:   # noqa: BLE001 - a worker lost for good, a task that kept failing
            which = next((w[1] for f, w in zip(futures, work) if f.status == "error"), None)
            raise ClusterError(which or address, f"the cluster could not summarise this rank: "
                               f"{type(e).__name__}: {' '.join(str(e).split())}") from None
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
