"""Readings of the real traces recorded for this project (tests/data/recorded, always in the clone),
checked against what the recording did by construction and against the raw events read here with
plain json, not through the loader."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from kerneldiff.core.orchestration import load

HERE = Path(__file__).resolve().parents[1] / "data" / "recorded"
TRUTH = json.loads((HERE / "TRUTH.json").read_text())["traces"]


def _raw(name: str) -> list[dict]:
    with gzip.open(HERE / name) as f:
        return json.load(f)["traceEvents"]


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_passes_phases_layers(name):
    want = TRUTH[name]
    m = load(HERE / name, use_cache=False)
    steps = np.unique(m.kernels.step[m.kernels.step >= 0])
    assert len(steps) == want["passes"]
    assert m.num_layers == want["layers"]
    # every pass holds exactly `layers` layers, in order
    per_pass = {}
    for span in m.layers:
        per_pass.setdefault(span.step, []).append(span.layer)
    assert sorted(per_pass) == sorted(int(s) for s in steps)
    assert all(v == list(range(want["layers"])) for v in per_pass.values())


@pytest.mark.slow
def test_decomposed_attention_layers_hold_one_softmax_each():
    """HF eager attention (GEMM, scale, mask, upcast, softmax, cast, GEMM): the layers are anchored on
    the softmax kernels — each layer holds exactly one, as the raw events have one per layer and pass."""
    name = "h100small_eager_attn.json.gz"
    raw = [e for e in _raw(name) if e.get("cat") == "kernel" and "softmax" in e["name"]]
    m = load(HERE / name, use_cache=False)
    names = np.array([m.strings[int(i)] for i in m.kernels.name])
    soft = np.char.find(names.astype(str), "softmax") >= 0
    assert soft.sum() == len(raw) == TRUTH[name]["passes"] * TRUTH[name]["layers"] == len(m.layers)
    for span in m.layers:
        assert soft[span.start:span.end].sum() == 1


def test_graph_replayed_attention_time_matches_raw():
    name = "h100small_static_graphs.json.gz"
    raw = sum(e["dur"] for e in _raw(name) if e.get("cat") == "kernel" and "sdpa" in e["name"]
              and not e["name"].startswith("triton"))
    m = load(HERE / name, use_cache=False)
    att = [i for i, c in enumerate(m.categories) if c.startswith("Attention")]
    got = float(m.kernels.dur[np.isin(m.kernels.cat, att)].sum())
    assert got == pytest.approx(raw, rel=1e-9)
    assert raw == pytest.approx(TRUTH[name]["attention_us"], rel=1e-6)


@pytest.mark.slow
def test_guard_checks_of_graph_replayed_passes_count_as_their_host_time():
    """Each decode pass read from its graph launch starts inside `Torch-Compiled Region`, after the
    guard check that leads into it: the host time of the passes holds every guard check, whose
    durations the raw events give (nothing else of higher priority — launches, syncs — runs inside
    them)."""
    from kerneldiff.core.compare.engine import compare

    name = "h100small_static_graphs.json.gz"
    raw = [e for e in _raw(name) if e.get("name") == "TorchDynamo Cache Lookup"]
    assert len(raw) == TRUTH[name]["phases"]["decode"]
    m = load(HERE / name, use_cache=False)
    other = load(HERE / "h100small_eager_attn.json.gz", use_cache=False)
    m.all_passes = other.all_passes = True   # every pass, the graph-capture pass too (--all-passes)
    for a, b, key in ((other, m, "b"), (m, other, "a")):
        host = compare(a, b).host.side(key)
        assert host.guard_checks_us == pytest.approx(sum(e["dur"] for e in raw), rel=1e-6)
        assert host.compile_ids == ["0/0"] and host.recompiles == 0


def test_layer_sizes_read_per_phase():
    """Eager prefill (47 kernels per layer) against graph-replayed decode (17): not 'uneven layers'
    (a misreading) but two phases that ran differently, said with each phase's own size."""
    from collections import Counter

    m = load(HERE / "h100small_static_graphs.json.gz", use_cache=False)
    sizes: dict[str, Counter] = {}
    for span in m.layers:
        sizes.setdefault(m.steps[span.step].phase, Counter())[span.end - span.start] += 1
    typical = {p: c.most_common(1)[0][0] for p, c in sizes.items()}
    assert typical["prefill"] > 2 * typical["decode"]
    assert not any(w.startswith("uneven layer sizes") for w in m.warnings)
    said = [w for w in m.warnings if w.startswith("layers hold")]
    assert said and all(f"{n} kernels in {p}" in said[0] for p, n in typical.items())


def test_user_step_annotations_are_passes_when_nothing_else_says():
    """A user's own loop, `record_function("step_N")`, in a trace without engine steps, module calls,
    embeddings or graph launches: each annotation is a pass (the recorded Gloo ranks hold four)."""
    from kerneldiff.core.analysis.phases import parse_step

    assert parse_step("step_3")[1] == parse_step("iter 12")[1] == parse_step("Iteration#0")[1] == "user_step"
    assert parse_step("step[DECODE bs=4]")[1] == "sglang"
    assert parse_step("stepper_3") is None and parse_step("step_") is None and parse_step("step_3x") is None
    name = "h100_gloo_ws2_rank0.json.gz"
    raw = sorted(e["ts"] for e in _raw(name) if e.get("cat") == "user_annotation" and e["name"].startswith("step_"))
    m = load(HERE / name, use_cache=False)
    assert [s.ts for s in m.steps] == pytest.approx(raw) and len(raw) == 4
    assert m.pass_source.startswith("the user's step annotations")


def test_a_gloo_run_says_why_it_shows_no_communication():
    """The recorded Gloo ranks: distributedInfo's backend is gloo and no communication kernel ran (the
    raw events hold `gloo:*` annotations and memcpys only), so the run says why communication is 0."""
    from kerneldiff.core.ranks.session import RunSession

    files = [str(HERE / f"h100_gloo_ws2_rank{r}.json.gz") for r in (0, 1)]
    raw = _raw(files[0])
    assert any(e.get("name", "").startswith("gloo:") for e in raw)
    assert not any(e.get("cat") == "kernel" and "nccl" in e["name"].lower() for e in raw)
    run = ",".join(files)
    found = RunSession([run, run], use_cache=False, jobs=1).findings()
    said = [n for n in found.notes if "Gloo" in n]
    assert len(said) == 2 and all("communication reads 0" in n for n in said)
    assert all(r.comm_us == 0 for side in found.ranks.values() for r in side)
