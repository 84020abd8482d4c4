"""Comparison on real traces and invariants: self-compare, argument order, empty sides, reports."""

from __future__ import annotations

import csv
import io
import json

import pytest

from conftest import kineto_doc, real_trace, write_trace
from kerneldiff.core.compare.engine import compare
from kerneldiff.core.orchestration import load


@pytest.fixture(scope="module")
def qwen_pair(classifier):
    a = load(real_trace("mi300x_qwen1.5-0.5b_hf.json.gz"), classifier=classifier)
    b = load(real_trace("h100_qwen1.5-0.5b_hf.json.gz"), classifier=classifier)
    return a, b


def test_self_compare_is_neutral(qwen_pair, classifier):
    a, _ = qwen_pair
    c = compare(a, a, classifier=classifier)
    assert c.ratio == pytest.approx(1.0)
    assert all(o.ratio == pytest.approx(1.0) for o in c.operations)
    assert all(l.ratio == pytest.approx(1.0) for l in c.layers)
    assert c.fusions == []
    for al in c.alignments:
        assert all(p.same_kernel and p.ratio == pytest.approx(1.0) for p in al.pairs)


def test_cross_vendor_pair_accounts_for_all_kernel_time(qwen_pair, classifier):
    a, b = qwen_pair
    c = compare(a, b, classifier=classifier)
    assert c.a.label.startswith("AMD") and "H100" in c.b.label
    for side, m in (("a", a), ("b", b)):
        # every kernel is counted or left out as cut by the profiler's window (and said so)
        ops_total = sum(getattr(o, side).total_us for o in c.operations)
        left_out = getattr(c, side).excluded
        assert left_out is not None
        assert ops_total + left_out.time_us == pytest.approx(m.gpu_time_us, rel=1e-9)
    assert len(c.layers) == 24 and [l.rank for l in c.layers] == list(range(1, 25))
    gaps = [abs(l.gap_us) for l in c.layers]
    assert gaps == sorted(gaps, reverse=True)
    # aligned pairs: every kernel of the layer's modal pass appears exactly once per side
    al = c.alignment(5)
    assert al is not None
    assert sum(p.a_name is not None for p in al.pairs) == al.a_kernels_per_pass
    assert sum(p.b_name is not None for p in al.pairs) == al.b_kernels_per_pass
    # cuBLAS workspace memsets exist on H100 only: they must be gaps, not shift the GEMM pairs
    gemm_pairs = [p for p in al.pairs if p.a_category == "Dense GEMM"]
    assert gemm_pairs and all(p.b_category == "Dense GEMM" for p in gemm_pairs)
    json.dumps(c.to_dict(), allow_nan=False)


def test_argument_order_only_swaps_sides(qwen_pair, classifier):
    a, b = qwen_pair
    ab, ba = compare(a, b, classifier=classifier), compare(b, a, classifier=classifier)
    assert ab.a.label == ba.b.label and ab.gap_us == pytest.approx(-ba.gap_us)
    opa = {o.category: o for o in ab.operations}
    for o in ba.operations:
        assert o.a.total_us == pytest.approx(opa[o.category].b.total_us)
        assert o.gap_us == pytest.approx(-opa[o.category].gap_us)
    assert sorted((f.kind, f.fused_category) for f in ab.fusions) == sorted((f.kind, f.fused_category) for f in ba.fusions)
    flip = {"a": "b", "b": "a"}
    fa = {(f.kind, f.fused_category): f.fused_side for f in ab.fusions}
    for f in ba.fusions:
        assert fa[(f.kind, f.fused_category)] == flip[f.fused_side]


@pytest.mark.slow
def test_same_vendor_training_pair(classifier):
    a = load(real_trace("a100_control.json.gz"), classifier=classifier)
    b = load(real_trace("v100_test.json.gz"), classifier=classifier)
    c = compare(a, b, classifier=classifier)
    assert "A100" in c.a.label and "V100" in c.b.label
    from kerneldiff.core.analysis.cut_work import cut_work

    for side, m in (("a", a), ("b", b)):
        # all but the work launched before the profiler's window (v100_test: 614 activities, 56.5 ms)
        cut = cut_work(m)
        assert sum(getattr(o, side).total_us for o in c.operations) >= 0.99 * (m.gpu_time_us - (cut.time_us if cut else 0))
    assert c.same_kernels, "the same PyTorch kernels run on both"
    json.dumps(c.to_dict(), allow_nan=False)


def test_nothing_comparable_gives_warning_not_exception(tmp_path, classifier, qwen_pair):
    empty = load(write_trace(tmp_path / "e.json", kineto_doc([
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 1, "pid": 1, "tid": 1}])),
        classifier=classifier)
    c = compare(qwen_pair[0], empty, classifier=classifier)
    assert any("no GPU kernels" in w for w in c.warnings)
    assert c.ratio is None and all(o.only_in == "a" for o in c.operations)


def test_phase_filter(classifier):
    m = load(real_trace("mi300x_vllm_gptoss_decode.json.gz"), classifier=classifier)
    c = compare(m, m, phase="decode", classifier=classifier)
    assert c.a.gpu_time_us == pytest.approx(float(m.kernels.dur[m.kernels.phase == 2].sum()))
    c2 = compare(m, m, phase="prefill", classifier=classifier)
    assert c2.a.kernels == 0 and any("no kernels in phase" in w for w in c2.warnings)


@pytest.mark.slow
def test_cli_reports(tmp_path, capsys):
    from kerneldiff.cli.main import main

    a, b = str(real_trace("mi300x_qwen1.5-0.5b_hf.json.gz")), str(real_trace("h100_qwen1.5-0.5b_hf.json.gz"))
    assert main(["compare", a, b, "--width", "80"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "Operations" in out and "Dense GEMM" in out
    assert main(["compare", a, b, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["a"]["label"].startswith("AMD") and doc["layers"] and doc["schema"] == 1
    target = tmp_path / "r.csv"
    assert main(["compare", a, b, "--format", "csv", "-o", str(target)]) == 0
    pairs = list(csv.reader(io.StringIO((tmp_path / "r.pairs.csv").read_text())))
    # template kernel names contain commas: quoting must keep every row the header's width
    assert len(pairs) > 10 and all(len(r) == len(pairs[0]) for r in pairs)
    assert any("," in cell for r in pairs for cell in r[2:4])
    capsys.readouterr()
    assert main(["compare", a, "/nonexistent.json"]) == 2
    err = capsys.readouterr().err
    assert "/nonexistent.json" in err and len(err.strip().splitlines()) == 1
