"""`kerneldiff gate`: limits and checks as typed, the noise floor, the verdicts and exit codes on
generated pairs with a planted slowdown and on real pairs (../shared/traces), and its three formats."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from kerneldiff.cli.main import main
from kerneldiff.core.gate import noise as nz
from kerneldiff.core.gate.series import PassSeries
from kerneldiff.core.gate.spec import Limit, parse_check, parse_checks, parse_limit

from conftest import real_trace


# --- what the user types -------------------------------------------------------------------------

@pytest.mark.parametrize("text, kind, value", [("3%", "pct", 3.0), ("+3%", "pct", 3.0), ("0.5%", "pct", 0.5),
                                               ("+2ms", "us", 2000.0), ("500us", "us", 500.0), ("500µs", "us", 500.0),
                                               ("0.1s", "us", 1e5)])
def test_limits(text, kind, value):
    lim = parse_limit(text)
    assert (lim.kind, lim.value) == (kind, pytest.approx(value))


@pytest.mark.parametrize("text", ["3", "-3%", "ms", "3 parsecs", "", "nan%", "inf%", "1e400%"])
def test_bad_limits_are_refused(text):
    with pytest.raises(ValueError):
        parse_limit(text)


def test_checks_as_typed():
    default = Limit("pct", 3.0, "3%")
    assert parse_check("op:Attention:+5%", default).arg == "Attention"
    assert parse_check("op:Attention:+5%", default).limit.text == "+5%"
    assert parse_check("op:Attention", default).limit == default
    assert parse_check("layer:median:500us", default).limit.value == 500
    assert parse_check("layer", default).arg == "median"
    assert parse_check("layer:3", default).arg == "3"
    assert parse_check("kernels:+2ms", default).limit.value == 2000
    assert parse_check("idle", default).name == "idle"
    for bad in ("bogus", "op", "op:+5%", "layer:first", "wall:extra:+3%", "kernels:soon"):
        with pytest.raises(ValueError):
            parse_check(bad, default)


def test_wall_is_always_checked_and_a_gate_on_it_replaces_the_default():
    assert [(c.name, c.limit.text) for c in parse_checks(None, [])] == [("wall", "3%")]
    assert [(c.name, c.limit.text) for c in parse_checks("5%", ["kernels"])] == [("wall", "5%"), ("kernels", "5%")]
    assert [(c.name, c.limit.text) for c in parse_checks(None, ["wall:+1ms"])] == [("wall", "+1ms")]


@pytest.mark.parametrize("argv, says", [
    (["--max-slowdown", "3"], "--max-slowdown"), (["--gate", "bogus"], "--gate"), (["--gate", "op"], "--gate"),
    (["--format", "html"], "--format"), (["--phase", "warmup"], "--phase")])
def test_bad_flags_one_line_exit_2(argv, says, capsys, tmp_path):
    a = tmp_path / "a.json"
    a.write_text("{}")
    with pytest.raises(SystemExit) as e:   # argparse's own refusals exit from the parser
        rc = main(["gate", str(a), str(a), *argv])
        raise SystemExit(rc)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err and "Traceback" not in err


def test_an_empty_trace_is_exit_2(tmp_path, capsys):
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    assert main(["gate", str(empty), str(empty)]) == 2
    assert "empty" in capsys.readouterr().err


# --- the noise floor -----------------------------------------------------------------------------

def _series(values, phases=None, estimator="mean"):
    v = np.asarray(values, dtype=float)
    return PassSeries(float(v.mean()), v, phases or ["decode"] * len(v), estimator)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(1, 1e4), min_size=4, max_size=40), st.lists(st.floats(1, 1e4), min_size=4, max_size=40))
def test_floor_is_symmetric_and_never_negative(xa, xb):
    a, b = _series(xa), _series(xb)
    f = nz.floor(a, b)
    assert f is not None and f >= 0 and f == nz.floor(b, a)


def test_a_trend_is_not_noise():
    """Decode passes that grow steadily (a KV cache filling up) have no noise around their trend."""
    assert nz.floor(_series(np.arange(100, 148.0)), _series(np.arange(100, 148.0))) == pytest.approx(0)


def test_too_few_passes_have_no_floor():
    assert nz.floor(_series([1.0, 2.0, 3.0]), _series(np.ones(10))) is None
    # one prefill among many decodes takes the decodes' relative spread at its own size
    rng = np.random.default_rng(0)
    x = np.concatenate(([1000.0], 100 + rng.normal(0, 2, 47)))
    assert nz.floor(_series(x, ["prefill"] + ["decode"] * 47), _series(x, ["prefill"] + ["decode"] * 47)) > 0


def test_a_median_has_a_wider_floor_than_a_mean():
    rng = np.random.default_rng(1)
    x = 100 + rng.normal(0, 3, 30)
    assert nz.floor(_series(x, estimator="median"), _series(x, estimator="median")) > nz.floor(_series(x), _series(x))


# --- generated pairs with a planted slowdown -----------------------------------------------------

@pytest.fixture(scope="module")
def synth_pair(tmp_path_factory):
    """A base and three new traces of the same model: another run (noise only), layer 1 planted 2%
    slower, and layer 1 planted 50% slower."""
    from kerneldiff.core.synth.pair import SynthConfig, write_trace
    from kerneldiff.core.synth.trace import Plant

    d = tmp_path_factory.mktemp("gate_synth")
    base = SynthConfig(vendor="nvidia", layers=4, steps=16, batch=8, prompt_len=128, salt=1)
    paths = {"base": d / "base.json", "same": d / "same.json", "slight": d / "slight.json", "slow": d / "slow.json"}
    write_trace(paths["base"], base)
    write_trace(paths["same"], replace(base, salt=2))
    write_trace(paths["slight"], replace(base, salt=2, plant=Plant(slow_layer=1, slow_factor=1.02)))
    write_trace(paths["slow"], replace(base, salt=2, plant=Plant(slow_layer=1, slow_factor=1.5)))
    return {k: str(v) for k, v in paths.items()}


def _gate_json(capsys, *argv) -> tuple[int, dict]:
    rc = main(["gate", *map(str, argv), "--format", "json"])
    return rc, json.loads(capsys.readouterr().out)


def _check(doc, metric):
    return next(c for c in doc["checks"] if c["metric"] == metric)


def test_another_run_of_the_same_code_passes(synth_pair, capsys):
    rc, doc = _gate_json(capsys, synth_pair["base"], synth_pair["same"], "--gate", "kernels", "--gate", "layer:1:+5%",
                         "--gate", "op:Attention")
    assert rc == 0 and doc["verdict"] == "pass"
    assert all(c["ok"] and c["noise"] > 0 for c in doc["checks"])


def test_a_slowdown_below_the_limit_passes(synth_pair, capsys):
    rc, doc = _gate_json(capsys, synth_pair["base"], synth_pair["slight"], "--gate", "layer:1:+5%")
    c = _check(doc, "layer:1")
    assert 0 < c["delta_pct"] < 5 and c["status"] == "pass"
    assert rc == 0 and doc["verdict"] == "pass"


def test_a_slowdown_above_the_limit_is_a_regression_and_its_mirror_an_improvement(synth_pair, capsys):
    # (wall clock is noisy on these traces: see the next test; --max-slowdown keeps it out of the way)
    flags = ("--max-slowdown", "20%", "--gate", "layer:1:+5%", "--gate", "kernels:+3%")
    rc, doc = _gate_json(capsys, synth_pair["base"], synth_pair["slow"], *flags)
    c = _check(doc, "layer:1")
    assert c["delta_pct"] == pytest.approx(50, abs=8) and c["delta"] > c["noise"] and c["status"] == "regression"
    assert rc == 1 and doc["verdict"] == "regression"
    # the planted layer's kernels lead the changes, with the ledger's cause
    assert any(x["kind"] == "layer" and x["name"] == "layer 1" for x in doc["regressions"])
    assert any(x["kind"] == "operation" and "slower kernels" in x["cause"] for x in doc["regressions"])
    rc, back = _gate_json(capsys, synth_pair["slow"], synth_pair["base"], *flags)
    cb = _check(back, "layer:1")
    assert rc == 0 and back["verdict"] == "improvement" and cb["status"] == "improvement"
    assert cb["delta"] == pytest.approx(-c["delta"]) and cb["noise"] == pytest.approx(c["noise"])


def test_a_change_over_the_limit_but_inside_the_noise_is_inconclusive(synth_pair, capsys):
    """The generated traces sync every third pass: wall clock per pass is noisy (~10%), so a 9% growth
    of the wall clock cannot be told from noise, while kernel time (steady) shows it."""
    rc, doc = _gate_json(capsys, synth_pair["base"], synth_pair["slow"], "--max-slowdown", "3%")
    c = _check(doc, "wall")
    assert c["delta"] > c["allowed"] and c["delta"] <= c["noise"]
    assert c["status"] == "inconclusive" and not c["ok"]
    assert rc == 1 and doc["verdict"] == "inconclusive" and doc["reasons"]


def test_json_schema(synth_pair, capsys):
    rc, doc = _gate_json(capsys, synth_pair["base"], synth_pair["same"], "--gate", "comm:+1ms")
    assert doc["gate_schema"] == 1
    for key in ("verdict", "reasons", "comparability", "checks", "regressions", "improvements", "base", "new",
                "thresholds", "tool", "notes", "phase"):
        assert key in doc
    assert set(doc["comparability"]) >= {"verdict", "reasons"}
    for c in doc["checks"]:
        assert set(c) >= {"metric", "base", "new", "delta", "delta_pct", "limit", "noise", "ok"}
    for side in ("base", "new"):
        fp = doc[side]["fingerprint"]
        assert len(fp["sha256"]) == 64 and fp["size"] > 0 and "whole file" in fp["method"]
    assert doc["thresholds"]["checks"] == {"wall": "3%", "comm": "+1ms"}
    assert doc["tool"]["name"] == "kerneldiff" and doc["tool"]["version"]
    assert _check(doc, "comm")["note"].startswith("no communication kernels")


def test_markdown_and_text_and_output_file(synth_pair, capsys, tmp_path):
    out = tmp_path / "gate.md"
    rc = main(["gate", synth_pair["base"], synth_pair["slow"], "--gate", "kernels", "--format", "markdown", "-o", str(out)])
    assert rc == 1
    err = capsys.readouterr().err
    assert "kerneldiff gate: regression" in err      # the verdict is shown even when the report goes to a file
    md = out.read_text()
    assert md.startswith("### ❌ kerneldiff gate: **regression**")
    assert "| check | base | new | Δ | Δ% | limit | noise | result |" in md
    assert "**Top changes**" in md
    top = md.split("**Top changes**")[1].split("\n\n")[1].splitlines()
    assert len(top) == 2 + 5                            # header, rule, the top five
    assert main(["gate", synth_pair["base"], synth_pair["slow"], "--gate", "kernels"]) == 1
    text = capsys.readouterr().out
    assert text.startswith("gate: REGRESSION") and "kernels" in text and "noise" in text


# --- real pairs ------------------------------------------------------------------------------------

H100, H200 = "h100_llama_eager_sdpa.json.gz", "h200_llama_eager_sdpa.json.gz"


@pytest.mark.slow
def test_a_real_trace_against_itself_passes(capsys):
    p = real_trace(H100)
    rc, doc = _gate_json(capsys, p, p, "--gate", "kernels", "--gate", "layer:median", "--gate", "op:Attention")
    assert rc == 0 and doc["verdict"] == "pass"
    assert all(c["delta"] == 0 and c["noise"] > 0 for c in doc["checks"])
    assert doc["base"]["fingerprint"]["sha256"] == doc["new"]["fingerprint"]["sha256"]


@pytest.mark.slow
def test_h100_against_h200_is_a_regression_one_way_and_an_improvement_the_other(capsys):
    """The same eager Llama run on two GPUs: the H100 trace is ~15% slower per pass (27.71 ms
    against 24.07 ms wall clock; kernel time 2.40 ms against 2.09 ms), far beyond the noise
    (~0.5 ms on wall clock: 47 decode passes, each ~0.85 ms apart from the next)."""
    h100, h200 = real_trace(H100), real_trace(H200)
    rc, up = _gate_json(capsys, h200, h100, "--gate", "kernels", "--gate", "layer:median", "--allow-hardware-change")
    assert rc == 1 and up["verdict"] == "regression"
    wall = _check(up, "wall")
    assert wall["status"] == "regression" and wall["delta_pct"] == pytest.approx(15.1, abs=0.3)
    assert wall["noise"] < 0.03 * wall["base"] and wall["delta"] > wall["noise"]
    assert _check(up, "kernels")["delta_pct"] == pytest.approx(14.7, abs=0.3)
    rc, down = _gate_json(capsys, h100, h200, "--gate", "kernels", "--gate", "layer:median", "--allow-hardware-change")
    assert rc == 0 and down["verdict"] == "improvement"
    for c_up in up["checks"]:
        c_down = _check(down, c_up["metric"])
        assert c_down["delta"] == pytest.approx(-c_up["delta"]) and c_down["noise"] == pytest.approx(c_up["noise"])
    # the ledger's largest cause on this pair is the host: launch-bound idle
    assert up["regressions"][0]["name"] == "idle: launch-bound"


@pytest.mark.slow
def test_qwen_against_llama_is_inconclusive(capsys):
    rc, doc = _gate_json(capsys, real_trace("h100_qwen1.5-0.5b_hf.json.gz"), real_trace(H100))
    assert rc == 1 and doc["verdict"] == "inconclusive"
    assert doc["comparability"]["verdict"] == "not comparable"
    assert any("different models" in r for r in doc["reasons"])
    assert doc["regressions"] == [] and doc["improvements"] == []


@pytest.mark.slow
@pytest.mark.parametrize("keep", [3_000_000, 9_000_000])
def test_a_truncated_trace_is_never_a_pass(keep, tmp_path, capsys):
    """Cut the H100 trace's gzip short: early (no kernel survives) or late (most passes do, and its
    wall clock per pass would otherwise compare)."""
    p = real_trace(H100)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(p.read_bytes()[:keep])
    rc = main(["gate", str(p), str(cut), "--format", "json"])
    out = capsys.readouterr().out
    assert rc in (1, 2)
    if rc == 1:
        doc = json.loads(out)
        assert doc["verdict"] == "inconclusive"
        assert any("truncated" in r or "no GPU work" in r for r in doc["reasons"])
    if keep == 9_000_000:
        # 25 of 48 passes survive, and their wall clock per pass alone would read as a 3.7% gain
        assert rc == 1 and doc["new"]["passes"] == 25
        assert any("is truncated" in r for r in doc["reasons"])


@pytest.mark.slow
def test_one_long_pass_reads_its_floor_from_the_layers(capsys):
    """A trace of one pass (a prefill of 24 layers) has no repeated passes: its floor comes from the
    layers, each a repeat of the same work, and the check says so. The same trace against itself
    then passes; one Triton kernel (no pass repeated, no layers) stays inconclusive."""
    p = real_trace("mi300x_qwen1.5-0.5b_hf.json.gz")
    rc, doc = _gate_json(capsys, p, p, "--gate", "kernels", "--gate", "layer:median")
    assert rc == 0 and doc["verdict"] == "pass"
    for c in doc["checks"]:
        assert c["noise_from"] == "24 layer repeats (" + ("wall" if c["metric"] == "wall" else "kernel") + " time)"
        assert 0 < c["noise"] < 0.02 * c["base"]
    t = real_trace("a100_triton_example.json.gz")
    rc, doc = _gate_json(capsys, t, t)
    assert rc == 1 and doc["verdict"] == "inconclusive"
    assert _check(doc, "wall")["noise"] is None and "too few repeats" in doc["reasons"][0]


def _sweep_exposed(ts, te, is_comm) -> float:
    """Exposed communication by an event sweep: time with a collective running and nothing else."""
    ev = sorted([(t, 0, c) for t, c in zip(ts, is_comm)] + [(t, 1, c) for t, c in zip(te, is_comm)])
    comm = other = 0
    last = None
    out = 0.0
    for t, kind, c in ev:
        if last is not None and comm > 0 and other == 0:
            out += t - last
        last = t
        d = 1 if kind == 0 else -1
        if c:
            comm += d
        else:
            other += d
    return out


@pytest.mark.slow
def test_exposed_communication_agrees_with_an_event_sweep(classifier):
    """a100_control (NCCL AllReduce and SendRecv beside compute): the exposed time per pass equals an
    independent sweep's, and is never more than the collectives' own time."""
    from kerneldiff.core.gate.series import SideData
    from kerneldiff.core.orchestration import load

    m = load(str(real_trace("a100_control.json.gz")), classifier=classifier)
    d = SideData(m, "all", {"passes": []}, classifier)
    s = d.exposed_comm()
    k = m.kernels
    ts, dur = k.ts[d.rows], np.maximum(k.dur[d.rows], 0)
    is_comm = [classifier.role(m.categories[c]) == "comm" if c >= 0 else False for c in k.cat[d.rows].tolist()]
    assert any(is_comm)
    # copies and memsets hide no communication (the one definition, with the ledger's): left out
    kern = (k.kind[d.rows] == 0).tolist()
    keep = [i for i, (c, kk) in enumerate(zip(is_comm, kern)) if c or kk]
    swept = _sweep_exposed([ts.tolist()[i] for i in keep], [(ts + dur).tolist()[i] for i in keep],
                           [is_comm[i] for i in keep])
    assert s.value * d.passes == pytest.approx(swept, rel=1e-9, abs=1e-3)
    comm_time = float(dur[np.array(is_comm)].sum())
    assert 0 < s.value * d.passes <= comm_time
    assert s.per_pass.sum() <= s.value * d.passes + 1e-6


_MIRROR = {"pass": "pass", "inconclusive": "inconclusive", "regression": "improvement", "improvement": "regression"}


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(50, 150), min_size=1, max_size=12), st.lists(st.floats(50, 150), min_size=1, max_size=12),
       st.sampled_from(["1%", "3%", "+10%", "+2us", "20us"]))
def test_swapping_base_and_new_mirrors_each_check(xa, xb, limit):
    """`gate B A` says what `gate A B` says, mirrored: the same change, noise and allowance."""
    from kerneldiff.core.gate.spec import Check
    from kerneldiff.core.gate.verdict import _judge

    check = Check("kernels", "", parse_limit(limit))
    a, b = _series(xa), _series(xb)
    ab, ba = _judge(check, a, b), _judge(check, b, a)
    assert ba.status == _MIRROR[ab.status]
    assert ba.allowed == ab.allowed and ba.noise == ab.noise
    assert ba.delta == -ab.delta


def test_names_from_traces_are_data_in_markdown():
    """A kernel, GPU or file name is never markup in a pull-request comment: no HTML, no links, no
    mentions, no broken table."""
    from kerneldiff.core.report.gate_report import md_code, md_text

    evil = "<img src=x onerror=alert(1)> [click](http://x) @team **bold** `tick` | pipe"
    code = md_code(evil)
    assert code.startswith("`") and code.endswith("`") and code.count("`") == 2
    assert "@\u200bteam" in code
    text = md_text(evil)
    for raw in ("<img", "[click]", "**bold**", "`tick`", "@team"):
        assert raw not in text
    assert "\n" not in md_text("a\nb")


def test_fingerprint_of_a_big_file_reads_its_ends(tmp_path, monkeypatch):
    from kerneldiff.core.gate import fingerprint as fp

    p = tmp_path / "t.json"
    p.write_bytes(b"x" * 5000)
    whole = fp.fingerprint(str(p))
    assert "whole file" in whole.method
    monkeypatch.setattr(fp, "WHOLE_LIMIT", 1000)
    monkeypatch.setattr(fp, "EDGE", 100)
    ends = fp.fingerprint(str(p))
    assert "first" in ends.method and ends.sha256 != whole.sha256 and ends.size == 5000
    p.write_bytes(b"x" * 4999 + b"y")       # a change at the end is seen
    assert fp.fingerprint(str(p)).sha256 != ends.sha256


def test_control_characters_from_traces_are_shown_not_obeyed():
    from kerneldiff.core.gate.fingerprint import Fingerprint
    from kerneldiff.core.gate.result import Change, GateComparability, GateResult, GateSide
    from kerneldiff.core.report.gate_report import markdown, text

    side = GateSide("p", "gpu\x1b[2J", "", 5, [], 0, Fingerprint("p", 1, "0" * 64, "m"), None)
    r = GateResult("pass", [], GateComparability(), side, side, "all", [],
                   regressions=[Change("kernel", "k\x1b]0;owned\x07\u202e", 1.0, 2.0, 1.0, 100.0)])
    for out in (text(r), markdown(r)):
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out


@settings(max_examples=80, deadline=None)
@given(st.decimals(0, 10**6, places=3, allow_nan=False, allow_infinity=False), st.sampled_from(["%", "us", "ms", "s"]),
       st.booleans())
def test_any_written_limit_reads_back(v, unit, plus):
    lim = parse_limit(("+" if plus else "") + f"{v}{unit}")
    scale = {"%": 1, "us": 1, "ms": 1e3, "s": 1e6}[unit]
    assert lim.kind == ("pct" if unit == "%" else "us")
    assert lim.value == pytest.approx(float(v) * scale)
