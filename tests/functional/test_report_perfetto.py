"""`compare --format perfetto`: both traces in one Chrome-trace file, read back: each side's kernels
(count and summed time) are the originals of the chosen passes, B's passes start with A's, every flow
joins two kernels the layer alignment paired, and the args carry the pair's ratio and gap."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from kerneldiff.cli.main import main
from kerneldiff.core.analysis.cut_work import compared_mask
from kerneldiff.core.compare.pass_pairs import parse_passes, pass_steps
from kerneldiff.core.demo import DEMO_A, DEMO_B
from kerneldiff.core.report.perfetto import PASS_TID, perfetto_trace, read_back
from kerneldiff.core.session import Session

from conftest import real_trace

A, B = str(DEMO_A), str(DEMO_B)


def _session(paths, models=None) -> Session:
    s = Session(list(paths), use_cache=False)
    if models:
        s.models = [models[p] for p in paths]
    else:
        s.load_all()
    return s


def _originals(models, key: str, phase: str, numbers: list[int] | None) -> tuple[int, float]:
    """Kernel count and summed duration of the passes numbered `numbers` on one side, straight from the
    model's columns: a pass's number is A's step index, B's pass is the one at the same place."""
    model = models["ab".index(key)]
    k = model.kernels
    mask = compared_mask(model, phase)
    if numbers:
        sa, sb = (pass_steps(m, phase) for m in models)
        every = [sa[i] if i < len(sa) else sb[i] for i in range(max(len(sa), len(sb)))]
        mine = sa if key == "a" else sb
        mask &= np.isin(k.step, [mine[i] for i, n in enumerate(every) if n in numbers and i < len(mine)])
    return int(mask.sum()), float(np.maximum(k.dur[mask], 0).sum())


def _check(session, cmp, doc, numbers):
    back = read_back(doc)
    names = doc["otherData"]
    for key in "ab":
        n, t = _originals(session.models, key, cmp.phase, numbers)
        got_n, got_t = back[names[key]]
        assert got_n == n
        assert got_t == pytest.approx(t, rel=1e-9, abs=1e-3 * max(n, 1))
    ev = doc["traceEvents"]
    # processes named by label (and GPU)
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs[1].startswith(f"A: {cmp.a.label}") and procs[2].startswith(f"B: {cmp.b.label}")
    # B's pass n starts where A's pass n starts
    starts = {}
    for e in ev:
        if e["ph"] == "X" and e["tid"] == PASS_TID:
            starts.setdefault(e["args"]["pass"], {})[e["pid"]] = e["ts"]
    for number, at in starts.items():
        if len(at) == 2:
            assert at[1] == pytest.approx(at[2], abs=2e-3), number
    # every pair is one flow: two kernel slices with one bind_id, one of A and one of B, of one layer
    # and pass; the arrow leaves the earlier one (Perfetto drops a flow that ends before it starts)
    ends: dict[int, dict[str, dict]] = {}
    for e in ev:
        if e["ph"] == "X" and "bind_id" in e:
            assert e["flow_out"] is True if "flow_out" in e else e["flow_in"] is True
            ends.setdefault(e["bind_id"], {})["out" if e.get("flow_out") else "in"] = e
    assert len(ends) == names["kernel_pairs"] and not any(e["ph"] in "sft" for e in ev)
    for i, pair in ends.items():
        out, into = pair["out"], pair["in"]
        assert {out["pid"], into["pid"]} == {1, 2} and out["ts"] <= into["ts"]
        assert out["ts"] < into["ts"] or out["pid"] == 1
        assert out["args"]["pair"] == into["args"]["pair"] == i
        assert out["args"]["layer"] == into["args"]["layer"] >= 0 and out["args"]["pass"] == into["args"]["pass"]
        assert "pair_ratio_a_over_b" in out["args"] and "pair_gap_us_a_minus_b" in into["args"]
    return ends


def test_demo_every_pass_and_a_range_read_back_as_the_originals(demo_models):
    session = _session([A, B], demo_models)
    cmp = session.compare()
    whole = perfetto_trace(session.pass_pairs(cmp))
    flows = _check(session, cmp, whole, None)
    assert len(flows) > 100
    sub = perfetto_trace(session.pass_pairs(cmp, [2, 3]))
    _check(session, cmp, sub, [2, 3])
    assert {e["args"]["pass"] for e in sub["traceEvents"] if e["ph"] == "X"} == {2, 3}
    decode = session.compare("decode")
    first = session.pass_numbers("decode")[0]
    _check(session, decode, perfetto_trace(session.pass_pairs(decode, [first])), [first])


def test_pairs_follow_the_layer_alignment(demo_models):
    """Each pair is the aligned position of its layer: the two kernels carry the pair's names and
    its mean ratio and gap; swapping the traces gives as many pairs, mirrored."""
    session = _session([A, B], demo_models)
    cmp = session.compare()
    pp = session.pass_pairs(cmp)
    assert pp.matches
    for m in pp.matches[:500]:
        pair = cmp.alignment(m.layer).pairs[m.position]
        assert (pp.a.names[m.a], pp.b.names[m.b]) == (pair.a_name, pair.b_name)
        assert (m.ratio, m.gap_us) == (pair.ratio, pair.gap_us)
        assert pp.a.layer[m.a] == pp.b.layer[m.b] == m.layer
    back = _session([B, A], demo_models)
    assert len(back.pass_pairs(back.compare()).matches) == len(pp.matches)


def test_parse_passes_says_what_is_wrong():
    held = [0, 1, 2, 3, 4]
    assert parse_passes("3", held) == [3] and parse_passes(" 2-4 ", held) == [2, 3, 4]
    assert parse_passes("2-9", [1, 3, 5, 7]) == [3, 5, 7]         # a decode filter's numbers skip the prefill
    for bad, words in (("5", "passes 0-4"), ("4-2", "passes 0-4"), ("x", "N or N-M"), ("1-", "N or N-M")):
        with pytest.raises(ValueError, match=words):
            parse_passes(bad, held)
    with pytest.raises(ValueError, match="passes 1, 3, 5"):
        parse_passes("9", [1, 3, 5])
    with pytest.raises(ValueError, match="neither"):
        parse_passes("1", [])


@pytest.mark.slow
def test_cli_writes_plain_and_gzipped_and_refuses_bad_passes(tmp_path, capsys):
    plain, packed = tmp_path / "pair.json", tmp_path / "pair.json.gz"
    assert main(["compare", A, B, "--format", "perfetto", "--pass", "2-3", "-o", str(plain), "--no-cache"]) == 0
    assert main(["compare", A, B, "--format", "perfetto", "--pass", "2-3", "-o", str(packed), "--no-cache"]) == 0
    assert json.loads(plain.read_text()) == json.loads(gzip.decompress(packed.read_bytes()))
    capsys.readouterr()
    for bad in ("6", "99", "two", "3-1"):
        assert main(["compare", A, B, "--format", "perfetto", "--pass", bad, "--no-cache"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("kerneldiff: ") and "\n" not in err and "--pass" in err


@pytest.mark.slow
def test_real_llama_pair_h100_h200_every_pass_and_one(tmp_path):
    """48 passes (1 prefill, 47 decode) on each side: all of them and pass 29 read back exactly; the
    same kernels run on both GPUs, so nearly every flow joins two kernels of one name."""
    session = _session([str(real_trace("h100_llama_eager_sdpa.json.gz")),
                        str(real_trace("h200_llama_eager_sdpa.json.gz"))])
    cmp = session.compare()
    pp = session.pass_pairs(cmp)
    assert len(pp.a.passes) == len(pp.b.passes) == 48
    doc = perfetto_trace(pp)
    flows = _check(session, cmp, doc, None)
    # the prefill pass runs another kernel sequence than the decode passes' aligned one: its 16
    # layer-passes get no pairs; every decode layer-pass does
    assert pp.unpaired_groups == 16
    same = sum(pp.a.names[m.a] == pp.b.names[m.b] for m in pp.matches)
    assert same / len(pp.matches) > 0.95 and len(flows) == len(pp.matches) > 25_000
    _check(session, cmp, perfetto_trace(session.pass_pairs(cmp, [29])), [29])
    _check(session, cmp, perfetto_trace(session.pass_pairs(cmp, [0, 1])), [0, 1])
    decode = session.compare("decode")        # numbers stay those of all passes: decode holds 1-47
    assert session.pass_numbers("decode") == list(range(1, 48))
    _check(session, decode, perfetto_trace(session.pass_pairs(decode, [1, 47])), [1, 47])


def test_real_cross_vendor_pair_reads_back():
    session = _session([str(real_trace("mi300x_qwen1.5-0.5b_hf.json.gz")),
                        str(real_trace("h100_qwen1.5-0.5b_hf.json.gz"))])
    cmp = session.compare()
    flows = _check(session, cmp, perfetto_trace(session.pass_pairs(cmp, [0])), [0])
    assert len(flows) > 100
    _check(session, cmp, perfetto_trace(session.pass_pairs(cmp)), None)


def test_the_streamed_file_is_the_document(demo_models):
    """write_perfetto (an event at a time, what the CLI and the explorer write) gives the document
    perfetto_trace builds, strict JSON, ASCII."""
    import io

    from kerneldiff.core.report.perfetto import write_perfetto

    session = _session([A, B], demo_models)
    cmp = session.compare()
    buf = io.BytesIO()
    write_perfetto(session.pass_pairs(cmp), buf)
    data = buf.getvalue()
    assert data.isascii() and json.loads(data) == json.loads(json.dumps(perfetto_trace(session.pass_pairs(cmp))))


@pytest.mark.slow
def test_passes_one_side_lacks(tmp_path):
    """1 pass against 48: passes 3-6 exist on B only; A writes nothing for them, B's read back whole
    and start at 0 (there is no A pass to line up with); the HTML says A has no such pass."""
    session = _session([str(real_trace("mi300x_qwen1.5-0.5b_hf.json.gz")),
                        str(real_trace("h100_llama_eager_sdpa.json.gz"))])
    cmp = session.compare()
    pp = session.pass_pairs(cmp, [3, 4, 5, 6])
    assert len(pp.a) == 0 and [p.number for p in pp.b.passes] == [3, 4, 5, 6] and not pp.matches
    doc = perfetto_trace(pp)
    _check(session, cmp, doc, [3, 4, 5, 6])
    assert min(e["ts"] for e in doc["traceEvents"] if e["ph"] == "X") == 0
    out = tmp_path / "r.html"
    assert main(["compare", *session.paths, "--format", "html", "--pass", "5", "-o", str(out)]) == 0
    assert "no such pass" in out.read_text(encoding="utf-8")
