#!/usr/bin/env python3
"""Record real PyTorch-profiler traces that hold collectives (needs torch + CUDA).

  nccl1   one rank, NCCL, two process groups: a tensor-parallel-shaped MLP step (all_reduce after the
          row-parallel GEMM) plus all_gather / reduce_scatter / broadcast / all_to_all, so that
          record_param_comms carries what this PyTorch version writes (Seq, Process Group Name, sizes).
  gloo2   two ranks (two processes) on the same GPU over Gloo, CUDA tensors: the same step on each rank,
          one file per rank, so that sequence numbers can be matched across ranks of a real run.
Usage: record_comms.py OUTDIR [nccl1] [gloo2]
"""
import gzip, os, shutil, sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.profiler import ProfilerActivity, profile


def step(x, w1, w2, pg2):
    h = torch.relu(x @ w1)
    y = h @ w2
    dist.all_reduce(y)                                   # the TP all-reduce
    n = dist.get_world_size()
    g = torch.empty(n * y.numel(), device=y.device, dtype=y.dtype)
    dist.all_gather_into_tensor(g, y.reshape(-1))
    r = torch.empty(y.numel() // n if y.numel() % n == 0 else y.numel(), device=y.device, dtype=y.dtype)
    if y.numel() % n == 0:
        dist.reduce_scatter_tensor(r, g[: y.numel()])
    dist.broadcast(y, src=0, group=pg2)
    dist.all_reduce(y[:64].contiguous(), group=pg2)
    return y


def run(rank, world, backend, out, tag):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533" if backend == "gloo" else "29534")
    torch.cuda.set_device(0)
    dist.init_process_group(backend, rank=rank, world_size=world)
    pg2 = dist.new_group(list(range(world)), backend=backend)
    torch.manual_seed(rank)
    dt = torch.bfloat16 if backend == "nccl" else torch.float32
    x = torch.randn(256, 1024, device="cuda", dtype=dt)
    w1 = torch.randn(1024, 2048, device="cuda", dtype=dt) * 0.02
    w2 = torch.randn(2048, 1024, device="cuda", dtype=dt) * 0.02
    for _ in range(3):
        step(x, w1, w2, pg2)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        for i in range(4):
            with torch.profiler.record_function(f"step_{i}"):
                step(x, w1, w2, pg2)
            if backend == "gloo" and rank == 1 and i == 2:
                torch.cuda._sleep(50_000_000)            # a planted straggler: rank 1 arrives late once
        torch.cuda.synchronize()
    path = os.path.join(out, f"{tag}_rank{rank}.json")
    prof.export_chrome_trace(path)
    with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
        shutil.copyfileobj(f, g)
    os.remove(path)
    dist.destroy_process_group()


if __name__ == "__main__":
    out = sys.argv[1]
    which = sys.argv[2:] or ["nccl1", "gloo2"]
    os.makedirs(out, exist_ok=True)
    print("torch", torch.__version__, torch.cuda.get_device_name(0), flush=True)
    if "nccl1" in which:
        mp.spawn(run, args=(1, "nccl", out, "h100_nccl_ws1"), nprocs=1)
    if "gloo2" in which:
        mp.spawn(run, args=(2, "gloo", out, "h100_gloo_ws2"), nprocs=2)
    for f in sorted(os.listdir(out)):
        print(f, os.path.getsize(os.path.join(out, f)))
