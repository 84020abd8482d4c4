"""Session: paths → probe → load → compare / summary / kernel detail, the one path every front end
takes (the CLI's JSON must be exactly what a session computes)."""

from __future__ import annotations

import json
import threading

import pytest

from kerneldiff.core import LoadCancelled, Session, TraceError, open_session
from kerneldiff.core.session import KernelRef
from kerneldiff.core.demo import DEMO_A, DEMO_B


@pytest.fixture(scope="module")
def demo_session():
    s = Session([DEMO_A, DEMO_B], use_cache=False)
    s.load_all()
    return s


def test_compare_finds_the_planted_slow_layer(demo_session):
    truth = json.loads((DEMO_A.parent / "demo_truth.json").read_text())
    cmp = demo_session.compare("all")
    assert cmp.a.kernels == len(demo_session.models[0].kernels)
    # the layer ranked first (largest |gap|) is the one the generator slowed down
    assert cmp.layers[0].layer == truth["planted"]["slow_layer"]["layer"]
    assert demo_session.phases()[0] == "all"


def test_cli_json_is_the_session_result(demo_session, capsys):
    from kerneldiff.cli.main import main

    assert main(["compare", str(DEMO_A), str(DEMO_B), "--format", "json", "--no-cache"]) == 0
    cli = json.loads(capsys.readouterr().out)
    mine = json.loads(json.dumps(demo_session.compare("all").to_dict(), default=str))
    for key in ("ratio", "gap_us", "operations", "layers", "fusions"):
        assert cli[key] == mine[key], key


def test_kernel_detail_reads_the_model(demo_session):
    m = demo_session.models[1]
    row = int(m.kernels.dur.argmax())
    d = demo_session.kernel_detail(KernelRef(1, row))
    assert d.side == "b" and d.name == m.kernel_name(row) and d.category == m.category(row)
    assert d.cpu_ops, "the demo records the operator that launched every kernel"


def test_one_trace_session_summarises_and_refuses_to_compare():
    s = Session([DEMO_A], use_cache=False)
    s.load(0)
    assert s.single
    summ = s.summary(0)
    assert summ.kernels == len(s.models[0].kernels)
    with pytest.raises(ValueError):
        s.compare()


