"""Runs of rank traces: rank identification, per-rank figures, collectives and stragglers, on
generated runs (planted straggler, transfer time, overlap) and on HTA's real two-rank run, whose
figures are checked against a plain-Python walk of the raw events."""

from __future__ import annotations

import gzip
import json
import os
import shutil

import pytest
from hypothesis import given, settings, strategies as st

from conftest import real_trace
from kerneldiff.cli.main import main
from kerneldiff.core.errors import TraceError
from kerneldiff.core.ranks.identify import RankFile, identify, is_run, run_files
from kerneldiff.core.ranks.run import load_ranks
from kerneldiff.core.ranks.session import RunSession
from kerneldiff.core.synth.ranks import write_run


# --- identification --------------------------------------------------------------------------

def test_ranks_from_distributed_info_first():
    got, source = identify(["b.json", "a.json"], [{"rank": 1}, {"rank": 0}])
    assert source == "distributedInfo" and [(r.rank, r.path) for r in got] == [(0, "a.json"), (1, "b.json")]


@pytest.mark.parametrize("names, engine", [
    (["x/dp0_pp0_tp1_rank1.17.pt.trace.json.gz", "x/dp0_pp0_tp0_rank0.17.pt.trace.json.gz"], "vLLM"),
    (["17-TP-1.trace.json.gz", "17-TP-0.trace.json.gz"], "SGLang"),
    (["rank1_trace.json.gz", "rank0_trace.json.gz"], "torchtitan"),
])
def test_ranks_from_engine_file_names(names, engine):
    got, source = identify(names, [{}, {}])
    assert source == f"file names ({engine})" and [r.rank for r in got] == [0, 1]
    assert got[0].path == names[1]


def test_ranks_by_order_and_duplicate_distributed_ranks():
    got, source = identify(["b.json", "a.json"], [{"rank": 0}, {"rank": 0}])   # two files claim rank 0
    assert source == "file order" and [(r.rank, r.path) for r in got] == [(0, "a.json"), (1, "b.json")]


