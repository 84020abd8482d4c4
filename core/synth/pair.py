"""Synthetic Kineto traces of vLLM-like LLM inference, and trace pairs with planted differences.

`write_trace(path, cfg)` streams one trace (plain JSON or gzip) shaped like real PyTorch-profiler
output: metadata first (deviceProperties, vendor runtime versions, distributedInfo, ...), then
`traceEvents` holding step annotations (CPU `user_annotation` and its `gpu_user_annotation`
mirror), `python_function` frames (with_stack), nested `cpu_op`s, runtime launches
(`hipLaunchKernel` / `hipExtModuleLaunchKernel` / `hipModuleLaunchKernel`, `cudaLaunchKernel` /
`cudaLaunchKernelExC` / `cuLaunchKernelEx`; one `hipGraphLaunch` / `cudaGraphLaunch` for a
replayed decode graph, whose correlation every graph kernel carries), `kernel` / `gpu_memcpy` /
`gpu_memset` events, `ac2g` flow pairs (s at the launch, f at the GPU event, id = correlation)
and process/thread metadata. Quirks of real traces are options: numbers in args as strings,
integer or float-with-ns `ts`, empty device names, kernels without External id.

The model is a pre-norm transformer (dense or MoE, optional tensor parallelism): embedding, then per
layer input RMSNorm, QKV GEMM, rotary, KV-cache write, attention (prefill / decode kernels by
phase), O GEMM, [all-reduce], post-attention fused-add RMSNorm, MLP (gate_up GEMM, silu_and_mul,
down GEMM) or MoE (router GEMM, top-k, routing, expert GEMMs, finalize), [all-reduce]; then the
final norm, lm_head and sampling (softmax, argmax, top-k, sort) and a copy of the tokens to the
host. The GPU lags the CPU (see `kerneldiff.core.synth.trace`): kernels often run inside the NEXT step's CPU
annotation window, so a loader must place a kernel by its launch, not by its own timestamp.

Structure options plant the cases real traces differ in (the truth's `structure` says what to
read): `annotation_style` "hf-generate" (HF generate(): ProfilerStep containers, no step
annotations) or "sglang-double" (each step annotated twice); `attention="decomposed"` (batched
GEMM + softmax + batched GEMM instead of an attention kernel); `graph` (decode passes replayed:
one launch, no Python, no operators); `with_stack=False` (no python_function events, so no
module calls); `record_shapes=False` (no Input Dims).

`write_pair(out_dir, seed=...)` writes side A and side B (different vendors or GPUs, same model)
plus a ground-truth JSON. Everything is deterministic for a seed: same arguments, same bytes.

Ground-truth schema ("kerneldiff-synth-truth/1")
------------------------------------------------
    schema            "kerneldiff-synth-truth/1"
    seed              int
    model             {layers, moe, tp, batch, prompt_len, prefill_requests, dims{...}}
    steps             number of steps S of side A (both sides have S steps unless target_bytes
                      grew them to different lengths; each side's step_records are its own)
    phases            side A's phase per step: "prefill" | "decode" | "mixed" (first
                      prefill_steps are prefill, then mixed_steps mixed, the rest decode)
    annotation_style  vllm | vllm-old | sglang | hf | sglang-double | hf-generate
                      hf: one "ProfilerStep#N" per step (carries no phase); sglang-double: SGLang's
                      two annotations of one step, the engine's vLLM-style `execute_…` around the
                      scheduler's `step[…]`; hf-generate: Hugging Face generate(), no step
                      annotation at all, one ProfilerStep container per generate() call
                      (`generate_calls`) around its passes (a prompt, then decodes), the embedding's
                      indices recorded as [batch, tokens per sequence], lm_head inside the model
                      call, greedy or sampled (`sampling`) next tokens
    categories        {kernel or activity name: intended category} for every name on either side,
                      spelled as core/registry.toml spells categories
    sides.A / sides.B
        file            file name beside the truth file
        vendor          "AMD" | "NVIDIA";  gpu: catalog key (mi300x, mi355x, h100, b200);
        gpu_name        real product name (the trace may hide it: quirks.empty_device_name)
        graph           decode steps replayed from a graph (one launch per step)
        quirks          {strings_numbers, float_ts, empty_device_name, kernel_external_ids,
                         with_stack}
        kernels, memcpys, memsets, launches       totals in the file
        layer_structure {phase: {pre, per_layer, post}}: GPU activities (kernels + memcpy +
                        memset) of one step in GPU order = pre + layers * per_layer + post; a
                        layer starts at its input norm (or fused norm+GEMM) and ends before the
                        next layer's input norm / the final norm
        layer_roles     {phase: [role of each activity of one layer, in order]}
        category_counts {category: count over the whole file} (activities included)
        kernel_counts   {name: count over the whole file}
        step_records    per step: index, phase, name (annotation text), graph, cpu_ts_us,
                        cpu_end_us (CPU annotation window), gpu_first_us, gpu_end_us, kernels,
                        memcpys, memsets, lagged (activities starting after cpu_end_us);
                        hf-generate: container (index into structure.containers), and the window
                        is the step's own (no annotation records it)
        lagged          total GPU activities that ran after their step's CPU window closed
        structure       (only when a structural option is used: annotation sglang-double or
                        hf-generate, attention decomposed, record_shapes off — plain pairs keep
                        the schema above) what the readings of passes, phases and layers must find:
                        passes, phases [per pass], layers_per_pass, annotation_style,
                        step_annotations_per_pass (0, 1 or 2), containers [{name, passes}]
                        (ProfilerStep windows), graph_replayed [pass indices: one graph launch,
                        no module call or operator], module_calls (with_stack), top_level_module,
                        decoder_layer_module, record_shapes, embedding_input [per pass: [batch,
                        tokens per sequence] the embedding records, or None], attention (fused |
                        decomposed: batched GEMM, softmax, batched GEMM), sampling
    planted
        slow_layer      {side, layer, factor}: every kernel of that layer index on that side
                        is `factor` times slower (mean) in every step
        fusions         list of:
          {type: "explicit", fused_side, unfused_side, fused_category, fused_kernel,
           components: [{category, kernels: [names]}], per_layer, count}
             fused_side runs ONE kernel of fused_category where unfused_side runs the
             components one after another (RMSNorm then QKV GEMM; MoE GEMM then silu_and_mul)
          {type: "sequence", unique_side, unique_kernel, unique_category, follows_category,
           follows_kernels, fused_side, fused_kernel, fused_category, per_layer, count}
             unique_side runs a kernel type the other side never runs (fp8 Quantize) right
             after a common type (its post-attention RMSNorm); fused_side folds it into that
             norm (fused_kernel is still an RMSNorm)
        count_imbalance {category, more_side, less_side, ratio, count_more, count_less,
                         kernels: {side: name}}: the more side launches the KV-cache write twice
        missing_kernel  {name, category, present_side, missing_side, per_layer, count,
                         position}: an elementwise residual add at the end of every layer that
                        only present_side runs (its category appears on no other kernel)
    unplanted         differences that are NOT planted but come from the GPUs' kernel libraries:
        per_step_category_differences  {phase: {category: {A: n, B: m}}} per-step category counts
                        of the two sides' plant-free programs where they differ. Empty for the
                        default AMD MI300X vs NVIDIA H100 pair; same-vendor pairs differ in how
                        attention kernels are named (B200 / MI355X name the phase, registry
                        categories "Attention (prefill)" / "Attention (decode)", group "Attention")
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from kerneldiff.core.synth import names as sn
from kerneldiff.core.errors import TraceError
from kerneldiff.core.synth.trace import (ModelDims, Plant, TraceWriter, build_program, phase_list, step_namer,
                          tokens_for)

TRUTH_SCHEMA = "kerneldiff-synth-truth/1"
ANNOTATION_STYLES = ("vllm", "vllm-old", "sglang", "hf", "sglang-double", "hf-generate")
ATTENTION_KINDS = ("fused", "decomposed")
VENDORS = ("amd", "nvidia")

__all__ = ["SynthConfig", "Plant", "write_trace", "write_pair", "write_demo", "parse_size",
           "ANNOTATION_STYLES", "TRUTH_SCHEMA", "DEMO_PARAMS"]


@dataclass
class SynthConfig:
    vendor: str = "amd"                 # amd | nvidia
    gpu: str | None = None              # mi300x | mi355x | h100 | b200 (default per vendor)
    layers: int = 8
    steps: int = 6
    prefill_steps: int = 1
    mixed_steps: int = 0
    moe: bool = False
    graph: bool = False                 # replay decode steps from a graph
    tp: int = 1                         # tensor parallel size (>1 adds all-reduce kernels)
    batch: int = 32                     # decode requests per step
    prompt_len: int = 1024
    prefill_requests: int = 2
    seed: int = 0
    salt: int = 0                       # distinguishes the random streams of a pair's sides
    gzip: bool | None = None            # None: decide from the path (".gz")
    strings_numbers: bool = False       # "correlation": "505113" instead of 505113
    float_ts: bool = True               # ts with ns digits (else integer µs)
    with_stack: bool = True
    record_shapes: bool = True
    annotation_style: str = "vllm"
    attention: str = "fused"            # fused | decomposed (batched GEMM, softmax, batched GEMM)
    generate_calls: int = 1             # hf-generate: ProfilerStep containers (generate() calls)
    sampling: str = "greedy"            # hf-generate: greedy (argmax) | sample (top-k, top-p, softmax, multinomial)
    gpu_annotations: bool = True        # mirror step annotations on the GPU timeline
    empty_device_name: bool = False     # deviceProperties name "" (gfx942 vLLM traces)
    kernel_external_ids: bool = True    # eager kernels carry External id
    target_bytes: int = 0               # keep adding decode steps until the file is this big
    sync_every: int = 3                 # every n-th step ends with a blocking stream sync (0: never)
    device: int = 0
    noise: float = 0.04                 # sigma of the log-normal kernel duration noise
    plant: Plant = field(default_factory=Plant)

    def resolved(self) -> "SynthConfig":
        if self.vendor not in VENDORS:
            raise ValueError(f"vendor must be one of {VENDORS}, not {self.vendor!r}")
        gpu = self.gpu or sn.DEFAULT_GPU[self.vendor]
        if gpu not in sn.GPUS:
            raise ValueError(f"unknown gpu {gpu!r}; known: {', '.join(sn.GPUS)}")
        if sn.GPUS[gpu].vendor != self.vendor:
            raise ValueError(f"gpu {gpu} is not an {self.vendor} GPU")
        if self.annotation_style not in ANNOTATION_STYLES:
            raise ValueError(f"annotation style must be one of {ANNOTATION_STYLES}")
        if self.attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {ATTENTION_KINDS}")
        if self.annotation_style == "hf-generate":
            if self.mixed_steps:
                raise ValueError("hf-generate has no mixed steps (generate() runs one prefill, then decodes)")
            if not 1 <= self.generate_calls <= self.steps:
                raise ValueError("generate_calls must be between 1 and steps")
        if self.sampling not in ("greedy", "sample"):
            raise ValueError("sampling must be greedy or sample")
        if self.layers < 1 or self.steps < 1 or self.tp < 1 or self.batch < 1:
            raise ValueError("layers, steps, tp and batch must be >= 1")
        if self.prefill_steps < 0 or self.mixed_steps < 0 or self.sync_every < 0:
            raise ValueError("prefill_steps, mixed_steps and sync_every must be >= 0")
        if self.seed < 0 or self.salt < 0:
            raise ValueError("seed must be >= 0")
        return replace(self, gpu=gpu)


MAX_SYNTH_BYTES = 64 * 10**9   # far beyond any trace a profiler writes; bounds the generator's run


def parse_size(text: str) -> int:
    """'1GB', '500MB', '2G', '1048576' -> bytes (decimal units; KiB/MiB/GiB binary)."""
    s = text.strip().upper().replace(" ", "")
    units = {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "KB": 10**3, "MB": 10**6, "GB": 10**9,
             "K": 10**3, "M": 10**6, "G": 10**9, "B": 1}
    for u in sorted(units, key=len, reverse=True):
        if s.endswith(u):
            num = s[: -len(u)]
            break
    else:
        u, num = "B", s
    try:
        value = float(num)
    except ValueError:
        raise ValueError(f"not a size: {text!r} (try 500MB or 2GB)") from None
    if not 0 <= value * units[u] <= MAX_SYNTH_BYTES:   # NaN fails both; inf and 1e400 the second
        raise ValueError(f"size must be between 0 and {MAX_SYNTH_BYTES // 10**9} GB: {text!r}")
    return int(value * units[u])


def _hf(cfg: SynthConfig) -> bool:
    return cfg.annotation_style == "hf-generate"


def _tokens(cfg: SynthConfig, phase: str) -> int:
    if _hf(cfg):   # generate(): the same `batch` sequences, all their prompt tokens, then one each
        return cfg.batch * (cfg.prompt_len if phase == "prefill" else 1)
    return tokens_for(phase, cfg.batch, cfg.prompt_len, cfg.prefill_requests)


def _program(cfg: SynthConfig, phase: str, plant: Plant):
    seq = None
    if _hf(cfg):
        seq = (cfg.batch, cfg.prompt_len, cfg.prompt_len) if phase == "prefill" else (cfg.batch, 1, cfg.prompt_len)
    return build_program(cfg.gpu, phase, cfg.layers, cfg.moe, cfg.tp, plant, ModelDims(), _tokens(cfg, phase),
                         style="hf" if _hf(cfg) else "vllm", attention=cfg.attention, seq=seq, sampling=cfg.sampling)


def _programs(cfg: SynthConfig, phases: list[str]):
    return {ph: _program(cfg, ph, cfg.plant) for ph in sorted(set(phases) | {"decode"})}


def _containers(cfg: SynthConfig) -> list[int] | None:
    """Passes per generate() call (hf-generate), as even as they come; else None."""
    if not _hf(cfg):
        return None
    n, c = cfg.steps, cfg.generate_calls
    return [n // c + (1 if i < n % c else 0) for i in range(c)]


def _phases(cfg: SynthConfig) -> list[str]:
    sizes = _containers(cfg)
    if sizes is None:
        return phase_list(cfg.steps, cfg.prefill_steps, cfg.mixed_steps)
    return [ph for n in sizes for ph in phase_list(n, cfg.prefill_steps, 0)]   # each call starts with its prompt


def _structure(stats: dict[str, Any], cfg: SynthConfig) -> dict[str, Any]:
    """What the trace records of its own structure, and the truth the readings must find:
    passes, their phases, layers per pass, and the evidence each pass leaves."""
    recs = stats["steps"]
    style = cfg.annotation_style
    graph = [r["index"] for r in recs if r["graph"]]
    if stats["containers"]:
        containers = [{"name": c["name"], "passes": c["steps"]} for c in stats["containers"]]
    elif style == "hf":
        containers = [{"name": r["name"], "passes": [r["index"]]} for r in recs]
    else:
        containers = []
    hf = _hf(cfg)
    return {
        "passes": len(recs),
        "phases": [r["phase"] for r in recs],
        "layers_per_pass": [cfg.layers] * len(recs),
        "annotation_style": style,
        "step_annotations_per_pass": {"hf": 0, "hf-generate": 0, "sglang-double": 2}.get(style, 1),
        "containers": containers,
        "graph_replayed": graph,
        # python_function `nn.Module: <Class>_<i>` calls: the top-level model once per pass and its
        # decoder layers, except in graph-replayed passes (no Python runs)
        "module_calls": cfg.with_stack,
        "top_level_module": ("Qwen3Moe" if cfg.moe else "Llama") + "ForCausalLM",
        "decoder_layer_module": ("Qwen3Moe" if cfg.moe else "Llama") + "DecoderLayer",
        "record_shapes": cfg.record_shapes,
        # the token embedding's recorded indices [batch, tokens per sequence] (HF), None where the
        # pass has no embedding operator (graph replay) or no shapes; vLLM-style traces record [tokens]
        "embedding_input": [([cfg.batch, cfg.prompt_len if r["phase"] == "prefill" else 1]
                             if hf and cfg.record_shapes and not r["graph"] else None) for r in recs],
        "attention": cfg.attention,
        "sampling": cfg.sampling if hf else "engine",
    }


def _structure_planted(cfg: SynthConfig) -> bool:
    """Whether the truth gets a `structure` entry: traces that use a structural option (the
    shipped demo's truth stays byte-identical)."""
    return (cfg.annotation_style in ("sglang-double", "hf-generate") or cfg.attention != "fused"
            or not cfg.record_shapes)


def write_trace(path: str | os.PathLike, cfg: SynthConfig) -> dict[str, Any]:
    """Stream one synthetic trace to `path`.

    Returns statistics: path, bytes (on disk), uncompressed_bytes, events, seconds, mb_per_s
    (uncompressed JSON per second), kernels, memcpys, memsets, launches, name_counts,
    steps (per-step records, see the truth schema), config (resolved) and programs (per phase).
    """
    cfg = cfg.resolved()
    path = os.fspath(path)
    gz = cfg.gzip if cfg.gzip is not None else path.endswith(".gz")
    phases = _phases(cfg)
    programs = _programs(cfg, phases)
    namer = step_namer(cfg.annotation_style, cfg.batch, cfg.prompt_len, cfg.prefill_requests)
    try:
        stats = TraceWriter(path, cfg, programs, phases, namer, gz, _containers(cfg)).run()
    except OSError as e:
        raise TraceError(path, f"cannot write: {e.strerror or e}") from None
    stats["config"] = cfg
    stats["programs"] = programs
    stats["structure"] = _structure(stats, cfg)
    return stats


def _side_truth(stats: dict[str, Any], cfg: SynthConfig) -> dict[str, Any]:
    progs = stats["programs"]
    cats: dict[str, int] = {}
    for name, c in stats["name_counts"].items():
        cat = sn.CATEGORY[name]
        cats[cat] = cats.get(cat, 0) + c
    prof = sn.GPUS[cfg.gpu]
    used = sorted({s["phase"] for s in stats["steps"]})
    return {
        "file": os.path.basename(stats["path"]),
        "vendor": {"amd": "AMD", "nvidia": "NVIDIA"}[prof.vendor],
        "gpu": cfg.gpu,
        "gpu_name": prof.name,
        "graph": cfg.graph,
        "quirks": {"strings_numbers": cfg.strings_numbers, "float_ts": cfg.float_ts,
                   "empty_device_name": cfg.empty_device_name,
                   "kernel_external_ids": cfg.kernel_external_ids, "with_stack": cfg.with_stack},
        "kernels": stats["kernels"], "memcpys": stats["memcpys"], "memsets": stats["memsets"],
        "launches": stats["launches"],
        "layer_structure": {ph: {"pre": progs[ph].pre_count, "per_layer": progs[ph].per_layer,
                                 "post": progs[ph].post_count} for ph in used},
        "layer_roles": {ph: [a.role for a in progs[ph].activities() if a.layer == 0] for ph in used},
        "category_counts": dict(sorted(cats.items())),
        "kernel_counts": dict(sorted(stats["name_counts"].items())),
        "step_records": stats["steps"],
        "lagged": sum(s["lagged"] for s in stats["steps"]),
        **({"structure": stats["structure"]} if _structure_planted(cfg) else {}),
    }


def _names(gpu: str, role: str) -> list[str]:
    entry = sn.kernel_table(gpu)[role]
    if isinstance(entry, dict):
        return sorted(set(entry.values()))
    return [entry]  # type: ignore[list-item]


def write_pair(out_dir: str | os.PathLike, seed: int = 0, *, layers: int = 8, steps: int = 6,
               prefill_steps: int = 1, mixed_steps: int = 0, moe: bool = False, graph: bool = False,
               tp: int = 1, vendor_a: str = "amd", vendor_b: str = "nvidia", gpu_a: str | None = None,
               gpu_b: str | None = None, annotation: str = "vllm", gzip: bool = True,
               target_bytes: int = 0, with_stack: bool = True, prefix: str | None = None,
               quirks_a: dict[str, Any] | None = None, quirks_b: dict[str, Any] | None = None,
               record_shapes: bool = True, attention: str = "fused", generate_calls: int = 1,
               sampling: str = "greedy") -> tuple[Path, Path, Path]:
    """Write side A, side B and the ground truth into `out_dir`; returns their paths.

    Planted (from `seed`): a slow layer on side A; an explicit RMSNorm+GEMM fusion on one side
    (plus MoE GEMM+SwiGLU for MoE models); a sequence-pattern fusion (fp8 quant after the
    post-attention norm on one side, folded into the norm on the other); a 2x count imbalance of
    KV-cache writes; a per-layer elementwise kernel only one side runs. Default quirks: side A
    writes numbers as strings (and an empty device name when it is AMD, like gfx942 vLLM traces).
    """
    for v in (vendor_a, vendor_b):
        if v not in VENDORS:
            raise ValueError(f"vendor must be one of {VENDORS}, not {v!r}")
    if annotation not in ANNOTATION_STYLES:
        raise ValueError(f"annotation style must be one of {ANNOTATION_STYLES}")
    gpu_a = gpu_a or sn.DEFAULT_GPU[vendor_a]
    if gpu_b is None:
        gpu_b = sn.DEFAULT_GPU[vendor_b]
        if gpu_b == gpu_a:
            gpu_b = sn.OTHER_GPU[gpu_a]
    if gpu_a == gpu_b:
        raise ValueError("the two sides need different GPUs")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"kerneldiff-synth-pair-{seed}")
    sides = ("A", "B")
    slow_layer = rng.randrange(layers)
    factor = rng.choice([2.0, 2.5, 3.0, 4.0])
    norm_gemm_side = rng.choice(sides)
    quant_unique_side = rng.choice(sides)
    swiglu_side = rng.choice(sides)
    kv_more_side = rng.choice(sides)
    extra_side = rng.choice(sides)
    other = {"A": "B", "B": "A"}

    def plant(side: str) -> Plant:
        return Plant(slow_layer=slow_layer if side == "A" else -1,
                     slow_factor=factor if side == "A" else 1.0,
                     norm_gemm=norm_gemm_side == side,
                     norm_quant="split" if quant_unique_side == side else "fused",
                     moe_swiglu=swiglu_side == side,
                     kv_split=kv_more_side == side,
                     residual_add=extra_side == side)

    stem = prefix or f"synth_{seed}"
    ext = ".json.gz" if gzip else ".json"
    common = dict(layers=layers, steps=steps, prefill_steps=prefill_steps, mixed_steps=mixed_steps, moe=moe,
                  graph=graph, tp=tp, seed=seed, gzip=gzip, annotation_style=annotation,
                  target_bytes=target_bytes, with_stack=with_stack, record_shapes=record_shapes,
                  attention=attention, generate_calls=generate_calls, sampling=sampling)
    qa = {"strings_numbers": True, "empty_device_name": vendor_a == "amd"}
    qa.update(quirks_a or {})
    qb = dict(quirks_b or {})
    cfgs = {"A": SynthConfig(vendor=vendor_a, gpu=gpu_a, salt=1, plant=plant("A"), **common, **qa),
            "B": SynthConfig(vendor=vendor_b, gpu=gpu_b, salt=2, plant=plant("B"), **common, **qb)}
    paths = {s: out / f"{stem}_{s.lower()}{ext}" for s in sides}
    stats = {s: write_trace(paths[s], cfgs[s]) for s in sides}
    truth_sides = {s: _side_truth(stats[s], stats[s]["config"]) for s in sides}
    gpus = {s: stats[s]["config"].gpu for s in sides}
    n_steps = {s: len(stats[s]["steps"]) for s in sides}
    # per-layer plants count layers x steps on their side
    lxs = {s: layers * n_steps[s] for s in sides}

    def first_role_name(side: str, role: str) -> str:
        return _names(gpus[side], role)[0]

    fusions: list[dict[str, Any]] = [{
        "type": "explicit", "fused_side": norm_gemm_side, "unfused_side": other[norm_gemm_side],
        "fused_category": "RMSNorm+GEMM", "fused_kernel": first_role_name(norm_gemm_side, "norm_gemm"),
        "components": [
            {"category": "RMSNorm", "kernels": sorted(set(_names(gpus[other[norm_gemm_side]], "norm")
                                                          + _names(gpus[other[norm_gemm_side]], "add_norm")))},
            {"category": "Dense GEMM", "kernels": _names(gpus[other[norm_gemm_side]], "gemm_qkv")}],
        "per_layer": 1, "count": lxs[norm_gemm_side]}]
    if moe:
        fusions.append({
            "type": "explicit", "fused_side": swiglu_side, "unfused_side": other[swiglu_side],
            "fused_category": "MoE GEMM+SwiGLU", "fused_kernel": first_role_name(swiglu_side, "moe_gemm_swiglu"),
            "components": [{"category": "MoE GEMM", "kernels": _names(gpus[other[swiglu_side]], "moe_gemm1")},
                           {"category": "Activation", "kernels": _names(gpus[other[swiglu_side]], "act")}],
            "per_layer": 1, "count": lxs[swiglu_side]})
    fused_q = other[quant_unique_side]
    fusions.append({
        "type": "sequence", "unique_side": quant_unique_side,
        "unique_kernel": first_role_name(quant_unique_side, "quant"), "unique_category": "Quantize",
        "follows_category": "RMSNorm", "follows_kernels": _names(gpus[quant_unique_side], "add_norm"),
        "fused_side": fused_q, "fused_kernel": first_role_name(fused_q, "add_norm_quant"),
        "fused_category": "RMSNorm", "per_layer": 1, "count": lxs[quant_unique_side]})
    kv_less = other[kv_more_side]
    kv_names = {s: first_role_name(s, "kv_write") for s in sides}
    truth = {
        "schema": TRUTH_SCHEMA,
        "seed": seed,
        "model": {"layers": layers, "moe": moe, "tp": tp, "batch": cfgs["A"].batch,
                  "prompt_len": cfgs["A"].prompt_len, "prefill_requests": cfgs["A"].prefill_requests,
                  "dims": asdict(ModelDims())},
        "steps": n_steps["A"],
        "phases": [s["phase"] for s in stats["A"]["steps"]],
        "annotation_style": annotation,
        "categories": dict(sorted({n: sn.CATEGORY[n] for s in sides
                                   for n in stats[s]["name_counts"]}.items())),
        "sides": truth_sides,
        "planted": {
            "slow_layer": {"side": "A", "layer": slow_layer, "factor": factor},
            "fusions": fusions,
            "count_imbalance": {
                "category": "KV Cache", "more_side": kv_more_side, "less_side": kv_less, "ratio": 2.0,
                "count_more": stats[kv_more_side]["name_counts"][kv_names[kv_more_side]],
                "count_less": stats[kv_less]["name_counts"][kv_names[kv_less]],
                "kernels": kv_names},
            "missing_kernel": {"name": sn.RESIDUAL_ADD, "category": "Elementwise", "present_side": extra_side,
                               "missing_side": other[extra_side], "per_layer": 1, "count": lxs[extra_side],
                               "position": "last activity of every layer"},
        },
    }
    truth["unplanted"] = {"per_step_category_differences": _natural_differences(cfgs, sorted(
        {r["phase"] for s in sides for r in stats[s]["steps"]}))}
    truth_path = out / f"{stem}_truth.json"
    truth_path.write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
    return paths["A"], paths["B"], truth_path


