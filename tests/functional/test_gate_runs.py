"""The gate on runs of rank traces: the representative ranks' checks, the ranks' spread of compute
per pass (`skew`) and exposed communication, on generated runs with planted stragglers (the figures
are the planted ones) and on HTA's real two-rank run."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from conftest import real_trace
from kerneldiff.cli.main import main
from kerneldiff.core.gate.runs import skew_series
from kerneldiff.core.gate.spec import parse_checks
from kerneldiff.core.ranks.session import RunSession
from kerneldiff.core.synth.ranks import write_run

LAYERS = 4


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("gate_runs")
    common = dict(ranks=4, passes=6, layers=LAYERS, jitter_us=5.0)
    write_run(base / "a", straggler=2, straggle_us=50, transfer_us=80, overlap_us=30, seed=1, **common)
    write_run(base / "b", straggler=1, straggle_us=120, transfer_us=60, seed=2, naming="vllm", **common)
    write_run(base / "c", straggler=2, straggle_us=50, transfer_us=80, overlap_us=30, seed=3, **common)
    write_run(base / "exact", ranks=3, passes=5, layers=LAYERS, straggler=1, straggle_us=50, seed=4)
    write_run(base / "tp2", ranks=2, passes=6, layers=LAYERS, straggler=1, straggle_us=50, seed=5)
    return {k: str(base / k) for k in ("a", "b", "c", "exact", "tp2")}


def _gate(capsys, *args) -> tuple[int, dict]:
    code = main(["gate", *args, "--format", "json", "--no-cache"])
    return code, json.loads(capsys.readouterr().out)


def _checks(d) -> dict:
    return {c["metric"]: c for c in d["checks"]}


def test_skew_is_the_planted_straggle(runs):
    s = RunSession([runs["exact"], runs["exact"]], use_cache=False)
    (run, _) = s.load()
    got = skew_series(run.ranks)
    # every pass: the straggler's GEMMs are 50 µs longer in each of the 4 layers, the rest equal
    assert got.value == pytest.approx(LAYERS * 50, abs=1e-3)
    assert list(got.per_pass) == pytest.approx([LAYERS * 50] * 5, abs=1e-3)
    assert skew_series(run.ranks[:1]).value is None


@pytest.mark.slow
def test_runs_regress_one_way_and_improve_the_other(runs, capsys):
    code, ab = _gate(capsys, runs["a"], runs["b"])
    assert code == 1 and ab["verdict"] == "regression"
    code, ba = _gate(capsys, runs["b"], runs["a"])
    assert code == 0 and ba["verdict"] == "improvement"
    ca, cb = _checks(ab), _checks(ba)
    assert list(ca) == ["wall", "skew", "late", "wait", "comm"]        # the defaults on runs
    for m in ca:
        assert ca[m]["status"] == "regression" and cb[m]["status"] == "improvement"
        assert ca[m]["base"] == pytest.approx(cb[m]["new"]) and ca[m]["delta"] == pytest.approx(-cb[m]["delta"])
        assert ca[m]["noise"] == pytest.approx(cb[m]["noise"])
    # the planted spreads: 4 layers × 50 µs against 4 × 120 µs (plus up to 4 × 5 µs of jitter)
    assert LAYERS * 50 - 20 <= ca["skew"]["base"] <= LAYERS * 50 + 20
    assert LAYERS * 120 - 20 <= ca["skew"]["new"] <= LAYERS * 120 + 20
    assert "rank 2 computes longest" in ca["skew"]["note"] and "rank 1 computes longest" in ca["skew"]["note"]
    r = ab["runs"]
    assert r["base"]["ranks"] == 4 and r["base"]["rank_source"] == "distributedInfo"
    assert r["new"]["rank_source"] == "file names (vLLM)"
    assert r["base"]["skew"]["slowest_rank"] == 2 and r["new"]["skew"]["slowest_rank"] == 1
    assert [f["rank"] for f in r["base"]["files"]] == [0, 1, 2, 3]
    assert all(len(f["sha256"]) == 64 for side in ("base", "new") for f in r[side]["files"])
    assert ab["thresholds"]["checks"] == {"wall": "3%", "skew": "3%", "late": "3%", "wait": "3%", "comm": "3%"}
    assert any("representative ranks' exposed communication" in n for n in ab["notes"])


@pytest.mark.slow
def test_the_same_code_passes(runs, capsys):
    code, d = _gate(capsys, runs["a"], runs["c"])      # the same run, another seed of jitter
    assert code == 0 and d["verdict"] == "pass", d["checks"]
    code, d = _gate(capsys, runs["a"], runs["a"])
    assert code == 0 and d["verdict"] == "pass" and all(c["delta"] == 0 for c in d["checks"])


@pytest.mark.slow
def test_limits_and_rank(runs, capsys):
    # a skew limit wider than the change lets it through; the other checks still regress
    code, d = _gate(capsys, runs["a"], runs["b"], "--gate", "skew:+1ms")
    assert _checks(d)["skew"]["status"] == "pass" and d["verdict"] == "regression"
    code, d = _gate(capsys, runs["a"], runs["c"], "--rank", "2")
    assert d["runs"]["base"]["representative"] == 2 and d["base"]["path"].endswith("trace_2.json.gz")


def test_world_sizes_that_differ_are_inconclusive(runs, capsys):
    code, d = _gate(capsys, runs["a"], runs["tp2"])
    assert code == 1 and d["verdict"] == "inconclusive"
    assert any("world sizes differ (base 4, new 2)" in r for r in d["reasons"])


@pytest.mark.slow
def test_one_rank_has_no_skew(runs, capsys, tmp_path):
    one = runs["a"] + "/trace_0.json.gz"
    code, d = _gate(capsys, runs["a"], one + ",")
    assert "skew" not in _checks(d) and any("skew not checked" in n for n in d["notes"])
    code, d = _gate(capsys, runs["a"], one + ",", "--gate", "skew")
    assert _checks(d)["skew"]["status"] == "inconclusive" and d["verdict"] != "pass"


@pytest.mark.slow
def test_text_and_markdown_name_the_runs(runs, capsys):
    assert main(["gate", runs["a"], runs["b"], "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "base run " in out and "4 ranks of 4 (ranks from distributedInfo)" in out and "\nskew " in out
    assert main(["gate", runs["a"], runs["b"], "--no-cache", "--format", "markdown"]) == 1
    md = capsys.readouterr().out
    assert "Runs of rank traces" in md and "| `skew` |" in md and "4 rank files, each fingerprinted" in md


def test_run_flags_on_traces_are_one_line(capsys):
    t = str(real_trace("h100_qwen1.5-0.5b_hf.json.gz"))
    for extra in (["--gate", "skew"], ["--rank", "1"]):
        assert main(["gate", t, t, "--no-cache", *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and ("runs" in err[0] or "run" in err[0]), err


def test_checks_on_runs_default_to_wall_skew_comm():
    assert [c.name for c in parse_checks(None, [], runs=True)] == ["wall", "skew", "late", "wait", "comm"]
    assert [c.name for c in parse_checks(None, [])] == ["wall"]
    with pytest.raises(ValueError, match="spread across the ranks"):
        parse_checks(None, ["skew"])


def _union(iv) -> float:
    total, start, end = 0.0, None, None
    for s, e in sorted(iv):
        if end is None or s > end:
            total += (end - start) if end is not None else 0.0
            start, end = s, e
        else:
            end = max(end, e)
    return total + ((end - start) if end is not None else 0.0)


def _raw_pass_compute(path) -> list[float]:
    """Each ProfilerStep's compute from the raw events: the union of the non-NCCL kernels whose
    runtime launch lies inside the step's annotation."""
    import gzip

    with gzip.open(path) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e["name"].startswith("ProfilerStep#"))
    launch = {e["args"]["correlation"]: e["ts"] for e in ev
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    kernels = [e for e in ev if e.get("cat") == "kernel" and not e["name"].startswith("nccl")]
    return [_union([(e["ts"], e["ts"] + e["dur"]) for e in kernels
                    if s0 <= launch.get(e["args"].get("correlation"), -1) <= s1]) for s0, s1 in steps]


@pytest.mark.slow
def test_real_two_rank_run_skew_against_raw_events(capsys):
    hta = real_trace("hta_two_ranks")
    # two ProfilerSteps: too few repeats to read the skew's noise floor; asked for, it is
    # inconclusive, never pass (by default it is left out with a note, gate/rank_floor)
    code, d = _gate(capsys, str(hta), str(hta), "--gate", "skew:3%")
    assert code == 1 and d["verdict"] == "inconclusive"
    assert _checks(d)["skew"]["status"] == "inconclusive"
    raw = [_raw_pass_compute(hta / f"sampled_rank-{r}.json.gz") for r in (0, 1)]
    want = sum(abs(x - y) for x, y in zip(*raw)) / len(raw[0])     # 30,826.5 µs per pass
    c = _checks(d)
    assert c["skew"]["base"] == pytest.approx(want) and c["skew"]["delta"] == 0
    assert d["runs"]["base"]["representative"] == 1 and d["runs"]["base"]["skew"]["slowest_rank"] == 1


def test_a_bad_rank_file_is_one_line(runs, tmp_path, capsys):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(runs["a"], bad)
    (bad / "trace_3.json.gz").write_bytes(b"\x1f\x8b not gzip")
    assert main(["gate", runs["a"], str(bad), "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "trace_3.json.gz" in err[0]


@pytest.mark.slow
def test_the_readme_recipe_for_an_engine_gives_the_same_findings(runs):
    """docs/RUNS.md "Spreading the ranks over an engine's workers", with map() standing in for Ray."""
    from dataclasses import asdict

    from kerneldiff.core.ranks.identify import identify, run_files
    from kerneldiff.core.ranks.run import Run, findings
    from kerneldiff.core.ranks.summary import summarize_rank

    def run(arg):
        files = run_files(arg)
        sums = list(map(lambda i_f: summarize_rank(*i_f, use_cache=False), enumerate(files)))
        ranked, source = identify(files, [getattr(s.info, "distributed", {}) or {} for s in sums])
        by_path = {s.file: s for s in sums}
        for rf in ranked:
            by_path[rf.path].rank = rf.rank
        return Run(arg, ranked, source, [by_path[rf.path] for rf in ranked])

    got = findings(run(runs["a"]), run(runs["b"]))
    want = findings(*RunSession([runs["a"], runs["b"]], use_cache=False, jobs=2).load())
    assert asdict(got) == asdict(want)


def test_recorded_gloo_run_skew_is_read_per_annotated_step(capsys):
    """The recorded two-rank Gloo run (tests/data/recorded, in every clone): four passes, the user's
    own `step_N` annotations; rank 1 spins 25.26 ms on its GPU between two of them, outside every
    step. The skew is the mean over steps of the ranks' difference in compute within each step,
    from the raw events (a kernel belongs to the step its launch falls in), so the spin is not in it."""
    import gzip
    from pathlib import Path

    here = Path(__file__).resolve().parents[1] / "data" / "recorded"
    files = [str(here / f"h100_gloo_ws2_rank{r}.json.gz") for r in (0, 1)]
    per_step = []
    for f in files:
        with gzip.open(f) as fh:
            ev = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
        steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev
                       if e.get("cat") == "user_annotation" and re.fullmatch(r"step_[0-9]+", e["name"]))
        launch = {e["args"]["correlation"]: e["ts"] for e in ev
                  if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in (e.get("args") or {})}
        ks = [e for e in ev if e.get("cat") == "kernel"]
        assert len(steps) == 4 and any("spin_kernel" in e["name"] for e in ks) == f.endswith("rank1.json.gz")
        got = []
        for s0, s1 in steps:
            mine = [e for e in ks if s0 <= launch.get(e["args"].get("correlation"), -1) <= s1]
            assert not any("spin_kernel" in e["name"] for e in mine)
            got.append(_union([(e["ts"], e["ts"] + e["dur"]) for e in mine]))
        per_step.append(got)
    want = sum(abs(a - b) for a, b in zip(*per_step)) / 4
    run = ",".join(files)
    code, d = _gate(capsys, run, run)
    c = _checks(d)
    assert c["skew"]["base"] == pytest.approx(want, abs=1e-3)
    assert c["skew"]["base"] < 100.0                              # the 25 ms spin ran outside every step
    skew = d["runs"]["base"]["skew"]
    assert skew["slowest_compute_us"] - skew["fastest_compute_us"] == pytest.approx(
        abs(sum(per_step[1]) - sum(per_step[0])) / 4, abs=1e-3)


def _ranks_of(matrix, phases):
    from kerneldiff.core.ranks.summary import RankSummary

    return [RankSummary(rank=i, file=f"r{i}", pass_compute_us=list(row), pass_phases=list(phases))
            for i, row in enumerate(matrix)]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6).flatmap(lambda n: st.integers(1, 8).flatmap(lambda p: st.tuples(
    st.lists(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=p, max_size=p), min_size=n, max_size=n),
    st.lists(st.sampled_from(["prefill", "decode"]), min_size=p, max_size=p), st.randoms()))))