def test_run_arguments(tmp_path):
    for n in ("r0.json.gz", "r1.json.gz", "notes.txt"):
        (tmp_path / n).write_bytes(b"{}")
    assert is_run(str(tmp_path)) and run_files(str(tmp_path)) == [str(tmp_path / "r0.json.gz"), str(tmp_path / "r1.json.gz")]
    assert is_run(str(tmp_path / "r*.json.gz")) and len(run_files(str(tmp_path / "r*.json.gz"))) == 2
    joined = f"{tmp_path / 'r1.json.gz'},{tmp_path / 'r0.json.gz'}"
    assert is_run(joined) and run_files(joined) == [str(tmp_path / "r1.json.gz"), str(tmp_path / "r0.json.gz")]
    assert not is_run(str(tmp_path / "r0.json.gz"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TraceError, match="without trace files"):
        run_files(str(empty))
    with pytest.raises(TraceError, match="no such file"):
        run_files(str(tmp_path / "x*.json"))


def test_bad_run_is_one_line(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["compare", str(empty), str(empty), "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "without trace files" in err[0]


# --- generated runs: every figure against the planted truth ------------------------------------

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    a = write_run(base / "a", ranks=4, straggler=2, straggle_us=50, transfer_us=80, overlap_us=30)
    b = write_run(base / "b", ranks=4, straggler=1, straggle_us=120, transfer_us=60, naming="vllm")
    return str(base / "a"), a, str(base / "b"), b


def test_rank_figures_are_the_planted_ones(runs):
    pa, ta, pb, tb = runs
    s = RunSession([pa, pb], use_cache=False, jobs=1)
    a, b = s.load()
    assert a.rank_source == "distributedInfo" and b.rank_source == "file names (vLLM)"
    for run, truth in ((a, ta), (b, tb)):
        assert [r.rank for r in run.ranks] == list(range(4))
        for r, t in zip(run.ranks, truth["ranks"]):
            for k in ("wall_us", "compute_us", "comm_us", "exposed_comm_us"):
                assert getattr(r, k) == pytest.approx(t[k], abs=1e-3), (r.rank, k)
            assert r.busy_us + r.idle_us == pytest.approx(r.wall_us)
            assert len(r.collectives) == truth["collectives"]
            assert set(r.collectives.kind) == {"all_reduce"} and set(r.collectives.nbytes) == {truth["nbytes"]}


def test_collectives_and_stragglers_are_the_planted_ones(runs):
    pa, ta, pb, tb = runs
    s = RunSession([pa, pb], use_cache=False, jobs=1)
    s.load()
    from kerneldiff.core.ranks.run import findings

    f = findings(*s.sides)
    (row,) = f.collectives
    assert (row.kind, row.nbytes) == ("all_reduce", 8 << 20)
    for side, truth in ((row.a, ta), (row.b, tb)):
        n = truth["collectives"]
        assert side.count == n
        assert side.transfer_us == pytest.approx(n * truth["transfer_us"])
        mean_wait = sum(r["wait_us"] for r in truth["ranks"]) / 4
        assert side.wait_us == pytest.approx(mean_wait)
        # nccl-tests' bus bandwidth: bytes / transfer × 2(n−1)/n
        assert side.busbw_gbps == pytest.approx((8 << 20) / (truth["transfer_us"] * 1e3) * 2 * 3 / 4)
        assert side.pct_link_peak == pytest.approx(100 * side.busbw_gbps / 450.0)   # H100 SXM: NVLink 4
    assert row.a.skew_p50_us == pytest.approx(50) and row.b.skew_p50_us == pytest.approx(120)
    for key, truth in (("a", ta), ("b", tb)):
        st = f.stragglers[key]
        assert st.rank == truth["straggler"] and st.last == truth["collectives"] and st.share == 1.0
        assert st.compute_before_us > st.others_compute_before_us


def test_parallel_load_equals_serial(runs):
    pa, *_ = runs
    files = [RankFile(i, os.path.join(pa, f)) for i, f in enumerate(sorted(os.listdir(pa)))]
    one = load_ranks(files, use_cache=False, jobs=1)
    two = load_ranks(files, use_cache=False, jobs=2)
    assert [r.row() for r in one] == [r.row() for r in two]


@pytest.mark.slow
def test_compare_runs_json_is_mirrored(runs, capsys):
    pa, _, pb, _ = runs
    assert main(["compare", pa, pb, "--format", "json", "--no-cache"]) == 0
    ab = json.loads(capsys.readouterr().out)
    assert main(["compare", pb, pa, "--format", "json", "--no-cache"]) == 0
    ba = json.loads(capsys.readouterr().out)
    assert set(ab["ranks"]) == {"a", "b"} and len(ab["ranks"]["a"]) == 4
    assert set(ab["ranks"]["a"][0]) >= {"rank", "file", "wall_us", "busy_us", "compute_us", "comm_us",
                                        "exposed_comm_us", "idle_us"}
    assert ab["ranks"]["a"] == ba["ranks"]["b"] and ab["ranks"]["b"] == ba["ranks"]["a"]
    assert ab["stragglers"]["a"] == ba["stragglers"]["b"]
    (ca,), (cb,) = ab["collectives"], ba["collectives"]
    assert ca["a"] == cb["b"] and ca["b"] == cb["a"] and ca["gap_us"] == pytest.approx(-cb["gap_us"])
    assert ab["gap_us"] == pytest.approx(-ba["gap_us"])
    assert ab["runs"]["representative"] == {"a": 0, "b": 0, "how": "slowest rank (largest wall clock)"}


@pytest.mark.slow
def test_rank_flag_picks_the_representative(runs, capsys):
    pa, _, pb, _ = runs
    assert main(["compare", pa, pb, "--format", "json", "--no-cache", "--rank", "2"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["runs"]["representative"]["a"] == 2 and d["a"]["path"].endswith("trace_2.json.gz")
    assert main(["compare", pa, pb, "--no-cache", "--rank", "9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no rank 9" in err[0]


@pytest.mark.slow
def test_text_and_csv_reports(runs, capsys, tmp_path):
    pa, _, pb, _ = runs
    assert main(["compare", pa, pb, "--no-cache", "--width", "100"]) == 0
    out = capsys.readouterr().out
    assert "Ranks (slowest first)" in out and "A straggler: rank 2" in out and "B straggler: rank 1" in out
    assert main(["compare", pa, pb, "--no-cache", "--format", "csv", "--table", "collectives"]) == 0
    rows = capsys.readouterr().out.strip().splitlines()
    assert rows[0].startswith("kind,bytes,place,layers,a_count,b_count")
    assert rows[1].split(",")[:2] == ["all_reduce", "8388608"] and rows[1].split(",")[4] == "12"
    assert main(["compare", pa, pb, "--no-cache", "--format", "csv", "-o", str(tmp_path / "r.csv")]) == 0
    assert (tmp_path / "r.ranks.csv").exists() and (tmp_path / "r.stragglers.csv").exists()


def test_run_tables_need_runs(capsys):
    a = real_trace("h100_qwen1.5-0.5b_hf.json.gz")
    assert main(["compare", str(a), str(a), "--format", "csv", "--table", "ranks", "--no-cache"]) == 2
    assert "table of runs" in capsys.readouterr().err


# --- the real two-rank run (HTA) against its raw events ----------------------------------------

def _raw(path):
    with gzip.open(path) as f:
        return json.load(f)["traceEvents"]


def _union(iv):
    total, end = 0.0, None
    start = None
    for s, e in sorted(iv):
        if end is None or s > end:
            if end is not None:
                total += end - start
            start, end = s, e
        else:
            end = max(end, e)
    return total + ((end - start) if end is not None else 0.0)


@pytest.fixture(scope="module")
def hta(tmp_path_factory):
    real_trace("hta_two_ranks/sampled_rank-0.json.gz")
    d = tmp_path_factory.mktemp("hta")
    for r in (0, 1):
        shutil.copy(real_trace(f"hta_two_ranks/sampled_rank-{r}.json.gz"), d / f"sampled_rank-{r}.json.gz")
    s = RunSession([str(d), str(d)], use_cache=False, jobs=1)
    s.load()
    return d, s


@pytest.mark.slow
def test_hta_rank_figures_against_raw_events(hta):
    d, s = hta
    run = s.sides[0]
    assert run.rank_source == "distributedInfo" and [r.rank for r in run.ranks] == [0, 1]
    for r in run.ranks:
        ev = _raw(d / f"sampled_rank-{r.rank}.json.gz")
        gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        kern = [e for e in gpu if e["cat"] == "kernel"]
        comm = [(e["ts"], e["ts"] + e["dur"]) for e in kern if e["name"].startswith("nccl")]
        comp = [(e["ts"], e["ts"] + e["dur"]) for e in kern if not e["name"].startswith("nccl")]
        assert r.wall_us == pytest.approx(max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu))
        assert r.busy_us == pytest.approx(_union([(e["ts"], e["ts"] + e["dur"]) for e in gpu]))
        assert r.comm_us == pytest.approx(_union(comm)) and len(r.collectives) == len(comm) == 10
        assert r.compute_us == pytest.approx(_union(comp))
        assert r.exposed_comm_us == pytest.approx(_union(comm + comp) - _union(comp))
        # each NCCL kernel's kind is the collective annotated around its launch (nccl:all_to_all …)
        kinds = sorted(e["name"].split(":", 1)[1].strip("_").replace("_base", "").replace("allgather", "all_gather")
                       for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("nccl:"))
        assert sorted(r.collectives.kind) == kinds


@pytest.mark.slow
def test_hta_collectives_and_straggler_against_raw_events(hta):
    d, s = hta
    from kerneldiff.core.ranks.run import findings

    f = findings(*s.sides)
    raw = []
    for r in (0, 1):
        ev = _raw(d / f"sampled_rank-{r}.json.gz")
        raw.append(sorted((e["ts"], e["dur"]) for e in ev if e.get("cat") == "kernel" and e["name"].startswith("nccl")))
    # the true pairs, from all pairs of kernels: those that overlap and end within 1 ms of each other
    # (a collective ends on every rank once the last has arrived)
    pairs = [(a, b) for a in raw[0] for b in raw[1] if max(a[0], b[0]) <= min(a[0] + a[1], b[0] + b[1])
             and abs(a[0] + a[1] - b[0] - b[1]) <= 1000.0]
    assert len(pairs) == 5
    assert sum(c.a.transfer_us for c in f.collectives) == pytest.approx(sum(min(a[1], b[1]) for a, b in pairs))
    assert sum(c.a.total_us for c in f.collectives) == pytest.approx(sum((a[1] + b[1]) / 2 for a, b in pairs))
    st = f.stragglers["a"]
    assert (st.rank, st.last, st.collectives) == (1, 5, 5)
    assert st.late_us == pytest.approx(sum(b[0] - a[0] for a, b in pairs) / 5)
    assert f.stragglers["a"] == f.stragglers["b"]


# --- exposed communication in the gap ledger -------------------------------------------------------

@pytest.mark.slow
def test_ledger_exposed_communication_against_raw_events(capsys):
    a, b = real_trace("a100_control.json.gz"), real_trace("v100_test.json.gz")
    # the whole window (--all-passes: between-pass work too), less the work launched before it
    assert main(["compare", str(a), str(b), "--format", "json", "--no-cache", "--all-passes"]) == 0
    ab = json.loads(capsys.readouterr().out)
    assert main(["compare", str(b), str(a), "--format", "json", "--no-cache", "--all-passes"]) == 0
    ba = json.loads(capsys.readouterr().out)
    for d in (ab, ba):
        assert sum(e["gap_us"] for e in d["ledger"]) == pytest.approx(d["wall"]["wall_gap_us"], abs=0.01)
        assert not [e for e in d["ledger"] if e["cause"] in ("All-Reduce", "Communication")]
    (ea,) = [e for e in ab["ledger"] if e["cause"] == "exposed communication"]
    (eb,) = [e for e in ba["ledger"] if e["cause"] == "exposed communication"]
    assert (ea["a_us"], ea["b_us"], ea["gap_us"]) == pytest.approx((eb["b_us"], eb["a_us"], -eb["gap_us"]))
    for path, got in ((a, ea["a_us"]), (b, ea["b_us"])):
        from test_prewindow_oracle import prewindow

        ev = _raw(path)
        before = prewindow(ev)
        kern = [e for i, e in enumerate(ev) if e.get("ph") == "X" and e.get("cat") == "kernel" and i not in before]
        comm = [(e["ts"], e["ts"] + e["dur"]) for e in kern if e["name"].startswith("nccl")]
        comp = [(e["ts"], e["ts"] + e["dur"]) for e in kern if not e["name"].startswith("nccl")]
        assert got == pytest.approx(_union(comm + comp) - _union(comp), abs=0.01)


def test_ledger_exposed_communication_is_the_planted_one(runs, capsys):
    pa, ta, pb, tb = runs
    assert main(["compare", os.path.join(pa, "trace_0.json.gz"), ",".join(
        os.path.join(pb, f) for f in sorted(os.listdir(pb))), "--format", "json", "--no-cache", "--rank", "0"]) == 0
    d = json.loads(capsys.readouterr().out)
    (e,) = [e for e in d["ledger"] if e["cause"] == "exposed communication"]
    assert e["a_us"] == pytest.approx(ta["ranks"][0]["exposed_comm_us"])
    assert e["b_us"] == pytest.approx(tb["ranks"][0]["exposed_comm_us"])


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_bad_rank_is_one_line_from_any_process(runs, tmp_path, capsys, jobs):
    pa, *_ = runs
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(os.path.join(pa, "trace_0.json.gz"), bad / "trace_0.json.gz")
    with gzip.open(bad / "trace_1.json.gz", "wt") as f:
        f.write('{"traceEvents": [')
    assert main(["compare", str(bad), pa, "--no-cache", "--jobs", jobs]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "trace_1.json.gz" in err[0] and "no complete event" in err[0]


def test_different_world_sizes_are_per_rank_and_per_token(tmp_path, capsys):
    write_run(tmp_path / "tp2", ranks=2, step_tokens=32)
    write_run(tmp_path / "tp4", ranks=4, step_tokens=32)
    assert main(["compare", str(tmp_path / "tp2"), str(tmp_path / "tp4"), "--format", "json", "--no-cache"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [len(d["ranks"][k]) for k in "ab"] == [2, 4]
    ra, rb = d["ranks"]["a"][0], d["ranks"]["b"][0]
    assert ra["tokens"] == rb["tokens"] == 3 * 32          # three passes of 32 query tokens
    (note,) = [n for n in d["runs"]["notes"] if n.startswith("world sizes differ")]
    assert f"A {ra['wall_us'] / 96:,.1f} µs" in note and f"B {rb['wall_us'] / 96:,.1f} µs" in note


def test_synth_writes_two_runs(tmp_path, capsys):
    assert main(["synth", str(tmp_path), "--ranks", "3", "--straggler", "1"]) == 0
    truth = json.loads((tmp_path / "runs_truth.json").read_text())
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "run_a"), str(tmp_path / "run_b"), "--format", "json", "--no-cache"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["stragglers"]["a"]["rank"] == truth["a"]["straggler"] == 1
    assert d["stragglers"]["b"] is None                    # everyone arrives together: no one to name
    for key in "ab":
        for got, want in zip(d["ranks"][key], truth[key]["ranks"]):
            assert got["exposed_comm_us"] == pytest.approx(want["exposed_comm_us"])
    assert main(["synth", str(tmp_path / "x"), "--ranks", "3", "--straggler", "5"]) == 2


def test_link_peaks_name_gpus_of_the_compute_table():
    import tomllib

    from kerneldiff.core.analysis import links
    from kerneldiff.core.analysis.peaks import default_table

    keys = {e.key for e in default_table().entries}
    doc = tomllib.loads(links._TABLE.read_text(encoding="utf-8"))
    assert doc["link"]
    for e in doc["link"]:
        assert e["key"] in keys and e["gbps"] > 0 and e["source"] and e["link"]



@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(1, 50), st.booleans()), min_size=1, max_size=30))
def test_overlap_figures_against_a_brute_force_count(items):
    """compute ∪, comm ∪ and exposed communication against counting every microsecond."""
    import numpy as np

    from kerneldiff.core.analysis.collectives import _length

    s = np.array([a for a, _, _ in items], float)
    e = s + np.array([d for _, d, _ in items], float)
    comm = np.array([c for _, _, c in items])
    grid = np.zeros((2, 260), bool)
    for a, b, c in zip(s.astype(int), e.astype(int), comm):
        grid[int(c), a:b] = True
    assert _length(s[~comm], e[~comm]) == grid[0].sum()
    assert _length(s[comm], e[comm]) == grid[1].sum()
    exposed = _length(s, e) - _length(s[~comm], e[~comm])
    assert exposed == (grid[1] & ~grid[0]).sum()


def test_explorer_on_runs_without_a_terminal_is_one_line(runs, capsys):
    pa, _, pb, _ = runs
    assert main([pa, pb]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs a terminal" in err[0] and "kerneldiff compare RUN_A RUN_B" in err[0]
    assert main([pa]) == 2                                  # one directory: not a trace, as before
    assert "is a directory" in capsys.readouterr().err


def test_a_directory_named_like_a_trace_is_no_run(tmp_path):
    d = tmp_path / "mistake.json"
    d.mkdir()
    (d / "r0.json").write_bytes(b"{}")
    assert not is_run(str(d)) and is_run(str(tmp_path))


def test_runs_refuse_pass_outside_the_pictures(runs, capsys):
    # html, markdown and perfetto of runs: tests/functional/test_runs_reports.py
    pa, _, pb, _ = runs
    assert main(["compare", pa, pb, "--format", "json", "--pass", "1", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--pass picks passes" in err[0]
