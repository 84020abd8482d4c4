"""Load benchmark: kerneldiff vs a naive loader on 100 MB / 1 GB / 2 GB traces, plain and gzip.

    python bench/bench_load.py                      # quick: 100 MB, plain + gzip
    python bench/bench_load.py --sizes 1GB,2GB      # the issue's sizes (generation is cached)
    python bench/bench_load.py --sizes 1GB --no-baseline --only load,cache

Traces come from `kerneldiff.core.synth.pair` (a vLLM-like decode run, grown to the size; side A of a
`write_pair`, side B for the two-trace rows); gzip copies hold the same JSON. They are kept in
--dir (default $XDG_CACHE_HOME/kerneldiff/bench) and reused. Every measurement runs in a fresh
process: wall time, CPU time (getrusage RUSAGE_CHILDREN), and memory — the peak of the summed
PSS of the measured process and its workers (sampled every 50 ms from outside, so pages shared
after fork are not counted twice); each child also reports its own ru_maxrss and its largest
worker's. With --repeat N, memory is sampled in the first run only and the time is the best of
all N: sampling walks /proc and page tables every 50 ms, CPU that a load on both cores misses.

The naive baseline is what the issue describes: read the whole file, orjson.loads, one Python
loop building a dict per kernel (classified with the shipped Classifier) plus the cpu_op,
launch, python-frame and annotation records a comparison needs. Not a test: prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PYTHON = sys.executable
TASKS = ("probe", "load", "baseline", "pair", "compare", "cache")


# --- traces ------------------------------------------------------------------------------------

def parse_size(text: str) -> int:
    from kerneldiff.core.synth.pair import parse_size as synth_size

    return synth_size(text)


def label(size: int) -> str:
    return f"{size / 1e9:g} GB" if size >= 1e9 else f"{size / 1e6:g} MB"


def traces_for(size: int, root: Path, gz: bool) -> tuple[Path, Path]:
    """Side A and B of a synthetic pair of about `size` bytes of JSON (generated once)."""
    d = root / f"pair_{size}"
    a, b = d / f"bench_{size}_a.json", d / f"bench_{size}_b.json"
    done = d / "done"
    if not done.exists():
        from kerneldiff.core.synth.pair import write_pair

        t = time.perf_counter()
        print(f"  generating a {label(size)} pair in {d} ...", file=sys.stderr, flush=True)
        write_pair(d, seed=1, layers=32, steps=8, gzip=False, target_bytes=size, prefix=f"bench_{size}")
        done.write_text("ok")
        print(f"  ... {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    if not gz:
        return a, b
    out = []
    for p in (a, b):
        g = p.with_name(p.name + ".gz")
        if not g.exists():
            from isal import igzip

            tmp = g.with_name(g.name + ".part")
            with open(p, "rb") as src, igzip.open(tmp, "wb", compresslevel=2) as dst:
                shutil.copyfileobj(src, dst, 16 << 20)
            os.replace(tmp, g)
        out.append(g)
    return out[0], out[1]


# --- children: one measurement each ------------------------------------------------------------

def naive_load(path: str) -> dict:
    """The baseline: whole file -> orjson -> a Python loop over every event."""
    import gzip

    import orjson

    from kerneldiff.core.analysis.classify import Classifier

    classifier = Classifier.load()
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = orjson.loads(raw)
    del raw
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    kernels, launches, python, annotations = [], {}, [], []
    cpu_ops: dict = {}
    for ev in events:
        cat = ev.get("cat")
        args = ev.get("args") or {}
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            name = ev.get("name", "")
            category, rule = classifier.classify(name)
            kernels.append({"name": name, "ts": ev.get("ts"), "dur": ev.get("dur", 0), "cat": cat,
                            "stream": args.get("stream"), "device": args.get("device"),
                            "correlation": args.get("correlation"), "external_id": args.get("External id"),
                            "category": category, "rule": rule})
        elif cat == "cpu_op":
            ext = args.get("External id")
            if ext is not None:
                cpu_ops[ext] = ev.get("name", "")
        elif cat in ("cuda_runtime", "cuda_driver", "hip_runtime"):
            corr = args.get("correlation")
            if corr is not None:
                launches[corr] = (ev.get("ts"), args.get("External id"))
        elif cat == "python_function":
            ts = ev["ts"]
            python.append((ts, ts + ev.get("dur", 0), args.get("Python id"), args.get("Python parent id"),
                           ev["name"]))
        elif cat in ("user_annotation", "gpu_user_annotation"):
            annotations.append((ev.get("name"), ev.get("ts"), ev.get("dur")))
    kernels.sort(key=lambda k: k["ts"])
    return {"kernels": len(kernels)}


def child(task: str, paths: list[str], cache_dir: str | None) -> dict:
    """Run one measurement in this (fresh) process; returns numbers for the parent."""
    import gc

    if cache_dir:
        os.environ["XDG_CACHE_HOME"] = cache_dir
    # Imports are not part of a load (a running app has them); reading the classifier registry
    # is (load() does it). Process wall time, startup included, is reported separately.
    # The command's process settings first (numpy's BLAS threads and huge pages: kerneldiff.cli.main
    # sets them before numpy loads), as `kerneldiff info` and the explorer run; and glibc's malloc
    # reusing freed memory, as a headless subcommand runs (the explorer keeps its defaults).
    import kerneldiff.cli.main
    kerneldiff.cli.main.reuse_freed_memory()
    import numpy  # noqa: F401
    import orjson  # noqa: F401

    import kerneldiff.core.processes.forkserver
    import kerneldiff.core.ingest.loader  # noqa: F401
    from kerneldiff.core.ingest.probe import probe
    from kerneldiff.core.session import Session

    out: dict = {}
    if task == "probe":
        probe(paths[0])  # warm the page cache like the other measurements
        t0 = time.perf_counter()
        for _ in range(5):
            probe(paths[0])
        out["seconds"] = (time.perf_counter() - t0) / 5
        return out
    c0 = time.process_time()
    t0 = time.perf_counter()
    if task == "baseline":
        out["kernels"] = naive_load(paths[0])["kernels"]
    elif task == "load":
        m = Session(paths[:1], use_cache=False).load(0)
        out["kernels"] = len(m.kernels)
    elif task == "cache-fill":
        Session(paths[:1], use_cache=True).load(0)
    elif task == "cache":
        m = Session(paths[:1], use_cache=True).load(0)
        out["kernels"] = len(m.kernels)
    elif task in ("pair", "compare"):
        session = Session(paths[:2], use_cache=False)
        session.classifier  # noqa: B018  (read the registry up front, as the app does while probing)
        models = session.models
        threading.Thread(target=lambda: None).start()   # an app has threads: as it would,
        kerneldiff.core.processes.forkserver.prepare()                        # start the fork server up front
        t0, c0 = time.perf_counter(), time.process_time()

        done = [0.0, 0.0]

        def one(i: int) -> None:  # as the app does: each trace loads in its own thread
            session.load(i)
            done[i] = time.perf_counter() - t0

        threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out["kernels"] = len(models[0].kernels) + len(models[1].kernels)
        out["seconds"] = time.perf_counter() - t0
        out["first_ready"] = min(done)
        if task == "compare":
            gc.collect()
            t1 = time.perf_counter()
            session.compare("all")
            out["compare_seconds"] = time.perf_counter() - t1
    out.setdefault("seconds", time.perf_counter() - t0)
    out["cpu_self"] = time.process_time() - c0
    # peak RSS of this process, and of the largest worker it forked and reaped (KB on Linux)
    out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["maxrss_workers_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return out


# --- parent: run a child, sample its memory ----------------------------------------------------

def _descendants(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(task: str, paths: list[Path], cache_dir: Path | None = None, sample: bool = True) -> dict:
    """One run in a fresh process. `sample`: watch its memory from here (every 50 ms, walking
    /proc and each process's page tables: CPU taken from a load that uses both cores, so the
    timed repeats of `--repeat` run unwatched)."""
    cmd = [PYTHON, str(Path(__file__).resolve()), "--child", task, "--paths", *map(str, paths)]
    if cache_dir is not None:
        cmd += ["--cache-dir", str(cache_dir)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    peak = 0
    while sample and proc.poll() is None:
        peak = max(peak, sum(_pss_kb(p) for p in _descendants(proc.pid)))
        time.sleep(0.05)
    proc.wait()
    wall = time.perf_counter() - t0
    stdout, stderr = proc.communicate()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:  # e.g. the naive loader killed for lack of memory: say so, go on
        err = stderr.decode(errors="replace").strip().splitlines()
        print(f"  ! {task} failed (exit {proc.returncode}): {err[-1] if err else ''}", file=sys.stderr)
        return {"failed": True, "seconds": float("nan"), "wall": wall, "cpu": float("nan"),
                "pss_mb": peak / 1024, "maxrss_mb": float("nan"), "kernels": 0}
    res = json.loads(stdout.decode().strip().splitlines()[-1])
    res["wall"] = wall
    res["cpu"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    res["pss_mb"] = peak / 1024
    return res


# --- main ---------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100MB", help="comma-separated JSON sizes (default 100MB)")
    ap.add_argument("--formats", default="plain,gzip", help="plain, gzip or both")
    ap.add_argument("--only", default=",".join(TASKS), help=f"subset of {','.join(TASKS)}")
    ap.add_argument("--no-baseline", action="store_true", help="skip the (slow, memory-hungry) naive loader")
    ap.add_argument("--baseline-max", default="1GB", help="largest size the baseline runs on (default 1GB)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per kerneldiff measurement (best is kept)")
    ap.add_argument("--dir", default=None, help="where generated traces are kept")
    ap.add_argument("--json", default=None, help="also write all results to this JSON file")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--paths", nargs="*", default=[], help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.paths, args.cache_dir)))
        return 0

    root = Path(args.dir or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kerneldiff" / "bench")
    root.mkdir(parents=True, exist_ok=True)
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    only = {t.strip() for t in args.only.split(",")}
    base_max = parse_size(args.baseline_max)
    print(f"# kerneldiff load benchmark — {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.2f}")
    rows: list[dict] = []

    def best(task: str, paths: list[Path], **kw) -> dict:
        """The fastest of --repeat runs; memory from the first, the one watched (see measure)."""
        runs = [measure(task, paths, sample=i == 0, **kw) for i in range(max(1, args.repeat))]
        out = dict(min(runs, key=lambda r: r["seconds"]))
        out["pss_mb"] = runs[0]["pss_mb"]
        return out

    for size in sizes:
        for fmt in formats:
            a, b = traces_for(size, root, fmt == "gzip")
            mb = size / 1e6
            row: dict = {"size": label(size), "format": fmt, "file_mb": a.stat().st_size / 1e6}
            print(f"\n## {label(size)} {fmt} ({row['file_mb']:.0f} MB on disk)", flush=True)
            if "probe" in only:
                row["probe"] = measure("probe", [a])["seconds"]
                print(f"  probe                    {row['probe'] * 1000:8.1f} ms")
            if "load" in only:
                r = row["load"] = best("load", [a])
                print(f"  kerneldiff load          {r['seconds']:8.2f} s  cpu {r['cpu']:6.2f} s  "
                      f"peak {r['pss_mb']:7.0f} MB  {mb / r['seconds']:6.0f} MB/s  ({r['kernels']} kernels; "
                      f"process {r['wall']:.2f} s)", flush=True)
            if "baseline" in only and not args.no_baseline and size <= base_max:
                r = row["baseline"] = measure("baseline", [a])
                print(f"  naive orjson loader      {r['seconds']:8.2f} s  cpu {r['cpu']:6.2f} s  "
                      f"peak {r['pss_mb']:7.0f} MB  {mb / r['seconds']:6.0f} MB/s", flush=True)
                if "load" in row:
                    print(f"  -> kerneldiff {r['seconds'] / row['load']['seconds']:.1f}x faster, "
                          f"{r['pss_mb'] / row['load']['pss_mb']:.1f}x less memory")
            if "pair" in only or "compare" in only:
                task = "compare" if "compare" in only else "pair"
                r = row["pair"] = best(task, [a, b])
                line = f"  two traces together      {r['seconds']:8.2f} s  cpu {r['cpu']:6.2f} s  peak {r['pss_mb']:7.0f} MB"
                if "load" in row:
                    line += f"  ({r['seconds'] / row['load']['seconds']:.2f}x one; first ready {r['first_ready']:.2f} s)"
                print(line)
                if "compare_seconds" in r:
                    print(f"  compare step             {r['compare_seconds']:8.2f} s (after both loads)")
            if "cache" in only:
                cache_dir = root / "xdg-cache"
                shutil.rmtree(cache_dir, ignore_errors=True)
                fill = measure("cache-fill", [a], cache_dir=cache_dir)
                r = row["cache"] = measure("cache", [a], cache_dir=cache_dir)
                row["cache"]["write"] = fill["seconds"]
                print(f"  cache reopen             {r['seconds']:8.2f} s  (process {r['wall']:.2f} s, "
                      f"peak {r['pss_mb']:.0f} MB; first load + write {fill['seconds']:.2f} s)", flush=True)
                shutil.rmtree(cache_dir, ignore_errors=True)
            rows.append(row)
        if "load" in only and len(formats) == 2:
            plain = next(r for r in rows if r["size"] == label(size) and r["format"] == "plain")
            gz = next(r for r in rows if r["size"] == label(size) and r["format"] == "gzip")
            print(f"\n  gzip / plain load time: {gz['load']['seconds'] / plain['load']['seconds']:.2f}x")
    print("\n" + table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


def table(rows: list[dict]) -> str:
    """Markdown table of the results (docs/PERFORMANCE.md)."""
    head = ("| trace | on disk | kerneldiff load | peak memory | MB/s | naive loader | naive memory | speed-up "
            "| probe | two at once | compare | cache reopen |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        mb = float(r["size"].split()[0]) * (1000 if r["size"].endswith("GB") else 1)

        load = r.get("load")
        base = r.get("baseline")
        pair = r.get("pair")
        t = load["seconds"] if load else None
        lines.append("| " + " | ".join([
            f"{r['size']} {r['format']}", f"{r['file_mb']:.0f} MB",
            f"{t:.2f} s" if load else "—",
            f"{load['pss_mb']:.0f} MB" if load else "—",
            f"{mb / t:.0f}" if load else "—",
            f"{base['seconds']:.1f} s" if base else "—",
            f"{base['pss_mb']:.0f} MB" if base else "—",
            f"{base['seconds'] / t:.1f}x" if base and load else "—",
            f"{r['probe'] * 1000:.0f} ms" if "probe" in r else "—",
            f"{pair['seconds']:.2f} s ({pair['seconds'] / t:.2f}x)" if pair and load else
            (f"{pair['seconds']:.2f} s" if pair else "—"),
            f"{pair['compare_seconds']:.2f} s" if pair and "compare_seconds" in pair else "—",
            f"{r['cache']['seconds']:.2f} s" if "cache" in r else "—",
        ]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
