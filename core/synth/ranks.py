"""Generated multi-rank runs: one Kineto file per rank with `distributedInfo`, `record_param_comms`
and NCCL all-reduce kernels, a planted straggler, a chosen transfer time and compute overlapping the
communication on a second stream. The truth (what every figure must read) comes back with the files.

Every rank runs the same program: per pass, `layers` × (a GEMM, then an all-reduce of `nbytes`).
A rank reaches each all-reduce when its GEMM ends; the all-reduce ends on every rank at the last
arrival plus `transfer_us`, so an early rank's all-reduce kernel lasts its wait plus the transfer.
The straggler's GEMMs are `straggle_us` longer. With `overlap_us`, a second-stream kernel runs for
that long from the start of each all-reduce (communication hidden behind compute).

Each `record_param_comms` carries what newer PyTorch records (`Collective name`, `Seq`, `Process
Group Name`, `Group size`, `In/Out msg nelems`, `dtype`) unless `comm_params=False` (older
PyTorch: input shapes only). Plants for matching across ranks:
- `missing`: rank → sequence numbers of process group "0" whose collective that rank's file
  lacks (a cut or sampled trace);
- `reorder`: every layer also all-reduces `nbytes // 4` in process group "1" (its own stream,
  `transfer_us / 2`), issued 2 µs after group "0"'s on every rank but `reorder`, which issues
  group "1"'s first: the i-th all-reduce on that rank is not the i-th on the others.
- `late_launch`: that rank's host launches every all-reduce `late_launch_us` after its GEMM ended
  (more than the 18 µs from launch to start: the device idles waiting for it).
The truth lists every collective: its group, sequence number, bytes, transfer and the ranks that
ran it.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any

import orjson

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
SIDE = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
NAMINGS = ("distributed", "vllm", "sglang", "torchtitan", "plain")


def _name(naming: str, rank: int) -> str:
    return {"distributed": f"trace_{rank}.json.gz", "plain": f"trace_{rank}.json.gz",
            "vllm": f"dp0_pp0_tp{rank}_dcp0_ep{rank}_rank{rank}.1700000000.pt.trace.json.gz",
            "sglang": f"1700000000-TP-{rank}.trace.json.gz",
            "torchtitan": f"rank{rank}_trace.json.gz"}[naming]


def write_run(out_dir: str | os.PathLike, *, ranks: int = 4, passes: int = 3, layers: int = 4,
              gemm_us: float = 200.0, straggler: int | None = 2, straggle_us: float = 50.0,
              transfer_us: float = 80.0, overlap_us: float = 0.0, nbytes: int = 8 << 20,
              gpu: str = "NVIDIA H100 80GB HBM3", naming: str = "distributed", jitter_us: float = 0.0,
              step_tokens: int = 0, seed: int = 0, comm_params: bool = True,
              missing: dict[int, list[int]] | None = None, reorder: int | None = None,
              late_launch: int | None = None, late_launch_us: float = 0.0) -> dict[str, Any]:
    """Write one file per rank into `out_dir`; returns the truth: files, per-rank figures (µs),
    the straggler, the collectives and their transfer time."""
    import random

    if naming not in NAMINGS:
        raise ValueError(f"naming must be one of {', '.join(NAMINGS)}")
    if not 0 <= overlap_us <= transfer_us:
        raise ValueError("overlap_us must lie in [0, transfer_us]: the overlap is hidden inside every rank's all-reduce")
    if reorder is not None and (overlap_us or not 0 <= reorder < ranks):
        raise ValueError("reorder: a rank of the run, without overlap_us")
    missing = {r: set(v) for r, v in (missing or {}).items()}
    rnd = random.Random(seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = 1_700_000_000_000.0
    elems = nbytes // 2   # bf16
    events: list[list[dict[str, Any]]] = [[] for _ in range(ranks)]
    ids = [1000 * (r + 1) for r in range(ranks)]
    clock = t0
    truth_ranks = [{"compute_us": 0.0, "comm_us": 0.0, "exposed_comm_us": 0.0, "last": 0, "first": None,
                    "wait_us": 0.0, "end": 0.0} for _ in range(ranks)]
    seq = seq1 = 0
    collectives: list[dict[str, Any]] = []

    def all_reduce(r: int, start: float, d: float, n: int, pg: str, sq: int, stream: int) -> None:
        params = ({"Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": n, "Out msg nelems": n,
                   "Group size": ranks, "Process Group Name": pg, "Seq": sq, "Rank": r,
                   "Process Group Ranks": str(list(range(ranks)))} if comm_params else None)
        _kernel(events[r], ids, r, ALL_REDUCE, start, d, stream=stream, cpu_name="record_param_comms",
                dims=[[n], [], []], types=["c10::BFloat16", "", ""], extra=params)

    for p in range(passes):
        pass_start = clock
        for layer in range(layers):
            arrive = []
            for r in range(ranks):
                g = gemm_us + (straggle_us if r == straggler else 0.0) + (rnd.uniform(0, jitter_us) if jitter_us else 0.0)
                _kernel(events[r], ids, r, GEMM, clock, g, stream=7, cpu_name="aten::mm",
                        dims=[[4096, 4096], [4096, 4096]], types=["c10::BFloat16", "c10::BFloat16"])
                truth_ranks[r]["compute_us"] += g
                arrive.append(clock + g)
            there = [r for r in range(ranks) if seq not in missing.get(r, ())]
            # with a second group, one rank issues it first: its group "0" collective comes 2 µs later
            # a late host: rank `late_launch` launches each all-reduce `late_launch_us` after its GEMM
            # ended (the device idles meanwhile)
            start = [a + (2.0 if r == reorder else 0.0) + (late_launch_us if r == late_launch else 0.0)
                     for r, a in enumerate(arrive)]
            end = max(start) + transfer_us
            comm_iv: list[list[tuple[float, float]]] = [[(start[r], end)] for r in range(ranks)]
            for r in there:
                d = end - start[r]
                all_reduce(r, start[r], d, elems, "0", seq, 13)
                truth_ranks[r]["wait_us"] += d - transfer_us
                if overlap_us > 0:
                    _kernel(events[r], ids, r, SIDE, start[r], overlap_us, stream=20, cpu_name="aten::fill_",
                            dims=[[1024]], types=["float"])
                    truth_ranks[r]["compute_us"] += overlap_us
            collectives.append({"pg": "0", "seq": seq, "nbytes": nbytes, "transfer_us": transfer_us, "ranks": there,
                                "starts": [start[r] for r in there], "end": end})
            if reorder is not None:
                start1 = [a + (0.0 if r == reorder else 2.0) for r, a in enumerate(arrive)]
                end1 = max(start1) + transfer_us / 2
                for r in range(ranks):
                    all_reduce(r, start1[r], end1 - start1[r], elems // 4, "1", seq1, 14)
                    comm_iv[r].append((start1[r], end1))
                collectives.append({"pg": "1", "seq": seq1, "nbytes": (elems // 4) * 2, "transfer_us": transfer_us / 2,
                                    "ranks": list(range(ranks)), "starts": start1, "end": end1})
                seq1 += 1
                end = max(end, end1)
            for r in range(ranks):
                if r not in there:
                    comm_iv[r] = comm_iv[r][1:]
                busy = _union(comm_iv[r])
                truth_ranks[r]["comm_us"] += busy
                truth_ranks[r]["exposed_comm_us"] += busy - (min(overlap_us, end - start[r]) if r in there else 0.0)
            last = max(there, key=lambda r: start[r])
            truth_ranks[last]["last"] += 1
            seq += 1
            clock = end
        for r in range(ranks):
            # a vLLM decode step of `step_tokens` requests (one query token each) when asked
            step = (f"execute_{step_tokens}_context_0(sq0sk0)_generation_{step_tokens}(sq{step_tokens}"
                    f"sk{100 * step_tokens})" if step_tokens else f"ProfilerStep#{p + 2}")
            events[r].append({"ph": "X", "cat": "user_annotation", "name": step, "pid": 100 + r,
                              "tid": 1, "ts": pass_start - 30.0, "dur": clock - pass_start + 30.0})
        clock += 40.0     # the host's gap between passes
    files = []
    for r in range(ranks):
        doc: dict[str, Any] = {"schemaVersion": 1,
                               "deviceProperties": [{"id": 0, "name": gpu, "totalGlobalMem": 85520809984,
                                                     "computeMajor": 9, "computeMinor": 0, "numSms": 132,
                                                     "warpSize": 32}]}
        if naming == "distributed":   # before the events, where Kineto writes it
            doc["distributedInfo"] = {"backend": "nccl", "rank": r, "world_size": ranks}
        doc["record_shapes"] = 1
        doc["traceEvents"] = events[r]
        path = out / _name(naming, r)
        with gzip.open(path, "wb") as f:
            f.write(orjson.dumps(doc))
        files.append(str(path))
    for r in range(ranks):
        ks = [e for e in events[r] if e.get("cat") == "kernel"]
        truth_ranks[r]["wall_us"] = max(e["ts"] + e["dur"] for e in ks) - min(e["ts"] for e in ks)
        del truth_ranks[r]["first"], truth_ranks[r]["end"]
    return {"files": files, "ranks": truth_ranks, "straggler": straggler, "collectives": seq,
            "transfer_us": transfer_us, "nbytes": nbytes, "world_size": ranks, "instances": collectives}


def _union(iv: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for s, e in sorted(iv):
        if e > reach:
            total += e - max(s, reach)
            reach = e
    return total


def _kernel(ev: list, ids: list[int], rank: int, name: str, start: float, dur: float, *, stream: int,
            cpu_name: str, dims, types, extra: dict | None = None) -> None:
    """A CPU op enclosing its launch (20 µs before the kernel) and the kernel, joined by ids."""
    ids[rank] += 1
    i = ids[rank]
    pid = 100 + rank
    cpu_ts = start - 20.0
    args = {"External id": i, "Input Dims": dims, "Input type": types}
    if extra:
        args.update(extra)
    ev.append({"ph": "X", "cat": "cpu_op", "name": cpu_name, "pid": pid, "tid": 1, "ts": cpu_ts, "dur": 8.0,
               "args": args})
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": 1,
               "ts": cpu_ts + 2.0, "dur": 4.0, "args": {"External id": i, "correlation": i}})
    ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": start, "dur": dur,
               "args": {"External id": i, "correlation": i, "device": 0, "stream": stream}})
