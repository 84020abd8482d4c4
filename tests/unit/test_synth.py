"""The synthetic trace generator: determinism, valid Kineto shapes, launch/kernel linkage, GPU lag,
and planted differences that can be recovered from the events themselves."""

from __future__ import annotations

import gzip
import json
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from kerneldiff.core.synth.pair import DEMO_PARAMS, SynthConfig, parse_size, write_demo, write_pair, write_trace

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
LAUNCH_NAMES = {"hipLaunchKernel", "hipExtModuleLaunchKernel", "hipModuleLaunchKernel", "hipGraphLaunch",
                "hipMemcpyAsync", "hipMemsetAsync", "cudaLaunchKernel", "cudaLaunchKernelExC",
                "cuLaunchKernelEx", "cudaGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync"}


def read(path: Path) -> dict:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def num(v) -> int:
    return int(v)  # numbers may be written as strings (quirk); int() takes both


class Parsed:
    """Events of one trace, indexed the way a loader would index them."""

    def __init__(self, doc: dict) -> None:
        ev = doc["traceEvents"]
        self.doc = doc
        self.gpu = [e for e in ev if e.get("cat") in GPU_CATS]
        self.launches = {num(e["args"]["correlation"]): e for e in ev
                         if e.get("cat") in LAUNCH_CATS and e["name"] in LAUNCH_NAMES}
        self.annotations = sorted((e for e in ev if e.get("cat") == "user_annotation"), key=lambda e: e["ts"])
        self.gpu_annotations = [e for e in ev if e.get("cat") == "gpu_user_annotation"]
        self.flows = [e for e in ev if e.get("cat") == "ac2g"]
        self.python = [e for e in ev if e.get("cat") == "python_function"]
        self.cpu_ops = [e for e in ev if e.get("cat") == "cpu_op"]

    def step_of_launch(self, e: dict) -> int:
        t = self.launches[num(e["args"]["correlation"])]["ts"]
        for i, a in enumerate(self.annotations):
            if a["ts"] <= t <= a["ts"] + a["dur"]:
                return i
        return -1

    def by_step(self) -> dict[int, list[dict]]:
        out: dict[int, list[dict]] = defaultdict(list)
        for e in self.gpu:
            out[self.step_of_launch(e)].append(e)
        for v in out.values():
            v.sort(key=lambda e: e["ts"])
        return out


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A small MoE pair with tensor parallelism (covers every planted difference)."""
    d = tmp_path_factory.mktemp("pair")
    a, b, t = write_pair(d, seed=11, layers=4, steps=5, prefill_steps=1, mixed_steps=1, moe=True, tp=2)
    return {"A": Parsed(read(a)), "B": Parsed(read(b))}, json.loads(t.read_text())


# --- determinism and format ------------------------------------------------------------------

def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    kw = dict(layers=3, steps=4, moe=True, graph=True)
    p1 = write_pair(tmp_path / "one", seed=5, **kw)
    p2 = write_pair(tmp_path / "two", seed=5, **kw)
    for x, y in zip(p1, p2):
        assert x.read_bytes() == y.read_bytes(), x.name
    p3 = write_pair(tmp_path / "three", seed=6, **kw)
    assert p3[0].read_bytes() != p1[0].read_bytes()


def test_plain_and_gzip_hold_the_same_valid_json(tmp_path):
    cfg = SynthConfig(vendor="nvidia", layers=2, steps=3, seed=1)
    plain = tmp_path / "t.json"
    gz = tmp_path / "t.json.gz"
    write_trace(plain, cfg)
    write_trace(gz, cfg)
    assert gz.read_bytes()[:2] == b"\x1f\x8b" and plain.read_bytes()[:1] == b"{"
    assert gzip.decompress(gz.read_bytes()) == plain.read_bytes()
    doc = json.loads(plain.read_bytes())
    keys = list(doc)
    # Kineto order: metadata first (a head probe must find it), traceEvents, then traceName
    assert keys[:2] == ["schemaVersion", "deviceProperties"] and keys[-2:] == ["traceEvents", "traceName"]


@pytest.mark.parametrize("vendor,keys,warp", [("amd", ("roctracer_version", "hip_runtime_version"), 64),
                                              ("nvidia", ("cupti_version", "cuda_runtime_version"), 32)])
def test_vendor_metadata(tmp_path, vendor, keys, warp):
    p = tmp_path / "t.json"
    write_trace(p, SynthConfig(vendor=vendor, layers=1, steps=2, tp=4, empty_device_name=vendor == "amd"))
    doc = read(p)
    assert all(k in doc for k in keys)
    dev = doc["deviceProperties"][0]
    assert dev["warpSize"] == warp and dev["numSms"] > 0 and dev["totalGlobalMem"] > 0
    assert (dev["name"] == "") == (vendor == "amd")
    assert doc["distributedInfo"] == {"backend": "nccl", "rank": 0, "world_size": 4}
    assert doc["with_stack"] == 1 and doc["record_shapes"] == 1 and doc["displayTimeUnit"] == "ms"
    meta = {(e["name"], e["pid"]) for e in doc["traceEvents"] if e["ph"] == "M"}
    assert ("process_name", 0) in meta and ("thread_name", 0) in meta


# --- linkage and timing ----------------------------------------------------------------------

@pytest.mark.parametrize("vendor,graph", [("amd", False), ("amd", True), ("nvidia", False), ("nvidia", True)])
def test_every_gpu_event_has_an_earlier_launch_and_flow(tmp_path, vendor, graph):
    p = tmp_path / "t.json"
    write_trace(p, SynthConfig(vendor=vendor, graph=graph, layers=3, steps=4, strings_numbers=True))
    t = Parsed(read(p))
    assert t.gpu
    for e in t.gpu:
        corr = num(e["args"]["correlation"])
        launch = t.launches[corr]
        assert launch["ts"] <= e["ts"], (e["name"], launch["name"])
        assert num(e["args"]["device"]) == e["pid"] and num(e["args"]["stream"]) == e["tid"]
    starts = {(f["id"], f["ts"]) for f in t.flows if f["ph"] == "s"}
    ends = {(f["id"], f["ts"], f["pid"]) for f in t.flows if f["ph"] == "f"}
    for e in t.gpu:
        corr = num(e["args"]["correlation"])
        assert (corr, e["ts"], e["pid"]) in ends
        assert (corr, t.launches[corr]["ts"]) in starts
    graph_launches = [x for x in t.launches.values() if "GraphLaunch" in x["name"]]
    assert len(graph_launches) == (3 if graph else 0)  # one per decode step
    for g in graph_launches:
        kernels = [e for e in t.gpu if num(e["args"]["correlation"]) == num(g["args"]["correlation"])]
        # embedding + 3 layers + final norm all replay under the one launch, without External id
        assert len(kernels) > 3 * 10 and all("External id" not in e["args"] for e in kernels)


def test_eager_launches_sit_inside_cpu_ops_with_matching_external_id(tmp_path):
    p = tmp_path / "t.json"
    write_trace(p, SynthConfig(vendor="amd", layers=2, steps=2))
    t = Parsed(read(p))
    ops = {num(o["args"]["External id"]): o for o in t.cpu_ops}
    for e in t.gpu:
        launch = t.launches[num(e["args"]["correlation"])]
        ext = num(launch["args"]["External id"])
        assert num(e["args"]["External id"]) == ext
        op = ops[ext]
        assert op["ts"] <= launch["ts"] and launch["ts"] + launch["dur"] <= op["ts"] + op["dur"]


def test_python_frames_form_a_tree_in_time(tmp_path):
    p = tmp_path / "t.json"
    write_trace(p, SynthConfig(vendor="nvidia", layers=2, steps=3))
    t = Parsed(read(p))
    frames = {f["args"]["Python id"]: f for f in t.python}
    assert any(f["name"].startswith("nn.Module: LlamaDecoderLayer_1") for f in t.python)
    for f in t.python:
        parent = f["args"]["Python parent id"]
        if parent is None:
            continue
        pf = frames[parent]
        assert pf["ts"] <= f["ts"] and f["ts"] + f["dur"] <= pf["ts"] + pf["dur"] + 1e-3, f["name"]


def test_gpu_lags_into_the_next_steps_cpu_window(pair):
    traces, truth = pair
    for side, t in traces.items():
        anns = t.annotations
        spilled = 0
        for e in t.gpu:
            k = t.step_of_launch(e)
            assert k >= 0
            if k + 1 < len(anns) and anns[k + 1]["ts"] <= e["ts"] <= anns[k + 1]["ts"] + anns[k + 1]["dur"]:
                spilled += 1
        assert spilled > 0, side  # a loader placing kernels by their own ts would get these wrong
        recs = truth["sides"][side]["step_records"]
        ends = [a["ts"] + a["dur"] for a in anns]
        lagged = Counter(t.step_of_launch(e) for e in t.gpu if e["ts"] > ends[t.step_of_launch(e)])
        assert [r["lagged"] for r in recs] == [lagged.get(i, 0) for i in range(len(recs))]
        assert any(r["lagged"] == 0 for r in recs)  # periodic syncs drain the queue now and then


def test_gpu_annotations_mirror_steps(pair):
    traces, truth = pair
    for side, t in traces.items():
        cpu = {a["args"]["External id"]: a["name"] for a in t.annotations}
        assert {g["args"]["External id"]: g["name"] for g in t.gpu_annotations} == cpu
        assert [a["name"] for a in t.annotations] == [r["name"] for r in truth["sides"][side]["step_records"]]


# --- planted truth against the events --------------------------------------------------------

def test_counts_in_truth_match_events(pair):
    traces, truth = pair
    for side, t in traces.items():
        st = truth["sides"][side]
        names = Counter(e["name"] for e in t.gpu)
        assert dict(names) == st["kernel_counts"]
        kinds = Counter(e["cat"] for e in t.gpu)
        assert (kinds["kernel"], kinds["gpu_memcpy"], kinds["gpu_memset"]) == (st["kernels"], st["memcpys"], st["memsets"])
        per_step = t.by_step()
        assert -1 not in per_step
        for k, rec in enumerate(st["step_records"]):
            shape = st["layer_structure"][rec["phase"]]
            assert len(per_step[k]) == shape["pre"] + truth["model"]["layers"] * shape["per_layer"] + shape["post"]
        cats = Counter()
        for name, c in names.items():
            cats[truth["categories"][name]] += c
        assert dict(cats) == st["category_counts"]
    assert truth["phases"] == ["prefill", "mixed", "decode", "decode", "decode"]


def test_planted_fusions_imbalance_and_missing_kernel(pair):
    traces, truth = pair
    plan = truth["planted"]
    L, S = truth["model"]["layers"], truth["steps"]
    names = {s: Counter(e["name"] for e in t.gpu) for s, t in traces.items()}
    cat = truth["categories"]
    cats = {s: Counter(cat[n] for n in names[s].elements()) for s in names}
    fusions = plan["fusions"]
    assert {f["fused_category"] for f in fusions if f["type"] == "explicit"} == {"RMSNorm+GEMM", "MoE GEMM+SwiGLU"}
    for f in fusions:
        if f["type"] == "explicit":
            assert names[f["fused_side"]][f["fused_kernel"]] == f["count"] == L * S
            assert cats[f["unfused_side"]][f["fused_category"]] == 0
            for comp in f["components"]:
                assert sum(names[f["unfused_side"]][n] for n in comp["kernels"]) >= L * S
                assert all(cat[n] == comp["category"] for n in comp["kernels"])
        else:
            u = f["unique_side"]
            assert names[u][f["unique_kernel"]] == f["count"] == L * S
            assert cats[f["fused_side"]][f["unique_category"]] == 0
            assert names[f["fused_side"]][f["fused_kernel"]] == L * S
            # the unique kernel always runs right after the RMSNorm it would be fused into
            for seq in traces[u].by_step().values():
                for i, e in enumerate(seq):
                    if e["name"] == f["unique_kernel"]:
                        assert seq[i - 1]["name"] in f["follows_kernels"]
    imb = plan["count_imbalance"]
    more, less = imb["more_side"], imb["less_side"]
    assert cats[more]["KV Cache"] == imb["count_more"] == 2 * cats[less]["KV Cache"] == 2 * imb["count_less"]
    miss = plan["missing_kernel"]
    assert names[miss["present_side"]][miss["name"]] == miss["count"] == L * S
    assert names[miss["missing_side"]][miss["name"]] == 0
    assert cats[miss["missing_side"]]["Elementwise"] == 0


def _layer_durations(t: Parsed, side_truth: dict, layers: int, categories: dict[str, str]) -> list[float]:
    """Total GPU time per layer index, slicing each step by the truth's layer structure."""
    totals = [0.0] * layers
    for k, seq in t.by_step().items():
        shape = side_truth["layer_structure"][side_truth["step_records"][k]["phase"]]
        pre, per = shape["pre"], shape["per_layer"]
        for i in range(layers):
            chunk = seq[pre + i * per: pre + (i + 1) * per]
            # every layer opens with its input norm (or the fused norm+GEMM)
            assert categories[chunk[0]["name"]] in ("RMSNorm", "RMSNorm+GEMM")
            totals[i] += sum(e["dur"] for e in chunk)
    return totals


