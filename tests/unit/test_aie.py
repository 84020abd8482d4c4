"""AIE (NPU) trace analysis against the planted truth of synthetic traces, plus loading and the CLI."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings, example
from hypothesis import strategies as st

from kerneldiff.cli.main import main
from kerneldiff.core.aie.analysis import (
    AieParams,
    GemmShape,
    analyze_aie,
    compare_aie,
    load_aie_events,
    pair_kernels,
    parse_aie_events,
)
from kerneldiff.core.aie.detect import is_aie_events
from kerneldiff.core.errors import TraceError
from kerneldiff.core.aie.synth import AiePlan, make_aie_events, write_aie_trace

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
PLAN = AiePlan(missing_ends_per_core=1, duplicate_rate=0.1, core_slowdown=(1.0, 1.1, 1.0, 0.95))


def _run(plan: AiePlan, **kw):
    events, truth = make_aie_events(plan)
    kw.setdefault("params", AieParams())
    run = analyze_aie(events, plan.shape, plan.warmup, plan.iterations, **kw)
    return run, truth


def _by_tile(run):
    return {c.tile: c for c in run.cores}


# ------------------------------------------------------------------------------- planted truth

def test_iterations_kernels_and_gmacs_match_planted_truth():
    run, truth = _run(PLAN)
    cores = _by_tile(run)
    assert sorted(cores) == sorted(t.tile for t in truth.cores)
    for ci, t in enumerate(truth.cores):
        c = cores[t.tile]
        assert c.detected_iterations == len(t.iterations) == PLAN.total_runs
        assert [it.n_kernels for it in c.iterations] == [len(g) for g in t.iterations]
        assert [(it.first_start, it.last_end) for it in c.iterations] == \
               [(g[0][0], g[-1][1]) for g in t.iterations]
        for i, it in enumerate(c.iterations):
            durs = [e - s for s, e in t.iterations[i]]
            assert it.span_cycles == t.span(i)
            assert it.min_cycles == min(durs) and it.max_cycles == max(durs)
            assert it.mean_cycles == pytest.approx(sum(durs) / len(durs))
            assert it.gmacs == pytest.approx(truth.core_gmacs(ci, i))
        assert [it.phase for it in c.iterations] == ["warmup"] * 2 + ["perf"] * 5
        assert c.stats.duplicate_starts + c.stats.duplicate_ends == t.duplicates
        assert c.stats.outliers == t.outliers == 1
        assert c.stats.orphan_starts == t.missing_ends == 1
        assert not c.mismatch and c.notes == []
    agg = run.aggregate
    assert sum(t.duplicates for t in truth.cores) > 0  # the plan really planted duplicates
    assert agg.indices == list(range(2, 7))
    for s in agg.per_iteration:
        assert s.runtime_cycles == truth.system_runtime(s.index)
        assert s.gmacs == pytest.approx(truth.system_gmacs(s.index))
        slowest = max(truth.cores, key=lambda t: t.span(s.index))
        assert s.slowest_tile == slowest.tile
    assert agg.mean_gmacs == pytest.approx(sum(truth.system_gmacs(i) for i in agg.indices) / 5)
    assert agg.best.runtime_cycles == min(truth.system_runtime(i) for i in agg.indices)
    assert sum(1 for n in run.notes if "unexpected" in n) == 0


def test_stalls_within_an_iteration_do_not_split_it_and_the_initial_wait_adds_no_iteration():
    run, truth = _run(replace(PLAN, gap_cycles=3000))  # in-run stalls 1.5x a kernel, far below 20x
    cores = _by_tile(run)
    for t in truth.cores:
        c = cores[t.tile]
        assert c.detected_iterations == PLAN.total_runs
        assert c.iterations[0].first_start == t.iterations[0][0][0]
        assert [it.n_kernels for it in c.iterations] == [len(g) for g in t.iterations]


def test_extra_iterations_are_labelled_and_explained():
    run, truth = _run(replace(PLAN, extra=2))
    for c in run.cores:
        assert [it.phase for it in c.iterations] == ["warmup"] * 2 + ["perf"] * 5 + ["extra"] * 2
        assert c.mismatch and any("expected 7" in n and "extra" in n for n in c.notes)
    assert run.aggregate.indices == list(range(2, 7))  # extras never enter the system figures


def test_a_short_boundary_merges_two_iterations_and_says_so():
    plan = replace(PLAN, short_boundaries=((0, 3),))
    run, truth = _run(plan)
    t0 = truth.cores[0]
    c = _by_tile(run)[t0.tile]
    assert c.detected_iterations == len(t0.iterations) == plan.total_runs - 1
    assert c.iterations[3].n_kernels == len(t0.iterations[3])
    assert c.iterations[3].span_cycles == t0.span(3)
    assert any("only 4 of 5 perf" in n for n in c.notes)
    assert any("merged" in n and "3" in n for n in c.notes)
    others = [x for x in run.cores if x.tile != t0.tile]
    assert all(not x.mismatch for x in others)
    # perf iteration 6 exists on three cores only: the aggregate keeps what every core has
    assert run.aggregate.indices == list(range(2, 6))
    assert any("6" in n for n in run.aggregate.notes)


def test_a_trace_that_lost_its_oldest_events_is_flagged():
    plan = replace(PLAN, lost_leading=((1, 2),))
    run, truth = _run(plan)
    t1 = truth.cores[1]
    c = _by_tile(run)[t1.tile]
    assert c.detected_iterations == len(t1.iterations) == plan.total_runs - 2
    assert [it.span_cycles for it in c.iterations] == [t1.span(i) for i in range(len(t1.iterations))]
    assert any("begins mid-run" in n for n in c.notes)


def test_no_boundary_reached_gives_one_iteration_and_a_reason():
    run, truth = _run(PLAN, params=AieParams(lock_stall_factor=10_000))
    for c in run.cores:
        assert c.detected_iterations == 1
        assert c.iterations[0].phase == "warmup"  # warm-up consumes the only one
        assert any("no LOCK_STALL reached" in n for n in c.notes)
    assert run.aggregate.per_iteration == []
    assert any("no perf iteration" in n for n in run.aggregate.notes)


def test_gmacs_scales_with_clock_and_tiling():
    base, _ = _run(PLAN)
    fast, _ = _run(PLAN, params=AieParams(clock_mhz=2500))
    assert fast.aggregate.mean_gmacs == pytest.approx(2 * base.aggregate.mean_gmacs)
    assert fast.cores[0].iterations[3].gmacs == pytest.approx(2 * base.cores[0].iterations[3].gmacs)
    events, _ = make_aie_events(PLAN)
    wide = analyze_aie(events, GemmShape(128, 128, 128, 4, 4), PLAN.warmup, PLAN.iterations)
    # per-core share shrinks 4x, the system figure (whole GEMM / slowest core) does not change
    assert wide.cores[0].iterations[3].gmacs == pytest.approx(base.cores[0].iterations[3].gmacs / 4)
    assert wide.aggregate.mean_gmacs == pytest.approx(base.aggregate.mean_gmacs)
    assert any("4x4 = 16 cores" in n for n in wide.notes)


def test_without_a_shape_timing_is_reported_and_gmacs_is_none():
    events, truth = make_aie_events(PLAN)
    run = analyze_aie(events, None, PLAN.warmup, None)
    assert all(it.gmacs is None for c in run.cores for it in c.iterations)
    assert all(it.phase == "perf" for c in run.cores for it in c.iterations[2:])
    assert run.aggregate.mean_gmacs is None and run.aggregate.mean_runtime_cycles > 0


def test_compare_prefers_the_faster_tiling():
    a, _ = _run(PLAN)
    b, _ = _run(replace(PLAN, core_slowdown=(0.5,) * 4, seed=7))
    cmp = compare_aie(a, b)
    rows = {r.metric: r for r in cmp.rows}
    assert rows["system throughput"].better == "b" and rows["system throughput"].ratio > 1.5
    assert rows["system runtime (slowest core)"].better == "b"
    assert len(cmp.per_iteration) == 5
    assert all(p.ratio < 1 for p in cmp.per_iteration)
    json.dumps(cmp.to_dict())


# ------------------------------------------------------------------------------ thin / bad data

def test_cores_without_pairs_give_notes_not_a_crash():
    events = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "core_trace for tile0,2"}},
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "core_trace for tile1,2"}},
        {"name": "INSTR_EVENT_0", "ph": "B", "pid": 0, "ts": 100},
        {"name": "INSTR_EVENT_0", "ph": "B", "pid": 0, "ts": 900},
    ]
    run = analyze_aie(events, GemmShape(64, 64, 64, 1, 2), warmup=1, iterations=3)
    for c in run.cores:
        assert c.iterations == [] and c.detected_iterations == 0
        assert any("no kernel pairs" in n for n in c.notes)
    assert run.cores[0].stats.starts == 2
    assert any("no core has kernel pairs" in n for n in run.aggregate.notes)
    assert json.loads(json.dumps(run.to_dict()))["aggregate"]["count"] == 0


def test_malformed_events_are_skipped_and_counted():
    events, truth = make_aie_events(PLAN)
    bad = [7, {"name": "INSTR_EVENT_0", "ph": "B", "pid": 0}, {"name": "LOCK_STALL", "ph": "B", "ts": 5},
           {"name": "process_name", "ph": "M", "pid": 9}]
    run = analyze_aie(events[:3] + bad + events[3:], PLAN.shape, PLAN.warmup, PLAN.iterations)
    assert sum(run.skipped.values()) == 4
    assert any("skipped 4 malformed" in n for n in run.notes)
    assert all(c.detected_iterations == PLAN.total_runs for c in run.cores)


@pytest.mark.parametrize("content, problem", [
    (b"", "empty"),
    (b"   \n", "empty"),
    (b"{not json", "not valid JSON"),
    (b'{"traceEvents": 3}', "expected an array"),
    (b"[]", "no events"),
    (b"[1, 2, 3]", "not an AIE trace"),
    (b'[{"name": "aten::mm", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]', "not an AIE trace"),
])
def test_bad_files_raise_trace_error_naming_file_and_problem(tmp_path, content, problem):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(TraceError) as ei:
        analyze_aie(p, None)
    msg = str(ei.value)
    assert str(p) in msg and problem in msg and "\n" not in msg


def test_missing_file_and_corrupt_gzip(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        load_aie_events(tmp_path / "absent.json")
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(orjson.dumps(make_aie_events(PLAN)[0]))[:200])
    with pytest.raises(TraceError, match="gzip"):
        load_aie_events(gz)


def test_gzip_and_plain_files_give_the_same_analysis(tmp_path):
    write_aie_trace(tmp_path / "t.json", PLAN)
    write_aie_trace(tmp_path / "t.json.gz", PLAN)
    a = analyze_aie(tmp_path / "t.json", PLAN.shape, 2, 5).to_dict()
    b = analyze_aie(tmp_path / "t.json.gz", PLAN.shape, 2, 5).to_dict()
    a.pop("path"), b.pop("path")
    assert a == b


def test_generator_is_deterministic(tmp_path):
    write_aie_trace(tmp_path / "a.json.gz", PLAN)
    write_aie_trace(tmp_path / "b.json.gz", PLAN)
    write_aie_trace(tmp_path / "c.json.gz", replace(PLAN, seed=1))
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()
    assert (tmp_path / "a.json.gz").read_bytes() != (tmp_path / "c.json.gz").read_bytes()


# ----------------------------------------------------------------------------- detection / probe

def test_detection_and_probe(tmp_path):
    events, truth = make_aie_events(PLAN)
    assert is_aie_events(events[:64])
    assert is_aie_events([{"name": "LOCK_STALL", "ph": "B", "pid": 0, "ts": 3}])
    assert not is_aie_events([{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "python3"}},
                              {"name": "void gemm<float>", "ph": "X", "cat": "kernel", "ts": 1.0}, "junk"])
    write_aie_trace(tmp_path / "t.json", PLAN)
    path = str(tmp_path / "t.json")
    trace = parse_aie_events(load_aie_events(path), path)
    assert sorted(c.tile for c in trace.cores) == sorted(t.tile for t in truth.cores)
    assert all(len(c.starts) >= PLAN.total_runs * PLAN.kernels_per_iteration for c in trace.cores)
    assert any(p.startswith("mem_trace") for p in trace.other_processes)


@pytest.mark.real
@pytest.mark.parametrize("name", ["a100_triton_example.json.gz", "mi250_minitoy_train_rocm.json.gz"])
def test_real_kineto_traces_are_not_aie(name):
    path = SHARED / name
    if not path.exists():
        pytest.skip("../shared/traces not present")
    events = load_aie_events(path)
    assert events and not is_aie_events(events[:64]) and not is_aie_events(events)
    with pytest.raises(TraceError, match="not an AIE trace"):
        analyze_aie(path)


# ---------------------------------------------------------------------------- pairing property

@settings(max_examples=60, deadline=None)
# found by Hypothesis: the duplicate starts shortened the preliminary pairs and so the median the
# burst gap is taken of (min gap 20, a duplicate 20 cycles late was kept)
@example([(100, 21, False, False, 1), (100, 21, True, False, 17), (100, 21, True, False, 20)])
# and: every duplicate start 20 cycles late shortened the median itself to 80, whose gap (20) kept them
@example([(100, 21, False, False, 1), (100, 21, True, False, 20), (100, 21, True, False, 20)])
@given(st.lists(st.tuples(st.integers(100, 250), st.integers(21, 500), st.booleans(), st.booleans(),
                          st.integers(1, 20)), min_size=3, max_size=40))
def test_pairing_recovers_kernels_despite_duplicate_bursts(spec):
    t, truth, starts, ends = 1000, [], [], []
    for dur, gap, dup_start, dup_end, delay in spec:
        truth.append((t, t + dur))
        starts.append(t)
        ends.append(t + dur)
        if dup_start:
            starts.append(t + delay)  # delay <= 20 < 0.25 x the shortest kernel
        if dup_end:
            ends.append(t + dur + delay)
        t += dur + gap
    # durations within [100, 250] stay inside [median/3, 3 x median], so no outlier may be dropped;
    # gaps > 20 cycles: a duplicate arrives before the next kernel starts
    pairs, stats = pair_kernels(starts, ends)
    assert [(p.start, p.end) for p in pairs] == truth
    assert stats.duplicate_starts + stats.duplicate_ends == len(starts) + len(ends) - 2 * len(truth)


# ------------------------------------------------------------------------------------------ CLI

SHAPE_ARGS = ["--M", "128", "--K", "128", "--N", "128", "--rows", "2", "--cols", "2",
              "--warmup", "2", "--iterations", "5"]


def test_cli_single_trace_prints_tables_and_writes_json(tmp_path, capsys):
    truth = write_aie_trace(tmp_path / "t.json.gz", PLAN)
    out = tmp_path / "out.json"
    assert main(["aie", str(tmp_path / "t.json.gz"), *SHAPE_ARGS, "--per-iteration", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert all(t.tile in text for t in truth.cores) and "GMAC/s" in text
    doc = json.loads(out.read_text())
    assert doc["aggregate"]["indices"] == list(range(2, 7))
    assert doc["aggregate"]["per_iteration"][0]["runtime_cycles"] == truth.system_runtime(2)
    assert len(doc["cores"]) == 4 and doc["shape"]["macs"] == 128 ** 3


def test_cli_two_traces_compares_side_by_side(tmp_path, capsys):
    write_aie_trace(tmp_path / "a.json", PLAN)
    write_aie_trace(tmp_path / "b.json", replace(PLAN, rows=4, cols=1, seed=5))
    out = tmp_path / "cmp.json"
    rc = main(["aie", str(tmp_path / "a.json"), str(tmp_path / "b.json"), *SHAPE_ARGS,
               "--rows-b", "4", "--cols-b", "1", "--json", str(out)])
    assert rc == 0
    assert "Side by side" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["b"]["shape"]["rows"] == 4 and doc["a"]["shape"]["rows"] == 2
    assert {r["metric"] for r in doc["comparison"]["rows"]} >= {"system throughput"}


def test_cli_json_to_stdout_is_pure_json(tmp_path, capsys):
    write_aie_trace(tmp_path / "t.json", PLAN)
    assert main(["aie", str(tmp_path / "t.json"), "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["shape"] is None and doc["aggregate"]["mean_gmacs"] is None


def test_cli_prints_trace_strings_literally(tmp_path, capsys):
    names = ("[red]x[/red]", "[bold]y", "tile1,2", "tile1,3")
    write_aie_trace(tmp_path / "t.json", replace(PLAN, tile_names=names))
    assert main(["aie", str(tmp_path / "t.json"), *SHAPE_ARGS]) == 0
    text = capsys.readouterr().out
    assert "[red]x[/red]" in text and "[bold]y" in text


def test_cli_errors_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    assert main(["aie", str(bad), *SHAPE_ARGS]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "not valid JSON" in err
    write_aie_trace(tmp_path / "t.json", PLAN)
    assert main(["aie", str(tmp_path / "t.json"), "--M", "128"]) == 2
    assert "go together" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ei:
        main(["aie", str(tmp_path / "t.json"), *SHAPE_ARGS, "--rows", "0"])
    assert ei.value.code == 2