def test_skew_is_the_mean_spread_whatever_the_rank_order(args):
    matrix, phases, rnd = args
    s = skew_series(_ranks_of(matrix, phases))
    cols = [c for c in zip(*matrix) if max(c) > 0]       # passes with no compute on any rank are cut work
    if not cols:
        assert s.value is None
        return
    spread = [max(c) - min(c) for c in cols]
    assert s.value == pytest.approx(sum(spread) / len(spread)) and s.value >= 0
    shuffled = list(matrix)
    rnd.shuffle(shuffled)
    assert skew_series(_ranks_of(shuffled, phases)).value == pytest.approx(s.value)
    for ph in set(phases):
        sub = skew_series(_ranks_of(matrix, phases), ph)
        want = [max(c) - min(c) for c, p in zip(zip(*matrix), phases) if p == ph and max(c) > 0]
        assert (sub.value is None) if not want else sub.value == pytest.approx(sum(want) / len(want))


def test_ranks_with_other_pass_counts_have_no_skew():
    from kerneldiff.core.ranks.summary import RankSummary

    ranks = [RankSummary(rank=0, file="r0", pass_compute_us=[1.0, 2.0, 3.0], pass_phases=["decode"] * 3),
             RankSummary(rank=1, file="r1", pass_compute_us=[1.0, 2.0], pass_phases=["decode"] * 2)]
    s = skew_series(ranks)
    assert s.value is None and "different numbers of passes (2–3)" in s.missing