def test_slow_layer_is_visible_in_kernel_durations(pair):
    traces, truth = pair
    slow = truth["planted"]["slow_layer"]
    L = truth["model"]["layers"]
    for side, t in traces.items():
        d = _layer_durations(t, truth["sides"][side], L, truth["categories"])
        rest = statistics.median(x for i, x in enumerate(d) if i != slow["layer"])
        if side == slow["side"]:
            assert max(range(L), key=d.__getitem__) == slow["layer"]
            assert d[slow["layer"]] / rest == pytest.approx(slow["factor"], rel=0.1)
        else:
            assert max(d) / rest < 1.15


def test_only_attention_naming_differs_without_plants(pair, tmp_path, classifier):
    _, truth = pair
    assert truth["unplanted"] == {"per_step_category_differences": {}}  # MI300X vs H100: all planted
    *_, t = write_pair(tmp_path, seed=4, vendor_a="nvidia", vendor_b="nvidia", layers=2, steps=3)
    same_vendor = json.loads(t.read_text())
    assert [same_vendor["sides"][s]["gpu"] for s in "AB"] == ["h100", "b200"]
    diff = same_vendor["unplanted"]["per_step_category_differences"]
    assert diff and {classifier.group(c) for per_phase in diff.values() for c in per_phase} == {"Attention"}
    for per_phase in diff.values():  # same number of attention kernels, differently named
        assert sum(v["A"] for v in per_phase.values()) == sum(v["B"] for v in per_phase.values())


