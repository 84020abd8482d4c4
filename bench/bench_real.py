"""Whole-process load and compare times on traces kerneldiff did not generate, against the naive
orjson loader and wafer-core 0.1.62 in the same run.

    python bench/bench_real.py                      # real traces (../shared/traces) + a dense 60 MB pair
    python bench/bench_real.py --repeat 5 --only dense,tiny

Rows (each timed from process start to exit, median of --repeat (5); the contenders of a row run
alternated, kerneldiff, naive, wafer-core, kerneldiff, ..., so that a busy machine slows them
alike and the ratio is from one run):
  * the largest real traces (h100_llama_eager_sdpa, h100_llama_compiled), as shipped (gzip) and
    inflated into --dir (plain): `kerneldiff info --json --no-cache` against `naive_load`
    (bench_load.py: whole file, orjson, a dict per kernel);
  * an event-dense 60 MB decode trace from `gen_dense.py` (short names, no stacks, graph-replayed
    kernels without launches of their own, 24 streams; written independently of core.synth):
    the same, and a pair of them (`compare --format json --no-cache`) against wafer-core's
    `analyze_traces` + `format_json`;
  * the real eager/compiled pair (h100_llama_eager_sdpa vs h100_llama_compiled, inflated: wafer-core
    reads no gzip), `compare` against wafer-core the same way (`--only realpair`);
  * real event-dense decode traces recorded on a GPU by bench/gpu/record_dense.py (8-layer Llama,
    512 new tokens: CUDA-graph replay on an H100 and an H200, 143 MB each, and torch.compile on the
    H100, 249 MB), when present in --recorded: `info` of each, and `compare` of the H100/H200 pair
    against wafer-core;
  * stand-ins for those where none are recorded (`--only standin`): real traces of ../shared grown by
    gen_replicated.py, a real graph-replay decode trace (vLLM, MI300X) to 140 MB, plain and gzip,
    and the real compiled trace twice (223 MB);
  * a one-kernel real trace (a100_triton_example): `info`, the fixed cost, against its floor;
  * start-up: `kerneldiff --version` against `python -c pass`;
  * with `--only gb` (not by default): a 1 GB plain trace made by `gen_replicated.py` from the real
    eager trace (its events repeated, ts and ids shifted; --gb-size), written to --dir and deleted
    after its row: `info` end to end and the reader alone, printed as GB/s (file bytes over median
    wall and CPU seconds); `--before-python` (an older build's interpreter) adds that build's
    reader alone, so both builds' GB/s come from one run. No naive loader in this row (it needs
    ~7.5x the file in memory and ~50 s a run);
  * in load rows, two more contenders: *floor*, a process that imports numpy and reads the file's
    bytes (gzip: inflated by ISA-L) without parsing them, so naive/floor is the largest ratio any
    reader written for Python could show; and *read only*, kerneldiff's reader into columns, no
    model and no analysis (`--no-floor` leaves both out).
The floor, the naive loader, the reader alone and `python -c pass` run on --python: by default the
interpreter beside --kerneldiff, so that they start as the measured install does. They ran on the
interpreter running the benchmark: from a development venv (an editable install, whose path hook
starts every process ~9 ms later) that put the floor ~9 ms high and the work above it ~9 ms low.
kerneldiff runs with a private XDG_CACHE_HOME that lives through the run (--no-cache skips the
index cache; what the command keeps across runs by design, such as the compiled classifier
registry, is kept, as it is for a user). Each row also gives the median CPU time (user + system of
the process and the workers it reaped, from getrusage(RUSAGE_CHILDREN) deltas): on a shared machine
the wall clock holds others' work too. The target is the work above the floor: (naive - floor) /
(kerneldiff - floor), in wall and in CPU time. Not a test: prints a table (and --json).
"""

from __future__ import annotations

import argparse
import atexit
import gzip
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TRACES = ROOT.parent / "shared" / "traces"
NAIVE = "import sys; sys.path.insert(0, sys.argv[2]); import bench_load; bench_load.naive_load(sys.argv[1])"
# What no loader in Python can beat: the interpreter, numpy and the file's bytes, read (gzip: inflated
# by ISA-L, the fastest inflater here, as kerneldiff's reader does) and dropped, nothing parsed. A ratio target
# against the naive loader above naive/floor cannot be met by any reader that starts Python.
FLOOR = """
import os, sys
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # as the kerneldiff command sets it
import numpy
from isal import igzip
p = sys.argv[1]
with (igzip.open(p, "rb") if p.endswith(".gz") else open(p, "rb")) as f:
    while f.read(1 << 24):
        pass
"""
# kerneldiff's reader alone: the file into columns, no model, no analysis (the C scanner and what
# turns its rows into columns), in one process
READ_ONLY = """
import os, sys
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from kerneldiff.core.ingest.source import read_columns
read_columns(sys.argv[1])
"""
WAFER = """
import sys
from wafer_core.lib.trace_compare import analyze_traces, format_json
sys.stdout.write(format_json(analyze_traces(sys.argv[1], sys.argv[2]))[:100])
"""


