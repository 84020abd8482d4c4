"""`kerneldiff synth OUT_DIR`: write a synthetic trace pair with planted differences (+ truth).

With `--single`, write one trace without planted differences (side A's settings), e.g. for
benchmarks: `kerneldiff synth /tmp/bench --single --size 2GB`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kerneldiff.cli.args import flag_number
from kerneldiff.core.errors import TraceError

MAX_LAYERS = 512
MAX_STEPS = 100_000
MAX_LAYER_STEPS = 2_000_000   # ~100 kernels each: already a multi-GB trace

# A synthetic AIE array as large as real ones get (8 rows x 38 columns on Versal AIE-ML): a typo of
# twenty digits would otherwise build events for ever.
_aie_dim = flag_number(integer=True, lo=1, hi=64)


def add_parser(sub) -> None:
    p = sub.add_parser("synth", help="write a synthetic trace pair with planted differences and its ground truth")
    p.add_argument("out_dir", help="directory to write into (created if missing)")
    p.add_argument("--seed", type=flag_number(integer=True, lo=0, hi=2**32 - 1), default=0, help="random seed; same seed, same bytes (default 0)")
    # bounded: the generator's run grows with layers x steps (a 20-digit --layers ran until killed)
    p.add_argument("--layers", type=flag_number(integer=True, lo=1, hi=MAX_LAYERS), default=8,
                   help=f"transformer layers, 1 to {MAX_LAYERS} (default 8)")
    p.add_argument("--steps", type=flag_number(integer=True, lo=1, hi=MAX_STEPS), default=6,
                   help=f"steps per trace, 1 to {MAX_STEPS:,} (default 6; --size grows a trace further)")
    p.add_argument("--prefill-steps", type=flag_number(integer=True, lo=0, hi=MAX_STEPS), default=1, help="leading prefill steps (default 1)")
    p.add_argument("--mixed-steps", type=flag_number(integer=True, lo=0, hi=MAX_STEPS), default=0, help="mixed prefill+decode steps after them")
    p.add_argument("--moe", action="store_true", help="MoE model instead of dense MLPs")
    p.add_argument("--graph", action="store_true", help="replay decode steps from a CUDA/HIP graph")
    p.add_argument("--tp", type=flag_number(integer=True, lo=1, hi=64), default=1, help="tensor-parallel size (>1 adds all-reduce kernels)")
    p.add_argument("--gzip", action="store_true", help="write .json.gz instead of .json")
    p.add_argument("--size", help="grow each trace to about this size with extra decode steps, e.g. 1GB")
    p.add_argument("--vendor-a", choices=("amd", "nvidia"), help="vendor of side A (default amd, or --gpu-a's)")
    p.add_argument("--vendor-b", choices=("amd", "nvidia"), help="vendor of side B (default nvidia, or --gpu-b's)")
    p.add_argument("--gpu-a", choices=("mi300x", "mi355x", "h100", "b200"), help="GPU of side A")
    p.add_argument("--gpu-b", choices=("mi300x", "mi355x", "h100", "b200"), help="GPU of side B")
    p.add_argument("--annotation", choices=("vllm", "vllm-old", "sglang", "hf", "sglang-double", "hf-generate"),
                   default="vllm", help="step annotation style (default vllm; hf-generate: HF generate() with "
                   "module calls and a ProfilerStep container; sglang-double: each step annotated twice)")
    p.add_argument("--no-stack", action="store_true", help="omit python_function events")
    p.add_argument("--no-shapes", action="store_true", help="omit record_shapes (Input Dims / Input type)")
    p.add_argument("--attention", choices=("fused", "decomposed"), default="fused",
                   help="one attention kernel, or GEMM + softmax + GEMM (HF eager attention)")
    p.add_argument("--sampling", choices=("greedy", "sample"), default="greedy", help="next-token choice (hf-generate)")
    p.add_argument("--single", action="store_true", help="write one trace (no planted differences)")
    p.add_argument("--aie", action="store_true",
                   help="write an AMD AIE (NPU) trace instead (uses --seed, --gzip, --aie-rows/--aie-cols)")
    p.add_argument("--ranks", type=flag_number(integer=True, lo=2, hi=64), default=None,
                   help="write two runs of this many rank traces instead (run_a: a planted straggler and slower "
                        "all-reduces; run_b: none, and all-reduces half hidden behind compute), with their truth")
    p.add_argument("--straggler", type=flag_number(integer=True, lo=0, hi=63), default=None,
                   help="--ranks: the straggling rank of run_a (default: the last)")
    p.add_argument("--no-comm-params", action="store_true",
                   help="--ranks: record_param_comms without the collective's name, sequence number, process group, "
                        "group size, element counts and dtype (older PyTorch): collectives are then matched by order")
    p.add_argument("--aie-rows", type=_aie_dim, default=2, help="AIE core rows, 1 to 64 (default 2)")
    p.add_argument("--aie-cols", type=_aie_dim, default=2, help="AIE core columns, 1 to 64 (default 2)")


def run(args) -> int:
    from kerneldiff.core.session import SYNTH_GPUS as GPUS
    from kerneldiff.core.session import SynthConfig, parse_size, write_pair, write_trace

    vendor_a = args.vendor_a or (GPUS[args.gpu_a].vendor if args.gpu_a else "amd")
    vendor_b = args.vendor_b or (GPUS[args.gpu_b].vendor if args.gpu_b else "nvidia")

    # plain print: the paths are the output, scripts read them line by line
    try:
        target = parse_size(args.size) if args.size else 0
    except ValueError as e:
        print(f"kerneldiff synth: {e}", file=sys.stderr)
        return 2
    if args.layers * args.steps > MAX_LAYER_STEPS:
        print(f"kerneldiff synth: --layers x --steps is {args.layers * args.steps:,}, more than "
              f"{MAX_LAYER_STEPS:,}: use --size to grow a trace instead", file=sys.stderr)
        return 2
    out_dir = Path(args.out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise TraceError(str(out_dir), "exists and is not a directory")
    if args.aie:
        return _aie(args, out_dir)
    if args.ranks is not None:
        return _runs(args, out_dir)
    try:
        if args.single:
            out_dir.mkdir(parents=True, exist_ok=True)
            cfg = SynthConfig(vendor=vendor_a, gpu=args.gpu_a, layers=args.layers, steps=args.steps,
                              prefill_steps=args.prefill_steps, mixed_steps=args.mixed_steps, moe=args.moe,
                              graph=args.graph, tp=args.tp, seed=args.seed, gzip=args.gzip,
                              annotation_style=args.annotation, with_stack=not args.no_stack,
                              target_bytes=target)
            path = out_dir / f"synth_{args.seed}{'.json.gz' if args.gzip else '.json'}"
            stats = write_trace(path, cfg)
            print(path)
            print(f"{stats['bytes'] / 1e6:.1f} MB on disk, {stats['kernels']} kernels, "
                  f"{len(stats['steps'])} steps, {stats['mb_per_s']:.0f} MB/s of JSON", file=sys.stderr)
            return 0
        paths = write_pair(out_dir, args.seed, layers=args.layers, steps=args.steps,
                           prefill_steps=args.prefill_steps, mixed_steps=args.mixed_steps, moe=args.moe,
                           graph=args.graph, tp=args.tp, vendor_a=vendor_a, vendor_b=vendor_b,
                           gpu_a=args.gpu_a, gpu_b=args.gpu_b, annotation=args.annotation, gzip=args.gzip,
                           target_bytes=target, with_stack=not args.no_stack, record_shapes=not args.no_shapes,
                           attention=args.attention, sampling=args.sampling)
    except ValueError as e:
        print(f"kerneldiff synth: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        raise TraceError(str(out_dir), f"cannot write: {e.strerror or e}") from None
    for p in paths:
        print(p)
    return 0


def _aie(args, out_dir: Path) -> int:
    """An AIE trace plus its planted truth (iterations per core, duplicates, outliers)."""
    import json
    from dataclasses import asdict

    from kerneldiff.core.session import AiePlan, write_aie_trace

    if args.aie_rows < 1 or args.aie_cols < 1:
        print("kerneldiff synth: --aie-rows and --aie-cols must be >= 1", file=sys.stderr)
        return 2
    out_dir.mkdir(parents=True, exist_ok=True)
    plan = AiePlan(rows=args.aie_rows, cols=args.aie_cols, seed=args.seed)
    path = out_dir / f"aie_{args.seed}{'.json.gz' if args.gzip else '.json'}"
    truth = write_aie_trace(path, plan)
    truth_path = out_dir / f"aie_{args.seed}_truth.json"
    truth_path.write_text(json.dumps({"plan": asdict(plan), "truth": asdict(truth)}, indent=1, default=str))
    print(path)
    print(truth_path)
    print(f"analyse: kerneldiff aie {path} --M {plan.M} --K {plan.K} --N {plan.N} --rows {plan.rows} "
          f"--cols {plan.cols} --warmup {plan.warmup} --iterations {plan.iterations}", file=sys.stderr)
    return 0


def _runs(args, out_dir: Path) -> int:
    """Two runs of rank traces (kerneldiff.core.synth.ranks) and their truth."""
    import json

    from kerneldiff.core.session import write_run

    straggler = args.ranks - 1 if args.straggler is None else args.straggler
    if straggler >= args.ranks:
        print(f"kerneldiff synth: --straggler {straggler} is not a rank of {args.ranks}", file=sys.stderr)
        return 2
    try:
        truth = {"a": write_run(out_dir / "run_a", ranks=args.ranks, straggler=straggler, straggle_us=50.0,
                                transfer_us=80.0, seed=args.seed, comm_params=not args.no_comm_params),
                 "b": write_run(out_dir / "run_b", ranks=args.ranks, straggler=None, transfer_us=60.0,
                                overlap_us=30.0, seed=args.seed, comm_params=not args.no_comm_params)}
    except OSError as e:
        raise TraceError(str(out_dir), f"cannot write: {e.strerror or e}") from None
    (out_dir / "runs_truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
    print(out_dir / "run_a")
    print(out_dir / "run_b")
    print(out_dir / "runs_truth.json")
    return 0