def test_catalog_names_classify_as_intended(pair, classifier):
    _, truth = pair
    from kerneldiff.core.synth import names as sn

    for gpu in sn.GPUS:
        sn.kernel_table(gpu)
    wrong = {n: (c, classifier.classify(n)[0]) for n, c in {**sn.CATEGORY, **truth["categories"]}.items()
             if classifier.classify(n)[0] != c}
    assert not wrong


# --- annotation styles, quirks, sizes, demo, CLI --------------------------------------------

@pytest.mark.parametrize("style,pattern", [
    ("vllm", r"^execute_\d+_context_\d+\(sq\d+sk\d+sqsq\d+sqsk\d+\)_generation_\d+\(sq\d+sk\d+sqsq\d+sqsk\d+\)$"),
    ("vllm-old", r"^execute_context_\d+\(\d+_\d+\)_generation_\d+\(\d+\)$"),
    ("sglang", r"^step\[(DECODE bs=\d+|EXTEND bs=\d+ toks=\d+|MIXED bs=\d+ toks=\d+)\]$"),
    ("hf", r"^ProfilerStep#\d+$"),
])
def test_annotation_styles(tmp_path, style, pattern):
    p = tmp_path / "t.json"
    write_trace(p, SynthConfig(annotation_style=style, layers=1, steps=4, mixed_steps=1))
    names = [a["name"] for a in Parsed(read(p)).annotations]
    assert len(names) == 4 and all(re.match(pattern, n) for n in names), names
    if style == "vllm":
        assert re.match(r"execute_2_context_2\(.*\)_generation_0\(", names[0])       # prefill
        assert re.match(r"execute_33_context_1\(.*\)_generation_32\(", names[1])     # mixed
        assert re.match(r"execute_32_context_0\(.*\)_generation_32\(", names[2])     # decode