def _default_wafer() -> Path:
    here = ROOT / ".bench-wafer" / "bin" / "python"   # git-ignored
    return here if here.exists() else Path("/tmp/wcv/bin/python")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of a whole process; CPU counts the workers it reaped too (on a shared
    machine wall time also holds the time others' processes ran: CPU time does not)."""
    c = _children_cpu()
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    return took, _children_cpu() - c


def plain_copy(gz: Path, d: Path) -> Path:
    out = d / gz.name[: -len(".gz")]
    if not out.exists():
        with gzip.open(gz, "rb") as src, open(out.with_suffix(".part"), "wb") as dst:
            shutil.copyfileobj(src, dst, 16 << 20)
        os.replace(out.with_suffix(".part"), out)
    return out


def dense(d: Path, seed: int, strings: bool) -> Path:
    out = d / f"dense_60MB_{seed}.json"
    if not out.exists():
        subprocess.run([sys.executable, str(HERE / "gen_dense.py"), str(out), "--size", "60MB", "--seed", str(seed)]
                       + (["--strings"] if strings else []), check=True)
    return out


def replicated(d: Path, name: str, size: str, gz: bool = False) -> Path:
    """`gen_replicated.py`'s copy of a real trace of ../shared (its events repeated, ts and ids
    shifted) grown to `size`, kept in --dir like the dense traces; with `gz`, gzip-compressed too."""
    out = d / f"replicated_{name}_{size}.json"
    if not out.exists():
        subprocess.run([sys.executable, str(HERE / "gen_replicated.py"), str(out.with_suffix(".part")), "--size", size,
                        "--source", str(TRACES / f"{name}.json.gz")], check=True)
        os.replace(out.with_suffix(".part"), out)
    if not gz:
        return out
    zipped = out.with_suffix(".json.gz")
    if not zipped.exists():
        with open(out, "rb") as src, gzip.open(zipped.with_suffix(".part"), "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 16 << 20)
        os.replace(zipped.with_suffix(".part"), zipped)
    return zipped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="real,dense,pair,realpair,recorded,standin,tiny,start")
    ap.add_argument("--recorded", default="/tmp/kerneldiff_bench_real/recorded",
                    help="where bench/gpu/record_dense.py's traces are (rows skipped when absent)")
    ap.add_argument("--dir", default="/tmp/kerneldiff_bench_real", help="inflated and generated traces")
    ap.add_argument("--wafer-python", default=os.environ.get("WAFER_PYTHON", str(_default_wafer())),
                    help="a Python with wafer-core 0.1.62 installed (default: ./.bench-wafer, else /tmp/wcv; "
                         "make one with `python -m venv .bench-wafer && .bench-wafer/bin/pip install wafer-core==0.1.62`)")
    ap.add_argument("--kerneldiff", default=str(Path(sys.executable).parent / "kerneldiff"))
    ap.add_argument("--python", default=None,
                    help="the interpreter of the floor, naive, read-only and `python -c pass` contenders "
                         "(default: the one beside --kerneldiff, else this one)")
    ap.add_argument("--before", default=None, help="another kerneldiff command (an older build) as a contender")
    ap.add_argument("--before-python", default=None,
                    help="that build's python: its reader alone (read only, before) joins the load rows")
    ap.add_argument("--gb-size", default="1GB", help="size of the gb row's replicated trace")
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-floor", dest="floor", action="store_false",
                    help="leave out the floor (Python + numpy + the bytes read) and read-only contenders of load rows")
    args = ap.parse_args(argv)
    beside = Path(args.kerneldiff).parent / "python"
    py = args.python or (str(beside) if beside.exists() else sys.executable)
    print(f"(floor, naive, read only and python -c pass on {py})", file=sys.stderr)
    only = set(args.only.split(","))
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    wafer = Path(args.wafer_python)
    has_wafer = wafer.exists() and subprocess.run([str(wafer), "-c", "import wafer_core"],
                                                  capture_output=True).returncode == 0
    if not has_wafer:
        print(f"(wafer-core skipped: no wafer_core under {wafer})", file=sys.stderr)

    rows = []   # (label, size MB, {contender: cmd})
    kd = [args.kerneldiff]
    before = [args.before] if args.before else None

    def kds(*rest) -> dict:
        return {"kerneldiff": kd + list(rest), **({"before": before + list(rest)} if before else {})}
    naive = lambda p: [py, "-c", NAIVE, str(p), str(HERE)]  # noqa: E731

    def loads(p: Path, with_naive: bool = True) -> dict:
        return {**kds("info", str(p), "--json", "--no-cache"), **({"naive": naive(p)} if with_naive else {}),
                **({"floor": [py, "-c", FLOOR, str(p)],
                    "read only": [py, "-c", READ_ONLY, str(p)]} if args.floor else {}),
                **({"read only, before": [args.before_python, "-c", READ_ONLY, str(p)]}
                   if args.floor and args.before_python else {})}
    made: list[Path] = []   # generated for this run only: deleted after their row (or at exit)
    atexit.register(lambda: [p.unlink(missing_ok=True) for p in made])
    if "real" in only and TRACES.is_dir():
        for name in ("h100_llama_eager_sdpa", "h100_llama_compiled"):
            gz = TRACES / f"{name}.json.gz"
            for label, p in ((f"{name} (gzip)", gz), (f"{name} (plain)", plain_copy(gz, d))):
                rows.append((label, p.stat().st_size / 1e6, loads(p)))
    if "dense" in only:
        p = dense(d, 1, False)
        rows.append(("dense 60 MB (plain)", p.stat().st_size / 1e6, loads(p)))
    if "pair" in only:
        a, b = dense(d, 1, False), dense(d, 2, True)
        c = kds("compare", str(a), str(b), "--format", "json", "--no-cache")
        if has_wafer:
            c["wafer-core"] = [str(wafer), "-c", WAFER, str(a), str(b)]
        rows.append(("dense 2x60 MB compare", (a.stat().st_size + b.stat().st_size) / 1e6, c))
    if "realpair" in only and TRACES.is_dir():
        a, b = (plain_copy(TRACES / f"{n}.json.gz", d) for n in ("h100_llama_eager_sdpa", "h100_llama_compiled"))
        c = kds("compare", str(a), str(b), "--format", "json", "--no-cache")
        if has_wafer:
            c["wafer-core"] = [str(wafer), "-c", WAFER, str(a), str(b)]
        rows.append(("real eager vs compiled compare", (a.stat().st_size + b.stat().st_size) / 1e6, c))
    rec = Path(args.recorded)
    if "recorded" in only and (rec / "h100_dense_graphs.json.gz").exists():
        # real decode traces recorded on an H100 and an H200 (bench/gpu/record_dense.py): too big for
        # the repository (25 MB of gzip), so they are read from --recorded when someone has recorded them
        g100, g200, comp = (rec / f"{n}.json.gz" for n in ("h100_dense_graphs", "h200_dense_graphs", "h100_dense_compiled"))
        for label, p in (("recorded H100 graphs (gzip)", g100), ("recorded H100 graphs (plain)", plain_copy(g100, d)),
                         ("recorded H100 compiled (plain)", plain_copy(comp, d))):
            rows.append((label, p.stat().st_size / 1e6, loads(p)))
        if g200.exists():   # plain JSON: wafer-core reads no gzip
            a, b = plain_copy(g100, d), plain_copy(g200, d)
            c = kds("compare", str(a), str(b), "--format", "json", "--no-cache")
            if has_wafer:
                c["wafer-core"] = [str(wafer), "-c", WAFER, str(a), str(b)]
            rows.append(("recorded H100 vs H200 graphs compare", (a.stat().st_size + b.stat().st_size) / 1e6, c))
    if "recorded" in only and not (rec / "h100_dense_graphs.json.gz").exists():
        print(f"(recorded graph-replay and 249 MB compiled traces skipped: none in {rec})", file=sys.stderr)
    if "standin" in only and TRACES.is_dir():
        # stand-ins for the recorded rows, where no GPU is at hand: a real graph-replay decode trace
        # (vLLM on an MI300X, 434 kernels of one hipGraph replay per step, floats for ts, compact
        # JSON) repeated to the recorded one's 140 MB (279 steps, 121,086 kernels), plain and gzip;
        # and the real compiled trace twice (223 MB; the recorded compiled one was 249 MB)
        for label, p in (("replicated vLLM graph replay (plain)", replicated(d, "mi300x_vllm_gptoss_decode", "140MB")),
                         ("replicated vLLM graph replay (gzip)",
                          replicated(d, "mi300x_vllm_gptoss_decode", "140MB", gz=True)),
                         ("replicated compiled x2 (plain)", replicated(d, "h100_llama_compiled", "200MB"))):
            rows.append((label, p.stat().st_size / 1e6, loads(p)))
    if "tiny" in only and TRACES.is_dir():
        p = TRACES / "a100_triton_example.json.gz"
        rows.append(("1-kernel trace info", p.stat().st_size / 1e6,
                     {**kds("info", str(p), "--json", "--no-cache"),
                      **({"floor": [py, "-c", FLOOR, str(p)]} if args.floor else {})}))
    if "gb" in only:
        p = d / f"replicated_{args.gb_size}.json"
        if not p.exists():
            subprocess.run([sys.executable, str(HERE / "gen_replicated.py"), str(p), "--size", args.gb_size], check=True)
            made.append(p)
        rows.append((f"replicated real eager, {args.gb_size} (plain)", p.stat().st_size / 1e6, loads(p, False)))
    if "start" in only:
        rows.append(("kerneldiff --version", 0.0, {**kds("--version"), "python -c pass": [py, "-c", "pass"]}))

    results = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for label, size, cmds in rows:
            for cmd in cmds.values():
                timed(cmd, env)   # warm the page cache, bytecode and what kerneldiff keeps across runs
            times: dict[str, list[float]] = {k: [] for k in cmds}
            for _ in range(args.repeat):
                for k, cmd in cmds.items():
                    times[k].append(timed(cmd, env))
            best = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
            cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
            results.append({"row": label, "mb": size, "times": times, "best": best, "cpu": cpu})
            other = [k for k in best if k != "kerneldiff"]
            ratio = "  ".join(f"{k} {best[k]:.2f} s ({best[k] / best['kerneldiff']:.1f}x; cpu {cpu[k]:.2f} s, "
                              f"{cpu[k] / cpu['kerneldiff']:.1f}x)" for k in other)
            print(f"{label:34} {size:7.1f} MB  kerneldiff {best['kerneldiff']:.2f} s (cpu {cpu['kerneldiff']:.2f} s)  "
                  f"{ratio}", flush=True)
            if "floor" in best and "naive" in best:
                print(f"{'':34} {'':10}  the most any Python reader could reach: naive / floor = "
                      f"{best['naive'] / best['floor']:.1f}x wall, {cpu['naive'] / cpu['floor']:.1f}x cpu", flush=True)
            if size >= 500 or label.startswith("replicated"):   # throughput: file bytes over the median seconds
                print(f"{'':34} {'':10}  GB/s (wall / cpu): " + "  ".join(
                    f"{k} {size / 1e3 / best[k]:.2f} / {size / 1e3 / cpu[k]:.2f}" for k in best if k != "floor"), flush=True)
            if any(str(p) in c for p in made for cmd in cmds.values() for c in cmd):
                for p in made:   # a GB of page cache the next rows need not share
                    p.unlink(missing_ok=True)
    print_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