def _natural_differences(cfgs: dict[str, SynthConfig], phases: list[str]) -> dict[str, Any]:
    """Per-step category counts of both sides WITHOUT plants, where they differ."""
    out: dict[str, Any] = {}
    for ph in phases:
        counts = {}
        for side, cfg in cfgs.items():
            prog = _program(cfg.resolved(), ph, Plant())
            counts[side] = Counter(a.category for a in prog.activities())
        diff = {cat: {"A": counts["A"][cat], "B": counts["B"][cat]}
                for cat in sorted(set(counts["A"]) | set(counts["B"])) if counts["A"][cat] != counts["B"][cat]}
        if diff:
            out[ph] = diff
    return out


# The bundled demo pair (core/demo): small enough to ship, rich enough to show every view.
DEMO_PARAMS: dict[str, Any] = dict(seed=7, layers=8, steps=6, prefill_steps=1, mixed_steps=0, moe=False,
                                   graph=False, tp=2, vendor_a="amd", vendor_b="nvidia", annotation="vllm",
                                   gzip=True, prefix="demo")


def write_demo(out_dir: str | os.PathLike) -> tuple[Path, Path, Path]:
    """(Re)generate the bundled demo pair into `out_dir`."""
    return write_pair(out_dir, **DEMO_PARAMS)