def test_quirk_options(tmp_path):
    p = tmp_path / "t.json"
    write_trace(p, SynthConfig(vendor="nvidia", layers=1, steps=2, strings_numbers=True, float_ts=False,
                               kernel_external_ids=False))
    t = Parsed(read(p))
    k = [e for e in t.gpu if e["cat"] == "kernel"]
    assert all(isinstance(e["args"]["correlation"], str) for e in k)
    assert all(isinstance(e["ts"], int) for e in t.doc["traceEvents"] if "ts" in e)
    assert all("External id" not in e["args"] for e in k)
    write_trace(p, SynthConfig(vendor="amd", layers=1, steps=2))
    t = Parsed(read(p))
    k = [e for e in t.gpu if e["cat"] == "kernel"]
    assert all(isinstance(e["args"]["correlation"], int) and isinstance(e["ts"], float) for e in k)
    assert all("External id" in e["args"] for e in k)


def test_target_bytes_is_reached(tmp_path):
    p = tmp_path / "t.json"
    s = write_trace(p, SynthConfig(layers=2, steps=2, target_bytes=3_000_000))
    step_bytes = s["uncompressed_bytes"] / len(s["steps"])
    assert 3_000_000 <= p.stat().st_size <= 3_000_000 + 3 * step_bytes
    assert len(s["steps"]) > 2 and s["steps"][-1]["phase"] == "decode"
    read(p)  # still one valid document
    g = tmp_path / "t.json.gz"
    write_trace(g, SynthConfig(layers=2, steps=2, target_bytes=400_000))
    assert 400_000 <= g.stat().st_size <= 600_000
    read(g)


