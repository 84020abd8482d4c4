"""The one session protocol: every kind of session (a GPU trace or pair, AIE runs, runs of rank
traces) answers what the front ends ask of any session, and kernels cross as KernelRefs."""

import pytest

from kerneldiff.core.aie.session import AieSession
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.ranks.session import RunSession
from kerneldiff.core.session import ExplorerSession, KernelRef, Session, TraceSession


@pytest.mark.parametrize("session", [
    Session([str(DEMO_A), str(DEMO_B)], use_cache=False),
    AieSession(["a.json", "b.json"]),
    RunSession(["run_a/", "run_b/"]),
], ids=["kineto", "aie", "runs"])
def test_every_kind_of_session_implements_the_protocol(session):
    assert isinstance(session, TraceSession)
    assert session.kind in ("kineto", "aie", "runs")
    assert session.paths and not session.single
    assert session.phases()[0] == "all"     # before anything is loaded


def test_what_the_explorer_opens_answers_the_explorer_protocol(tmp_path):
    """The explorer asks one set of questions of every session it opens (no branch on its kind):
    a GPU pair answers with its comparison and LoadedTrace, AIE runs with an AieResult and their
    own analysis, and only a GPU pair can have a stored comparison."""
    from kerneldiff.core.aie.synth import write_aie_trace
    from kerneldiff.core.session import AieResult, Comparison, LoadedTrace, TraceOverview, open_session

    gpu = open_session([str(DEMO_A), str(DEMO_B)], use_cache=False)
    gpu.load_all()
    assert isinstance(gpu, ExplorerSession)
    assert isinstance(gpu.result("all"), Comparison) and isinstance(gpu.result("all", 1), TraceOverview)
    assert isinstance(gpu.loaded_trace(0), LoadedTrace)

    paths = [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    for p in paths:
        write_aie_trace(p)
    aie = open_session(paths, aie={})
    aie.load_all()
    assert isinstance(aie, ExplorerSession) and aie.stored_comparison("all") is None
    both, one = aie.result("all"), aie.result("all", 1)
    assert isinstance(both, AieResult) and len(both.runs) == 2 and both.comparison is not None
    assert one.runs == [aie.run(1)] and one.comparison is None
    assert aie.loaded_trace(0) is aie.run(0)


def test_a_run_session_names_its_runs_as_given():
    s = RunSession(["runs/a/", "runs/b*"])
    assert s.paths == ["runs/a/", "runs/b*"] and [s.label(0), s.label(1)] == ["runs/a", "runs/b*"]


@pytest.fixture(scope="module")
def demo_session():
    s = Session([str(DEMO_A), str(DEMO_B)], use_cache=False)
    s.load_all()
    return s


def test_a_kernel_crosses_as_a_ref_and_comes_back_as_its_row(demo_session):
    m = demo_session._model(1)
    name = m.kernel_name(len(m.kernels) - 1)
    ref = demo_session.kernel_ref(1, name)
    assert isinstance(ref, KernelRef) and ref.side == "b"
    assert m.kernel_name(ref.row) == name and ref.row == min(r for r in range(len(m.kernels)) if m.kernel_name(r) == name)
    detail = demo_session.kernel_detail(ref)
    assert (detail.side, detail.row, detail.name) == ("b", ref.row, name)
    assert demo_session.kernel_name(ref) == name
    assert demo_session.kernel_ref(1, "no such kernel") is None


def test_every_name_the_session_re_exports_is_there():
    """The front ends import result types and helpers from kerneldiff.core.session alone; each name
    it lists resolves to the object where it is defined (AIE's GemmShape as AieGemmShape)."""
    import kerneldiff.core.session as session
    from kerneldiff.core.aie.analysis import GemmShape as AieGemmShape
    from kerneldiff.core.compare.work_result import GemmShape

    from kerneldiff.core.ranks.session import RunSession as RunSessionThere
    from kerneldiff.core.synth.names import GPUS
    from kerneldiff.core.trace_session import Session as SessionThere

    names = (session._RESULTS | session._WORK_RESULTS | session._OVERVIEW | session._AIE_RESULTS
             | session._AIE_SESSION | session._NAMES | session._SYNTH | {"RunSession", "Session", "KernelRef", "TraceSummary"})
    for name in sorted(names):
        assert getattr(session, name) is not None, name
    assert session.AieGemmShape is AieGemmShape and session.GemmShape is GemmShape
    assert session.Session is SessionThere and session.RunSession is RunSessionThere and session.SYNTH_GPUS is GPUS
    with pytest.raises(AttributeError):
        session.no_such_name