def test_bad_second_trace_is_reported_before_the_first_loads(tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text("not json at all")
    s = Session([DEMO_A, bad], use_cache=False)
    with pytest.raises(TraceError) as e:
        s.load_all()
    assert str(bad) in str(e.value)
    assert s.models == [None, None]


def test_cancel_stops_a_load():
    s = Session([DEMO_A], use_cache=False)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(LoadCancelled):
        s.load(0, cancel=cancel)
    assert s.models[0] is None


def test_open_session_routes_aie_traces(tmp_path):
    from kerneldiff.core.aie.synth import AiePlan, write_aie_trace

    p = tmp_path / "npu.json"
    write_aie_trace(p, AiePlan())
    s = open_session([str(p)])
    assert s.kind == "aie"
    run = s.load(0)
    assert run.cores and s.models[0] is run
    # beside a GPU trace: a Kineto session (the GPU trace stays loadable), the AIE trace refused
    k = open_session([str(DEMO_A), str(p)], use_cache=False)
    assert k.kind == "kineto" and k.errors[0] is None and "cannot be compared" in k.errors[1]
    assert k.infos[1].kind == "aie" and k.load(0).kernels is not None


@pytest.mark.slow
def test_kernel_detail_joins_kernel_to_module_and_shapes():
    """kernel → launch → cpu_op (with its recorded shapes) → the nn.Module calls around it."""
    from conftest import real_trace

    s = Session([real_trace("h100_llama_eager_sdpa.json.gz")], use_cache=False)
    m = s.load(0)
    names = [m.kernel_name(r) for r in range(len(m.kernels))]
    row = next(r for r, n in enumerate(names) if "cudnn" in n.lower() or "flash" in n.lower()
               or "attention" in m.category(r).lower())
    d = s.kernel_detail(KernelRef(0, row))
    assert d.modules[0].startswith("LlamaForCausalLM") and any(x.startswith("LlamaDecoderLayer") for x in d.modules)
    assert any(x.startswith("LlamaAttention") for x in d.modules)
    assert d.input_dims and d.input_dims.startswith("[[")


def test_kernel_detail_carries_the_launch_configuration():
    s = Session([DEMO_B], use_cache=False)
    m = s.load(0)
    row = int(m.kernels.dur.argmax())
    d = s.kernel_detail(KernelRef(0, row))
    assert d.grid and d.grid.startswith("[") and d.block and d.block.startswith("[")
    assert d.registers is None or d.registers > 0


def test_aie_session_refuses_a_gpu_trace(tmp_path):
    from kerneldiff.core.aie.synth import AiePlan, write_aie_trace

    p = tmp_path / "npu.json"
    write_aie_trace(p, AiePlan())
    from kerneldiff.core import probe
    from kerneldiff.core.aie.session import AieSession

    s = AieSession([str(DEMO_A), str(p)])
    s.infos = [probe(str(DEMO_A)), probe(str(p))]
    with pytest.raises(TraceError) as e:
        s.load(0)
    assert "not an AMD AIE" in str(e.value)


@pytest.mark.slow   # real traces
@pytest.mark.real
def test_phase_cycle_offers_unknown_only_for_passes_whose_phase_is_unknown():
    # issue 30: the 43 set-up kernels before the first pass of the Llama traces carry phase
    # "unknown"; `p` offered it, with a "1 pass" header and an empty Timeline
    from kerneldiff.core.session import Session
    from conftest import real_trace

    s = Session([real_trace("h100_llama_eager_sdpa.json.gz"), real_trace("h100_llama_compiled.json.gz")])
    s.load_all()
    assert "unknown" in s.models[0].phases_present()
    assert s.phases() == ["all", "prefill", "decode"]


def test_overview_is_the_browse_reading_of_that_trace(demo_session):
    from kerneldiff.core.analysis.trace_totals import overview
    from kerneldiff.core.analysis.timeline import timeline

    for i in (0, 1):
        for phase in demo_session.phases():
            want = overview(demo_session.models[i], phase)
            assert want.wall == timeline(demo_session.models[i], phase, keep_cut=False).whole   # as compare reads it
            assert demo_session.overview(i, phase) == want
    one = Session([DEMO_A], use_cache=False)
    with pytest.raises(ValueError, match="not loaded"):
        one.overview(0)


def test_aie_session_runs_with_the_settings_given_per_trace(tmp_path):
    """The CLI's own settings (a shape for each trace) go through AieSession unchanged."""
    from kerneldiff.core.aie.analysis import AieParams, GemmShape, analyze_aie, compare_aie
    from kerneldiff.core.aie.session import AieSession, AieSettings
    from kerneldiff.core.aie.synth import AiePlan, write_aie_trace

    p = tmp_path / "npu.json"
    write_aie_trace(p, AiePlan())
    shapes = (GemmShape(512, 512, 512, 4, 4), GemmShape(512, 512, 512, 4, 1))
    params = AieParams(lock_stall_factor=3.0)
    s = AieSession([str(p), str(p)], run_settings=[AieSettings(sh, 1, None, params) for sh in shapes])
    runs = [s.load(0), s.load(1)]
    want = [analyze_aie(str(p), sh, 1, None, params) for sh in shapes]
    assert [r.to_dict() for r in runs] == [w.to_dict() for w in want]
    assert s.compare().to_dict() == compare_aie(*want).to_dict()


def test_the_fork_server_starts_only_for_traces_that_use_workers(monkeypatch, tmp_path):
    """Session.warm_up, called before the explorer's first frame: starting the fork server costs that
    frame ~10-20 ms and ~0.3 s of CPU, so only a pair with a trace big enough for worker processes
    (by the probes: size and compression) that is not in the model cache pays it."""
    import threading
    from types import SimpleNamespace

    from kerneldiff.core.processes import forkserver

    started = []
    monkeypatch.setattr(forkserver, "prepare", lambda: started.append(threading.current_thread().name))
    monkeypatch.setattr(forkserver, "cpus", lambda: 2)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def run(*infos, session=None):
        started.clear()
        if session is None:
            session = Session(["a", "b"][:len(infos)], use_cache=False)
            session.infos = list(infos)
        session.warm_up()
        for t in threading.enumerate():
            if t.name == "kerneldiff-prepare":
                t.join(10)
        return len(started)

    plain = SimpleNamespace(size=forkserver.PARALLEL_MIN_PLAIN - 1, compressed=False)
    assert run(plain, plain) == 0                      # 60 MB plain files: one process each
    assert run(plain, None) == 0
    assert run(plain, SimpleNamespace(size=forkserver.PARALLEL_MIN_GZIP, compressed=True)) == 1
    assert run(SimpleNamespace(size=forkserver.PARALLEL_MIN_PLAIN, compressed=False)) == 1
    # a big trace in the model cache is not read again: nothing to start
    from kerneldiff.core.demo import DEMO_A, DEMO_B

    monkeypatch.setattr(forkserver, "PARALLEL_MIN_PLAIN", 0)
    monkeypatch.setattr(forkserver, "PARALLEL_MIN_GZIP", 0)
    cached = Session([str(DEMO_A), str(DEMO_B)])
    cached.probe()
    assert run(session=cached) == 1
    cached.load(0)
    assert run(session=cached) == 1                    # B is not cached yet
    cached.load(1)
    assert run(session=cached) == 0
    assert run(session=Session([str(DEMO_A), str(DEMO_B)], use_cache=False)) == 0   # nothing probed
    fresh = Session([str(DEMO_A), str(DEMO_B)], use_cache=False)
    fresh.probe()
    assert run(session=fresh) == 1
    monkeypatch.setattr(forkserver, "cpus", lambda: 1)
    assert run(session=fresh) == 0                     # one core: no workers


def test_name_durations_honour_the_phase(demo_session):
    """The launches of a kernel's name are counted in the phase shown, as every other figure of the
    explorer is (the pass timeline's kernel detail counted the whole trace in any phase)."""
    import numpy as np

    s = demo_session
    k = s.models[0].kernels
    names, counts = np.unique(k.name, return_counts=True)
    row = int(np.flatnonzero(k.name == names[counts.argmax()])[0])
    same = k.name == k.name[row]
    whole = s.name_durations(KernelRef(0, row))
    assert whole.count == int(same.sum()) and whole.total_us == pytest.approx(float(k.dur[same].sum()))
    parts = [s.name_durations(KernelRef(0, row), phase) for phase in s.phases() if phase != "all"]
    assert len(parts) == 2 and all(0 < p.count < whole.count for p in parts)
    assert sum(p.count for p in parts) == whole.count
    assert sum(p.total_us for p in parts) == pytest.approx(whole.total_us)
    for phase, p in zip(("prefill", "decode"), parts):
        d = k.dur[same & s.models[0].phase_mask(phase)]
        assert (p.min_us, p.max_us, p.median_us) == (float(d.min()), float(d.max()), float(np.median(d)))


def test_loaded_label_and_absent_phase_read_the_models(demo_session):
    s = demo_session
    for i, m in enumerate(s.models):
        t = s.loaded_trace(i)
        assert (t.label, t.kernels, t.steps, t.layers_per_step, t.warnings) == \
            (m.label, len(m.kernels), len(m.steps), m.num_layers, len(m.warnings))
        assert s.label(i) == m.label
    assert s.absent_phase("all") == "" and s.absent_phase("decode") == ""
    why = s.absent_phase("mixed")
    assert why.startswith("phase 'mixed' is absent from A and B (A has prefill, decode; B has prefill, decode)")
    with pytest.raises(ValueError, match="not loaded"):
        Session([DEMO_A]).loaded_trace(0)
    fresh = Session([DEMO_A, DEMO_B])
    assert fresh.loaded is False and s.loaded is True          # the property beside loaded_trace
    with pytest.raises(ValueError, match="load both traces"):
        fresh.compare()