def test_a_growing_straggler_fails_the_gate_on_lateness_and_wait(tmp_path, capsys):
    """Rank 2's host launches each all-reduce 200 µs late in the base, 600 µs in the new run: its
    compute does not change (skew cannot see it), its lateness and the others' wait do, per
    validated collective, with the collectives as the repeats (both 0 noise: every one alike)."""
    import json as _json

    from kerneldiff.cli.main import main as _main
    from kerneldiff.core.synth.ranks import write_run as _write

    _write(tmp_path / "a", ranks=4, passes=4, layers=4, straggler=None, late_launch=2, late_launch_us=200.0)
    _write(tmp_path / "b", ranks=4, passes=4, layers=4, straggler=None, late_launch=2, late_launch_us=600.0)
    _main(["gate", str(tmp_path / "a"), str(tmp_path / "b"), "--no-cache", "--format", "json"])
    doc = _json.loads(capsys.readouterr().out)
    got = {c["metric"]: c for c in doc["checks"]}
    assert (got["late"]["base"], got["late"]["new"], got["late"]["status"]) == (200.0, 600.0, "regression")
    # wait: the three on-time ranks wait the lateness, the late one nothing: 3/4 of it on average
    assert (got["wait"]["base"], got["wait"]["new"], got["wait"]["status"]) == (150.0, 450.0, "regression")
    assert got["skew"]["base"] == got["skew"]["new"] == 0.0
    assert doc["verdict"] == "regression"
    _main(["gate", str(tmp_path / "b"), str(tmp_path / "a"), "--no-cache", "--format", "json"])
    back = {c["metric"]: c for c in _json.loads(capsys.readouterr().out)["checks"]}
    assert back["late"]["status"] == back["wait"]["status"] == "improvement"