def above_floor(r: dict, which: str, who: str = "kerneldiff") -> float | None:
    """(naive - floor) / (kerneldiff - floor): the work above reading the bytes, naive over ours
    (`who`: another contender's, such as the older build's)."""
    t = r[which]
    if not {"naive", "floor", who} <= t.keys():
        return None
    ours = t[who] - t["floor"]
    return (t["naive"] - t["floor"]) / ours if ours > 0 else float("inf")


def print_table(results: list[dict]) -> None:
    """One Markdown table: wall / CPU seconds (medians), and the ratios the targets are stated in."""
    def cell(r: dict, k: str) -> str:
        return f"{r['best'][k]:.3f} / {r['cpu'][k]:.3f}" if k in r["best"] else ""
    print("\n| row | MB | floor | naive | kerneldiff | read only | above floor (wall / cpu) | other |")
    print("|---|---:|---|---|---|---|---|---|")
    for r in results:
        aw, ac = above_floor(r, "best"), above_floor(r, "cpu")
        ratio = f"**{aw:.1f}x** / {ac:.1f}x" if aw is not None else ""
        rest = [k for k in r["best"] if k not in ("floor", "naive", "kerneldiff", "read only")]
        other = "; ".join(f"{k} {cell(r, k)}: {k} / kerneldiff {r['best'][k] / r['best']['kerneldiff']:.2f}x wall, "
                          f"{r['cpu'][k] / r['cpu']['kerneldiff']:.2f}x cpu" for k in rest)
        if "before" in rest and above_floor(r, "best", "before") is not None:
            other += f"; before's above floor {above_floor(r, 'best', 'before'):.1f}x / {above_floor(r, 'cpu', 'before'):.1f}x"
        if "floor" in r["best"] and "naive" not in r["best"]:   # the fixed cost: kerneldiff over its floor
            other = f"kerneldiff / floor {r['best']['kerneldiff'] / r['best']['floor']:.2f}x wall, " \
                    f"{r['cpu']['kerneldiff'] / r['cpu']['floor']:.2f}x cpu" + (f"; {other}" if other else "")
        print(f"| {r['row']} | {r['mb']:.1f} | {cell(r, 'floor')} | {cell(r, 'naive')} | {cell(r, 'kerneldiff')} | "
              f"{cell(r, 'read only')} | {ratio} | {other} |")


if __name__ == "__main__":
    sys.exit(main())
