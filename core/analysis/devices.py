"""Devices of one trace: a file whose GPU events name several devices is read one device at a time.

Kineto writes one file per process; a process that drives several GPUs, or a file that merges the
traces of several ranks, holds the kernels of more than one device. Summing them as one GPU doubles
the kernel time and interleaves two streams of layers, so every figure is taken on one device:
`select_device` rebuilds the model from that device's activities and the host events that launched
them, and the readings (categories, passes, phases, layers) are made again on that subset.

A device is the kernel's `device` argument, else its GPU pid (the loader's fallback).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from kerneldiff.core.model import KERNEL_COLUMNS, Table, TraceModel
from kerneldiff.core.numbers import distinct, unique_inverse

# columns the readings set; a device view starts them afresh
_DERIVED = ("cpu_op", "launch", "cat", "rule", "step", "phase", "layer")


@dataclass
class DeviceTotal:
    """One GPU's activities in a trace: how many, and their summed time."""

    device: int
    kernels: int            # GPU activities (kernels, copies, memsets), as the model counts them
    gpu_time_us: float      # their summed durations

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def device_totals(model: TraceModel) -> list[DeviceTotal]:
    """Each device's activities and summed time, in device order (the file as a whole: a device
    view keeps the totals of the file it was cut from). Activities without a readable device are
    no device of their own: a file with one readable device is read whole."""
    if model.devices:
        return [DeviceTotal(**d) for d in model.devices]
    k = model.kernels
    if len(k) and k.device[0] >= 0 and bool((k.device == k.device[0]).all()):
        # one device (the usual case): no grouping; 0.0 plus the running sum is bincount's sum to
        # the last bit (from 0.0, in row order)
        return [DeviceTotal(int(k.device[0]), len(k), 0.0 + float(np.cumsum(k.dur, dtype=np.float64)[-1]))]
    known = k.device >= 0          # -1: no readable device (an id beyond 64 bits, text, absent pid)
    if not known.any():
        return []
    ids, inv = unique_inverse(k.device[known])
    time = np.bincount(inv, weights=k.dur[known], minlength=len(ids))
    count = np.bincount(inv, minlength=len(ids))
    return [DeviceTotal(int(d), int(n), float(t)) for d, n, t in zip(ids.tolist(), count.tolist(), time.tolist())]


def _host_pids(model: TraceModel, devices: list[int]) -> dict[int, set[int] | None]:
    """The host processes whose events belong with each device (None: every host event).

    One host process (one rank driving several GPUs): it launched them all, keep it whole. Several
    host processes (ranks merged into one file): a device goes with the process whose runtime calls
    carry its kernels' correlation ids; where that does not decide (merged ranks reuse the same ids)
    the devices and the processes are paired in sorted order."""
    pids = distinct(np.concatenate([model.launches.pid, model.cpu_ops.pid]))
    pids = pids[pids >= 0]
    if len(pids) <= 1:
        return {d: None for d in devices}
    k, L = model.kernels, model.launches
    score = np.zeros((len(devices), len(pids)))
    for i, d in enumerate(devices):
        corr = distinct(k.corr[(k.device == d) & (k.corr >= 0)])
        for j, p in enumerate(pids.tolist()):
            score[i, j] = np.count_nonzero(np.isin(corr, L.corr[L.pid == p])) / max(len(corr), 1)
    out: dict[int, set[int] | None] = {}
    taken: set[int] = set()
    for i, d in enumerate(devices):
        best = score[i].max()
        cands = [j for j in range(len(pids)) if score[i, j] >= best - 0.01]
        j = ([j for j in cands if j not in taken] or cands)[0]   # ties: the first free one, in pid order
        taken.add(j)
        out[d] = {int(pids[j])}
    return out


def _device_info(info, device: int):
    """The file's info with `device`'s own properties and GPU name (a file of an H100 and an A100:
    device 1's name and peaks are the A100's, not device 0's); unchanged where the file does not
    describe that device."""
    from dataclasses import replace

    from kerneldiff.core.names.gpus import gpu_name

    devs = getattr(info, "devices", None) or []
    props = next((d for d in devs if d.get("id") == device), None)
    if props is None or props == info.device:
        return info
    gpu, source = gpu_name(info.vendor, props)
    return replace(info, device=props, gpu=gpu or info.gpu, gpu_source=source if gpu else info.gpu_source)


def select_device(model: TraceModel, device: int, classifier) -> TraceModel:
    """A model of `device` alone: its GPU activities, the host events of its process, and every
    reading made again on them. The file's per-device totals stay in `devices`."""
    from kerneldiff.core.analysis import attribution, layers, phases

    totals = device_totals(model)
    devices = [t.device for t in totals]
    if device not in devices:
        raise ValueError(f"no device {device} in this trace (devices: {', '.join(map(str, devices))})")
    k = model.kernels
    rows = np.flatnonzero(k.device == device)
    cols = {name: k.columns[name][rows] for name, _, _ in KERNEL_COLUMNS if name not in _DERIVED}
    kernels = Table(KERNEL_COLUMNS, cols) if len(rows) else Table(KERNEL_COLUMNS, n=0)
    host = _host_pids(model, devices)[device]

    def keep(t: Table) -> Table:
        if host is None or len(t) == 0:
            return t
        return t.take(np.isin(t.pid, np.fromiter(host, np.int64)))

    annotations = model.annotations
    if host is not None and len(annotations):
        # CPU annotations go with their process; GPU annotations (pid = device, by Kineto's
        # convention) with the device, or all of them when their pids name no device
        a = annotations
        gpu = a.gpu.astype(bool)
        on_dev = np.isin(a.pid, np.asarray(devices, np.int64))
        cpu_keep = ~gpu & np.isin(a.pid, np.fromiter(host, np.int64))
        gpu_keep = gpu & ((a.pid == device) | ~on_dev)
        annotations = a.take(cpu_keep | gpu_keep)
    view = TraceModel(path=model.path, info=_device_info(model.info, device), strings=model.strings, kernels=kernels,
                      cpu_ops=keep(model.cpu_ops), launches=keep(model.launches), python=keep(model.python),
                      annotations=annotations, categories=list(classifier.categories), rules=[],
                      dropped_events=model.dropped_events, load_seconds=model.load_seconds)
    view.warnings = [w for w in model.warnings]
    unknown = int(np.count_nonzero(k.device < 0))
    if unknown:
        view.warnings.append(f"{unknown} GPU activities name no readable device: left out of every device")
    view.devices = [t.to_dict() for t in totals]
    view.device = device
    attribution.link(view)
    classifier.assign(view)
    phases.assign(view, classifier)
    layers.segment(view, classifier)
    attribution.quality_warnings(view, classifier)
    return view


def pick_device(model: TraceModel, wanted: int | None) -> int | None:
    """The device a comparison reads: `wanted`, else the first; None when the file holds one
    (a one-GPU file is read as it is, whatever `wanted`: the other side may hold several)."""
    totals = device_totals(model)
    if len(totals) <= 1:
        return None
    if wanted is not None and wanted not in [t.device for t in totals]:
        raise ValueError(f"no device {wanted} in this trace (devices: "
                         f"{', '.join(str(t.device) for t in totals) or 'none'})")
    return wanted if wanted is not None else totals[0].device