def test_parse_size():
    assert parse_size("1GB") == 10**9 and parse_size("500mb") == 5 * 10**8
    assert parse_size("2GiB") == 2 * 2**30 and parse_size("1048576") == 1048576 and parse_size("1.5K") == 1500
    with pytest.raises(ValueError):
        parse_size("lots")


def test_bad_config_is_rejected():
    with pytest.raises(ValueError):
        SynthConfig(vendor="intel").resolved()
    with pytest.raises(ValueError):
        SynthConfig(vendor="amd", gpu="h100").resolved()
    with pytest.raises(ValueError):
        SynthConfig(layers=0).resolved()


def test_shipped_demo_is_small_and_up_to_date(tmp_path):
    from kerneldiff.core.demo import DEMO_A, DEMO_B, DEMO_TRUTH

    fresh = write_demo(tmp_path)
    for shipped, new in zip((DEMO_A, DEMO_B, DEMO_TRUTH), fresh):
        assert shipped.stat().st_size < 300_000
        assert shipped.read_bytes() == new.read_bytes(), f"{shipped.name} is stale: run kerneldiff.core.synth.pair.write_demo"
    truth = json.loads(DEMO_TRUTH.read_text())
    assert truth["schema"] == "kerneldiff-synth-truth/1"
    assert truth["model"]["layers"] == DEMO_PARAMS["layers"] and truth["steps"] == DEMO_PARAMS["steps"]
    assert {truth["sides"][s]["vendor"] for s in "AB"} == {"AMD", "NVIDIA"}


def test_cli_writes_pair_and_prints_paths(tmp_path, capsys):
    from kerneldiff.cli.main import main

    assert main(["synth", str(tmp_path / "o"), "--seed", "2", "--layers", "2", "--steps", "3", "--gzip"]) == 0
    out = capsys.readouterr().out.split()
    assert [Path(p).name for p in out] == ["synth_2_a.json.gz", "synth_2_b.json.gz", "synth_2_truth.json"]
    assert all(Path(p).exists() for p in out)
    assert main(["synth", str(tmp_path / "s"), "--single", "--gpu-a", "b200", "--layers", "1", "--steps", "2"]) == 0
    single = Path(capsys.readouterr().out.split()[0])
    assert read(single)["deviceProperties"][0]["name"] == "NVIDIA B200"
    assert main(["synth", str(tmp_path / "x"), "--size", "huge"]) == 2
    assert "not a size" in capsys.readouterr().err
