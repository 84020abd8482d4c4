#!/usr/bin/env python3
"""Record real, event-dense decode traces for the speed benchmarks (needs torch + transformers + CUDA).

A randomly initialised Llama-architecture model generates many tokens, profiled from start to end,
so the trace is mostly decode passes, as a serving trace is:
  graphs     static KV cache + torch.compile mode="reduce-overhead": each decode pass is one CUDA graph
             replay, its kernels carry no launch call of their own (the shape of a vLLM decode trace)
  compiled   torch.compile(dynamic=True) of the forward: every kernel launched on its own (Triton, cuBLAS)
Usage: record_dense.py OUTDIR [graphs] [compiled] [--layers N --batch B --prompt P --new T --tag TAG]
Writes TAG_dense_<variant>.json.gz and prints its size, kernel and event counts.
"""
import argparse, gzip, json, os, shutil, time

import torch
import transformers
from torch.profiler import ProfilerActivity, profile
from transformers import LlamaConfig, LlamaForCausalLM

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("variants", nargs="*", default=["graphs", "compiled"])
p.add_argument("--layers", type=int, default=8)
p.add_argument("--batch", type=int, default=4)
p.add_argument("--prompt", type=int, default=128)
p.add_argument("--new", type=int, default=512)
p.add_argument("--tag", default="h100")
a = p.parse_args()
os.makedirs(a.out, exist_ok=True)
print("torch", torch.__version__, "transformers", transformers.__version__, torch.cuda.get_device_name(0), flush=True)


def model():
    cfg = LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=a.layers, num_attention_heads=32,
                      num_key_value_heads=8, vocab_size=32000, max_position_embeddings=4096,
                      attn_implementation="sdpa")
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).to(device="cuda", dtype=torch.bfloat16).eval()


def record(name, m, **gen):
    ids = torch.randint(0, 32000, (a.batch, a.prompt), device="cuda")
    kw = dict(max_new_tokens=a.new, min_new_tokens=a.new, do_sample=False, pad_token_id=0, **gen)
    t = time.time()
    with torch.no_grad():
        m.generate(ids, **kw)   # warm-up: compile, capture the graphs
        torch.cuda.synchronize()
    print(f"{name}: warm-up {time.time() - t:.1f} s", flush=True)
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        m.generate(ids, **kw)
        torch.cuda.synchronize()
    raw = os.path.join(a.out, f"{a.tag}_dense_{name}.json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as f:
        events = json.load(f)["traceEvents"]
    kernels = sum(1 for e in events if e.get("cat") == "kernel")
    with open(raw, "rb") as f, gzip.open(raw + ".gz", "wb", compresslevel=6) as g:
        shutil.copyfileobj(f, g)
    print(f"{name}: {os.path.getsize(raw) / 1e6:.1f} MB JSON, {os.path.getsize(raw + '.gz') / 1e6:.1f} MB gzip, "
          f"{len(events)} events, {kernels} kernels, {time.time() - t:.1f} s", flush=True)
    os.remove(raw)


for v in a.variants:
    if v == "graphs":
        record(v, model(), cache_implementation="static",
               compile_config=transformers.CompileConfig(fullgraph=False, mode="reduce-overhead"))
    elif v == "compiled":
        m = model()
        m.forward = torch.compile(m.forward, dynamic=True)
        record(v, m)
    torch.cuda.empty_cache()
