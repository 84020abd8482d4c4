"""Each collective placed in its pass, phase, layer and block, checked against the raw events of the
real traces (read here with json and the kernels' own names, not through the loader or the
classifier): b200's multimem all-reduces after attention and after the MoE, one per block per layer;
a100/v100's NCCL kernels in the ProfilerStep whose span holds their launch."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import real_trace
from kerneldiff.core.analysis.collectives import rank_collectives
from kerneldiff.core.session import Session


def _kernels(path) -> tuple[list[dict], list[dict]]:
    events = json.load(gzip.open(path))["traceEvents"]
    k = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: float(e["ts"]))
    return k, events


def _load(path):
    s = Session([str(path)], use_cache=False)
    m = s.load(0)
    return m, rank_collectives(m, s.classifier)


def raw_b200_places(path) -> list[tuple[int, str]]:
    """Per multimem all-reduce in GPU order: (layer, block). A layer begins at its attention kernel
    (fmha…); its first all-reduce after the attention with no norm since is the attention output's,
    one after a norm (the post-attention fused add+RMSNorm) the MLP's; before any attention: (-1, "")."""
    k, _ = _kernels(path)
    out, layer, last_attn, last_norm = [], -1, -1.0, -1.0
    for e in k:
        n, t = e["name"], float(e["ts"])
        if n.startswith("fmha"):
            layer, last_attn = layer + 1, t
        elif "rms_norm" in n:
            last_norm = t
        elif "multimem_all_reduce" in n:
            out.append((-1, "") if layer < 0 else (layer, "mlp" if last_norm > last_attn else "attention"))
    return out


@pytest.mark.slow
def test_b200_all_reduces_placed_as_raw_events():
    path = real_trace("b200_vllm_eager.json.gz")
    raw = raw_b200_places(path)
    m, rc = _load(path)
    mine = [(rc.layer[i], rc.block[i]) for i in range(len(rc)) if rc.algorithm[i] == "MULTIMEM"]
    assert mine == raw
    assert sum(1 for x in raw if x[1] == "attention") == 36 and sum(1 for x in raw if x[1] == "mlp") == 36
    # the pass is the prefill step its annotation names
    assert {rc.phase[i] for i in range(len(rc))} == {"prefill"}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["a100_control.json.gz", "v100_test.json.gz"])
def test_nccl_kernels_placed_in_their_profiler_step(name):
    """Each NCCL kernel's pass is the ProfilerStep#N whose span holds its runtime launch (joined by
    correlation); these traces have no layers and no phase annotations: no block; a collective the
    autograd engine launched is in `backward` (DDP's gradient all-reduces), the rest in no phase."""
    path = real_trace(name)
    k, events = _kernels(path)
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"
             and e.get("cat") != "gpu_user_annotation"]
    launch = {e["args"].get("correlation"): e for e in events
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in (e.get("args") or {})}

    ops = [e for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"]

    def backward(e) -> bool:
        """Launched inside an autograd engine op on its launching thread."""
        ln = launch.get((e.get("args") or {}).get("correlation"))
        if ln is None:
            return False
        t = float(ln["ts"])
        return any(o["tid"] == ln["tid"] and o["name"].startswith("autograd::engine::evaluate_function")
                   and float(o["ts"]) <= t <= float(o["ts"]) + float(o["dur"]) for o in ops)

    def step_of(e) -> str | None:
        ln = launch.get((e.get("args") or {}).get("correlation"))
        if ln is None:
            return None
        t = float(ln["ts"])
        hit = [s["name"] for s in steps if float(s["ts"]) <= t <= float(s["ts"]) + float(s["dur"])]
        return hit[0] if len(hit) == 1 else None

    raw = [step_of(e) for e in k if e["name"].startswith("nccl")]
    m, rc = _load(path)
    assert len(rc) == len(raw) > 0
    mine = [m.steps[s].name if s >= 0 else None for s in rc.step]
    assert mine == raw
    assert set(rc.block) == {""} and set(rc.layer) == {-1}
    want = ["backward" if backward(e) else "" for e in k if e["name"].startswith("nccl")]
    assert rc.phase == want and 0 < want.count("backward") < len(want)


@pytest.mark.slow
def test_b200_collectives_table_rows_by_place(tmp_path: Path):
    """The JSON collectives[] of a one-rank run: the attention-output and MLP all-reduces are rows of
    their own, each with the 36 layers and count the raw events give."""
    path = real_trace("b200_vllm_eager.json.gz")
    run = tmp_path / "b200"
    run.mkdir()
    (run / "rank0.json.gz").symlink_to(path)
    out = subprocess.run([sys.executable, "-m", "kerneldiff.cli", "compare", str(run), str(run), "--format", "json",
                          "--no-cache"], capture_output=True, text=True, check=True).stdout
    rows = json.loads(out)["collectives"]
    raw = raw_b200_places(path)
    for block in ("attention", "mlp"):
        got = [r for r in rows if r["place"] == f"prefill {block}"]
        assert len(got) == 1
        side = got[0]["a"]
        assert side["count"] == sum(1 for x in raw if x[1] == block)
        assert side["layers"] == sorted({x[0] for x in raw if x[1] == block})
        assert got[0]["b"]["count"] == side["count"]
    assert sum(r["a"]["count"] for r in rows if r["kind"] == "all_reduce") == len(raw)


# --- group sizes: recorded, proven, or unknown -----------------------------------------------------

def _raw_group_evidence(path) -> tuple[set, list]:
    """(Group size / Process Group Ranks recorded on record_param_comms, pg_config sizes >= 2)."""
    d = json.load(gzip.open(path))
    rec = {(e["args"].get("Group size"), e["args"].get("Process Group Ranks")) for e in d["traceEvents"]
           if e.get("name") == "record_param_comms" and isinstance(e.get("args"), dict)}
    cfg = sorted({p["pg_size"] for p in (d.get("distributedInfo") or {}).get("pg_config", []) if p["pg_size"] >= 2})
    return rec, cfg


@pytest.mark.slow
def test_group_sizes_recorded_proven_or_unknown():
    """HTA: its all-reduces and all-to-alls record no group (no Group size, no Process Group Ranks,
    no pg_config) in a world of 128: their group reads unknown, no bus bandwidth (it read 128); the
    all-gather's shapes prove 64. b200: every process group of 2+ ranks in pg_config has 8 ranks, so
    the multimem all-reduces' group is 8."""
    from kerneldiff.core.analysis.collectives import side_rows, match

    hta = real_trace("hta_two_ranks/sampled_rank-0.json.gz")
    rec, cfg = _raw_group_evidence(hta)
    assert cfg == [] and all(g is None and r is None for g, r in rec)
    m, rc = _load(hta)
    by_kind = {}
    for k, g in zip(rc.kind, rc.group):
        by_kind.setdefault(k, set()).add(g)
    assert by_kind["all_reduce"] == {-1} and by_kind["all_to_all"] == {-1} and by_kind["all_gather"] == {64}
    rows = side_rows(match([rc]).instances, 1, 128, None)
    for (kind, _, _), side in rows.items():
        if kind == "all_gather":
            assert side.group == 64 and side.busbw_gbps == pytest.approx(side.algbw_gbps * 63 / 64)
        else:
            assert side.group is None and side.busbw_gbps is None and "group size unknown" in side.bandwidth_note

    b200 = real_trace("b200_vllm_eager.json.gz")
    _, cfg = _raw_group_evidence(b200)
    assert cfg == [8]
    m, rc = _load(b200)
    assert {g for g, a in zip(rc.group, rc.algorithm) if a == "MULTIMEM"} == {8}
