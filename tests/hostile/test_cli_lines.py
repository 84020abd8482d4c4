"""Hostile command lines, round three: numbers that are not finite (kernels of 5e-324 µs, `--peak
bf16=inf`, `nan` in a --peaks file), flags out of any sane range, a report that cannot be written
(`> /dev/full`), a file name that is not UTF-8.

The contract is the one README's "Errors and limits" states: bad input gets one line on stderr that
names the file or flag and the problem, exit 2; never a traceback or exit 70; never `inf` or `NaN`
in a report. Most runs call `main()` in this process (fast); the ones that need a real file
descriptor (a full disk behind stdout) run the CLI as a child bounded by CPU time and memory."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import hostile_corpus as hc
from kerneldiff.cli.main import main

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

DEV_FULL = Path("/dev/full")
NON_UTF8 = os.fsdecode(b"bad\xff\xfe.json")     # undecodable bytes: lone surrogates in the str
NON_UTF8_SHOWN = "bad\\udcff\\udcfe.json"       # how every report writes that name


# --- corpus helpers ---------------------------------------------------------------------------

def durations_doc(durs) -> dict:
    """good_doc() with its kernels' durations replaced, in order, by `durs(i)`."""
    doc = hc.good_doc()
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    for i, e in enumerate(kernels):
        e["dur"] = durs(i)
    return doc


HOSTILE_DURATIONS = {
    "all_5e-324": lambda i: 5e-324,                       # the smallest subnormal: every sum subnormal
    "one_1e-320_rest_0": lambda i: 1e-320 if i == 0 else 0.0,
    "all_0": lambda i: 0.0,
    "all_1e-300": lambda i: 1e-300,                       # normal, but rates over it overflow
}


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("r3")
    out = {"good": d / "good.json"}
    out["good"].write_bytes(hc.dumps(hc.good_doc()))
    for name, durs in HOSTILE_DURATIONS.items():
        out[name] = d / f"{name}.json"
        out[name].write_bytes(hc.dumps(durations_doc(durs)))
    return out


@pytest.fixture(scope="module")
def aie_trace(tmp_path_factory) -> Path:
    from kerneldiff.core.aie.synth import AiePlan, write_aie_trace

    p = tmp_path_factory.mktemp("r3aie") / "aie_0.json"
    write_aie_trace(p, AiePlan(rows=2, cols=2, seed=0))
    return p


def strict(text: str | bytes):
    """json.loads that fails on NaN, Infinity and -Infinity."""
    def refuse(c):
        raise AssertionError(f"{c} in JSON output")
    return json.loads(text, parse_constant=refuse)


def one_line(err: str, *needles: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, f"want one line on stderr, got {lines[:6]}"
    assert "Traceback" not in err and "internal error" not in err, err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def refused(capsys, argv: list[str], *needles: str) -> str:
    """`kerneldiff ARGV` is refused: exit 2, nothing on stdout, one line on stderr holding `needles`.
    Parser errors leave through SystemExit(2), later ones through main's return value."""
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    assert rc == 2, (rc, err[-500:])
    assert out == ""
    return one_line(err, *needles)


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (60, 60))
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def cli(*argv: str, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "kerneldiff.cli", *argv], env=env, stdout=stdout,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, preexec_fn=_limits)


# --- 1. non-finite numbers never reach a report -----------------------------------------------

@pytest.mark.parametrize("name", list(HOSTILE_DURATIONS))
@pytest.mark.parametrize("order", ["ab", "ba"])
def test_hostile_durations_give_strict_json_and_no_inf(traces, tmp_path, capsys, name, order):
    a, b = (traces["good"], traces[name]) if order == "ab" else (traces[name], traces["good"])
    out = tmp_path / "r.json"
    assert main(["compare", str(a), str(b), "--format", "json", "-o", str(out)]) == 0
    doc = strict(out.read_text())
    assert doc["ratio"] is None or math.isfinite(doc["ratio"])
    # the per-table JSON and every CSV table: ratios over nothing are missing, never inf or nan
    assert main(["compare", str(a), str(b), "--format", "json", "--table", "operations"]) == 0
    rows = strict(capsys.readouterr().out)
    assert all(r["ratio_a_over_b"] is None or math.isfinite(r["ratio_a_over_b"]) for r in rows)
    assert main(["compare", str(a), str(b), "--format", "csv", "-o", str(tmp_path / "t.csv")]) == 0
    for f in tmp_path.glob("t.*.csv"):
        with open(f, newline="", encoding="utf-8") as fh:
            cells = [c.strip().lower() for row in csv.reader(fh) for c in row]
        assert not {"inf", "-inf", "nan"} & set(cells), f.name
    assert main(["compare", str(a), str(b), "--width", "200"]) == 0
    text = capsys.readouterr().out
    assert " inf" not in text and "nan×" not in text and "inf×" not in text


def test_subnormal_side_has_no_ratio(traces, capsys):
    """B's kernel time is 1e-320 µs: A/B would be 1.9e322 or inf; it is missing instead."""
    assert main(["compare", str(traces["good"]), str(traces["one_1e-320_rest_0"]), "--format", "json"]) == 0
    doc = strict(capsys.readouterr().out)
    assert doc["ratio"] is None
    assert all(o["ratio"] is None for o in doc["operations"] if o["b"]["total_us"] < 1e-300)


def test_hostile_durations_with_shapes_give_no_inf_rates(tmp_path, capsys):
    """The throughput figures (TFLOP/s, % of peak, roofline) divide by kernel time too."""
    from kerneldiff.core.synth.pair import write_pair

    a, b = write_pair(tmp_path, 0, layers=2, steps=3, gzip=False)[:2]
    doc = json.loads(Path(b).read_text())
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["dur"] = 5e-324
    Path(b).write_text(json.dumps(doc))
    for x, y in ((a, b), (b, a)):
        assert main(["compare", str(x), str(y), "--format", "json"]) == 0
        strict(capsys.readouterr().out)


def test_report_json_turns_any_non_finite_value_into_null(traces):
    """The one mechanism behind every JSON writer: whatever a future computation lets through
    (inf, -inf, NaN, numpy's), a report built from hostile durations stays strict JSON."""
    import numpy as np

    from kerneldiff.core.orchestration import load
    from kerneldiff.core.compare.engine import compare
    from kerneldiff.core.compare.side_timeline import PassTimeline, SideTimeline
    from kerneldiff.core.numbers import strict_json

    cmp = compare(load(traces["good"], use_cache=False), load(traces["all_5e-324"], use_cache=False))
    cmp.ratio = float("inf")
    cmp.gap_us = np.float64("-inf")
    cmp.operations[0].a.mean_us = float("nan")
    cmp.a.timeline = SideTimeline(span_us=np.float32("inf"), passes=[PassTimeline(pass_=0, span_us=float("nan"))])
    cmp.warnings.append(NON_UTF8)
    doc = strict(strict_json(cmp.to_dict()))
    assert doc["ratio"] is None and doc["gap_us"] is None and doc["operations"][0]["a"]["mean_us"] is None
    assert doc["a"]["timeline"]["span_us"] is None and doc["a"]["timeline"]["passes"][0]["span_us"] is None
    assert doc["warnings"][-1] == NON_UTF8_SHOWN
    assert doc["b"]["kernels"] == hc.GOOD_KERNELS


# --- 1b, 6. peaks: non-finite or absurd figures are refused, exit 2, one line -----------------

@pytest.mark.parametrize("item", ["bf16=inf", "hbm=1e400", "bf16=nan", "fp8=-inf", "a.bf16=0", "b.hbm=-5",
                                  "bf16=1e-320", "bf16=1e9", "hbm=1e5", "bf16=abc", "c.bf16=1", "nope=1",
                                  "gpu=nope", "bf16"])
def test_bad_peak_flag_is_one_line_exit_2(traces, capsys, item):
    g = str(traces["good"])
    key = item.partition("=")[0]
    refused(capsys, ["compare", g, g, "--peak", item], "kerneldiff: --peak", key)


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e400", "0", "-1", "1e-320", "1e7", '"900"', "true"])
def test_bad_peaks_file_value_names_file_and_key(traces, tmp_path, capsys, value):
    f = tmp_path / "mine.toml"
    f.write_text(f'[[gpu]]\nkey = "mine"\nmatch = "h100"\nbf16 = 900\nhbm = {value}\n')
    g = str(traces["good"])
    refused(capsys, ["compare", g, g, "--peaks", str(f)], f"kerneldiff: {f}", "(mine)", "hbm")


def test_peaks_file_errors_exit_2(traces, tmp_path, capsys):
    g = str(traces["good"])
    refused(capsys, ["compare", g, g, "--peaks", str(tmp_path / "absent.toml")], "absent.toml", "no such file")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[gpu]\n")
    refused(capsys, ["compare", g, g, "--peaks", str(bad)], "bad.toml", "not valid TOML")


def test_sane_peak_overrides_still_apply(traces, capsys):
    g = str(traces["good"])
    assert main(["compare", g, g, "--peak", "bf16=1234.5", "--peak", "b.hbm=3.5", "--format", "json"]) == 0
    peaks = strict(capsys.readouterr().out)["peaks"]
    assert peaks["a"]["tflops"]["bf16"] == 1234.5 and peaks["b"]["hbm_tbps"] == 3.5


# --- 5, 6. fusion parameters and --width ------------------------------------------------------

@pytest.mark.parametrize("item", ["dispatch_ns=nan", "dispatch_ns=inf", "dispatch_ns=-1", "roundtrip_ns=1e400",
                                  "memory_bw=0", "memory_bw=-5", "memory_bw=nan", "readback_bw=1e-320",
                                  "achieved_fraction=0", "achieved_fraction=1.5", "min_gain_ns=inf",
                                  "unified_memory=maybe", "unified_memory=2", "dispatch_ns=fast", "bogus=1",
                                  "dispatch_ns"])
def test_bad_fusion_param_is_one_line_exit_2(traces, capsys, item):
    g = str(traces["good"])
    refused(capsys, ["compare", g, g, "--fusion-param", item], "kerneldiff: --fusion-param", item.partition("=")[0])


def test_sane_fusion_params_are_taken(traces, capsys):
    g = str(traces["good"])
    argv = ["compare", g, g, "--format", "json", "--fusion-param", "unified_memory=true",
            "--fusion-param", "dispatch_ns=0", "--fusion-param", "memory_bw=5300", "--fusion-param", "achieved_fraction=1"]
    assert main(argv) == 0
    strict(capsys.readouterr().out)


def test_fusion_params_are_checked_by_their_meaning():
    from kerneldiff.core.compare.fusion_model import check_overrides, params_for

    assert check_overrides({"unified_memory": "no", "memory_bw": "0.5", "dispatch_ns": 0}) == \
        {"unified_memory": False, "memory_bw": 0.5, "dispatch_ns": 0.0}
    with pytest.raises(ValueError, match="memory_bw"):
        params_for("NVIDIA H100", {"memory_bw": 0.0})
    with pytest.raises(ValueError, match="dispatch_ns.*finite"):
        params_for("NVIDIA H100", {"dispatch_ns": float("nan")})


@pytest.mark.parametrize("width", ["-5", "0", "1", "39", "10001", "wide", "1e3"])
def test_width_out_of_range_is_refused(traces, capsys, width):
    g = str(traces["good"])
    refused(capsys, ["compare", g, g, "--width", width], "kerneldiff compare: argument --width")


def test_narrowest_width_fits(traces, capsys):
    g = str(traces["good"])
    assert main(["compare", g, g, "--width", "40"]) == 0
    out = capsys.readouterr().out
    assert out and max(len(line) for line in out.splitlines()) <= 40


def test_parser_errors_are_one_line(capsys):
    refused(capsys, ["compare", "only-one.json"], "kerneldiff compare:", "required")
    refused(capsys, ["compare", "a.json", "b.json", "--format", "xml"], "kerneldiff compare:", "--format")


# --- 4. AIE flags -----------------------------------------------------------------------------

BIG = "99999999999999999999999"


@pytest.mark.parametrize("flags,what", [
    (["--M", BIG, "--K", "4", "--N", "4", "--rows", "1", "--cols", "1"], "--M"),
    (["--M", "4", "--K", "4", "--N", str(2**40 + 1), "--rows", "1", "--cols", "1"], "--N"),
    (["--M", "4", "--K", "4", "--N", "4", "--rows", "99999999999999999999", "--cols", "1"], "--rows"),
    (["--M", "4", "--K", "4", "--N", "4", "--rows", "1", "--cols", "0"], "--cols"),
    (["--rows-b", BIG], "--rows-b"),
    (["--warmup", BIG], "--warmup"),
    (["--iterations", "-1"], "--iterations"),
    (["--peak-macs", BIG], "--peak-macs"),
    (["--clock-mhz", "inf"], "--clock-mhz"),
    (["--clock-mhz", "nan"], "--clock-mhz"),
    (["--clock-mhz", "0"], "--clock-mhz"),
    (["--clock-mhz", "1e400"], "--clock-mhz"),
    (["--clock-mhz", "5e-324"], "--clock-mhz"),
    (["--lock-stall-factor", "inf"], "--lock-stall-factor"),
    (["--outlier-hi", "nan"], "--outlier-hi"),
    (["--dup-gap", "inf"], "--dup-gap"),
])
def test_aie_flags_out_of_range_are_refused(aie_trace, tmp_path, capsys, flags, what):
    out = tmp_path / "out.json"
    refused(capsys, ["aie", str(aie_trace), *flags, "--json", str(out)], "kerneldiff aie:", what)
    assert not out.exists()


def test_aie_largest_accepted_shape_writes_strict_json(aie_trace, tmp_path, capsys):
    out = tmp_path / "out.json"
    big = str(2**40)
    assert main(["aie", str(aie_trace), "--M", big, "--K", big, "--N", big, "--rows", str(2**31),
                 "--cols", str(2**31), "--json", str(out)]) == 0
    capsys.readouterr()
    doc = strict(out.read_bytes())
    assert doc["shape"]["M"] == 2**40 and doc["shape"]["cores"] == 2**62


def test_explorer_launcher_shares_the_aie_bounds(capsys):
    refused(capsys, ["a.json", "--rows", BIG], "kerneldiff: argument --rows")
    refused(capsys, ["a.json", "--clock-mhz", "inf"], "kerneldiff: argument --clock-mhz")


def test_synth_aie_array_is_bounded(tmp_path, capsys):
    refused(capsys, ["synth", str(tmp_path), "--aie", "--aie-rows", "99999999999999999999"],
            "kerneldiff synth: argument --aie-rows")


# --- 2. a report that cannot be written -------------------------------------------------------

class _Full(io.StringIO):
    """A stdout whose disk is full (as `> /dev/full`), without a child process."""

    def write(self, s):
        raise OSError(28, "No space left on device")

    def flush(self):
        raise OSError(28, "No space left on device")


@pytest.mark.parametrize("argv", [
    ["info", "{good}"], ["info", "{good}", "--json"], ["info", "{good}", "--probe-only"],
    ["compare", "{good}", "{good}"], ["compare", "{good}", "{good}", "--format", "json"],
    ["compare", "{good}", "{good}", "--format", "csv"],
    ["compare", "{good}", "{good}", "--format", "json", "--table", "layers"],
    ["aie", "{aie}"], ["aie", "{aie}", "--json", "-"],
], ids=lambda a: " ".join(a[:1] + a[2:]).replace("{good}", "").replace("{aie}", ""))
def test_full_stdout_is_one_line_exit_2(traces, aie_trace, monkeypatch, capsys, argv):
    argv = [a.format(good=traces["good"], aie=aie_trace) for a in argv]
    monkeypatch.setattr(sys, "stdout", _Full())
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert one_line(err) == "kerneldiff: stdout: cannot write: No space left on device"


@pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full")
@pytest.mark.parametrize("argv", [["info", "{good}"], ["compare", "{good}", "{good}", "--format", "json"]])
def test_dev_full_as_stdout(traces, argv):
    """The real thing: buffered output fails at the last flush; still one line, exit 2, and no
    'Exception ignored' from the interpreter's own flush at exit."""
    with open(DEV_FULL, "w") as full:
        p = cli(*[a.format(good=traces["good"]) for a in argv], stdout=full)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 2, err
    assert one_line(err) == "kerneldiff: stdout: cannot write: No space left on device"


@pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full")
@pytest.mark.parametrize("fmt", [["--format", "text"], ["--format", "json"], ["--format", "csv", "--table", "layers"]])
def test_dev_full_as_output_file_is_named(traces, capsys, fmt):
    g = str(traces["good"])
    refused(capsys, ["compare", g, g, *fmt, "-o", str(DEV_FULL)], f"kerneldiff: {DEV_FULL}: cannot write")


@pytest.mark.parametrize("kind", ["fifo", "directory"])
@pytest.mark.parametrize("table", [[], ["--table", "all"]])
def test_csv_tables_beside_a_non_regular_output_are_refused(traces, tmp_path, capsys, kind, table):
    """-o names the stem of one file per table: next to a device, FIFO or directory they would land
    in /dev or beside the directory, so nothing is written."""
    target = tmp_path / "target"
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    before = sorted(tmp_path.iterdir())
    g = str(traces["good"])
    refused(capsys, ["compare", g, g, "--format", "csv", *table, "-o", str(target)],
            f"kerneldiff: {target}: is a", "--table NAME")
    assert sorted(tmp_path.iterdir()) == before


# --- 3. file names that are not UTF-8 ---------------------------------------------------------

@pytest.fixture
def non_utf8(traces, aie_trace, tmp_path):
    try:
        gpu, aie = tmp_path / NON_UTF8, tmp_path / ("aie_" + NON_UTF8)
        gpu.write_bytes(traces["good"].read_bytes())
        aie.write_bytes(aie_trace.read_bytes())
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses a file name that is not UTF-8")
    return gpu, aie


def _utf8(path: Path) -> str:
    return path.read_bytes().decode("utf-8")    # strict: raises on anything that is not UTF-8


@pytest.mark.parametrize("table", [[], ["--table", "operations"], ["--table", "all"]])
def test_non_utf8_name_in_csv(non_utf8, traces, tmp_path, capsys, table):
    gpu, _ = non_utf8
    out = tmp_path / "out.csv"
    assert main(["compare", str(gpu), str(traces["good"]), "--format", "csv", *table, "-o", str(out)]) == 0
    ops = out if table == ["--table", "operations"] else tmp_path / "out.operations.csv"
    assert _utf8(ops).splitlines()[0].startswith("category,phase,a_count,b_count")   # stable keys (issue 30)
    for f in tmp_path.glob("out*.csv"):
        _utf8(f)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert main(["compare", str(gpu), str(traces["good"]), "--format", "csv", "--table", "peaks"]) == 0
    assert NON_UTF8_SHOWN in capsys.readouterr().out     # the peaks table names the sides


def test_non_utf8_name_in_json_and_text(non_utf8, traces, tmp_path, capsys):
    gpu, aie = non_utf8
    g = str(traces["good"])
    js = tmp_path / "r.json"
    assert main(["compare", str(gpu), g, "--format", "json", "-o", str(js)]) == 0
    assert strict(_utf8(js))["a"]["path"].endswith(NON_UTF8_SHOWN)
    assert main(["compare", str(gpu), g, "--format", "json"]) == 0
    assert strict(capsys.readouterr().out)["a"]["label"] == NON_UTF8_SHOWN
    txt = tmp_path / "r.txt"
    assert main(["compare", str(gpu), g, "-o", str(txt)]) == 0
    assert NON_UTF8_SHOWN in _utf8(txt)
    assert main(["info", str(gpu), "--json"]) == 0
    assert strict(capsys.readouterr().out)["probe"]["path"].endswith(NON_UTF8_SHOWN)
    aie_js = tmp_path / "aie.json"
    assert main(["aie", str(aie), "--json", str(aie_js)]) == 0
    assert strict(_utf8(aie_js))["path"].endswith("aie_" + NON_UTF8_SHOWN)
    out = capsys.readouterr().out
    assert "aie_" + NON_UTF8_SHOWN in out
    out.encode("utf-8")


@pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full")
def test_aie_json_to_a_full_disk_is_named(aie_trace, capsys):
    refused(capsys, ["aie", str(aie_trace), "--json", str(DEV_FULL)], f"kerneldiff: {DEV_FULL}: cannot write: ")


@pytest.mark.parametrize("argv, needle", [
    (["--layers", "99999999999999999999"], "--layers"),       # ran until killed
    (["--steps", "-1"], "--steps"),
    (["--tp", "0"], "--tp"),
    (["--seed", "-5"], "--seed"),
    (["--layers", "512", "--steps", "100000"], "use --size"),
    (["--size", "inf"], "size must be"),                      # crashed (int(inf))
    (["--size", "nan"], "size must be"),
    (["--size", "1e400GB"], "size must be"),
])
def test_synth_sizes_are_bounded(capsys, tmp_path, argv, needle):
    refused(capsys, ["synth", str(tmp_path / "out"), *argv], needle)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("columns", ["0", "1", "-3", "abc"])
def test_an_unusable_terminal_width_still_prints_the_report(tmp_path, columns):
    """COLUMNS=0 printed nothing at all, with exit 0."""
    g = tmp_path / "good.json"
    g.write_text(json.dumps(hc.good_doc()))
    env = {**os.environ, "COLUMNS": columns}
    r = subprocess.run([sys.executable, "-m", "kerneldiff.cli", "compare", str(g), str(g), "--no-cache"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Operations" in r.stdout or "operation" in r.stdout
    assert len(r.stdout.splitlines()) > 10


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_an_output_encoding_that_cannot_hold_a_character_escapes_it(tmp_path, encoding):
    """PYTHONIOENCODING=ascii crashed on 'µs' (exit 70); such characters are now visible escapes."""
    g = tmp_path / "good.json"
    g.write_text(json.dumps(hc.good_doc(device_name="GPU \u2603 \u00b5")))
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    for cmd in (["info", str(g)], ["compare", str(g), str(g), "--no-cache"]):
        r = subprocess.run([sys.executable, "-m", "kerneldiff.cli", *cmd], capture_output=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        out = r.stdout.decode(encoding)
        assert "\\u2603" in out or cmd[0] == "compare"
        assert "\\xb5s" in out or "\u00b5s" in out       # µs: escaped where the encoding lacks it
    r = subprocess.run([sys.executable, "-m", "kerneldiff.cli", "info", str(tmp_path / "absent\u2603.json")],
                       capture_output=True, env=env, timeout=300)
    assert r.returncode == 2 and b"\\u2603" in r.stderr and len(r.stderr.splitlines()) == 1


def test_the_command_ends_without_teardown_yet_writes_everything(tmp_path):
    """`kerneldiff compare` ends with os._exit after a headless subcommand (the interpreter's
    teardown of a loaded pair was ~10% of the run): the report is still whole, the exit code
    kept, and a closed or full stdout still gives one line and exit 2."""
    import subprocess
    import sys

    from kerneldiff.core.demo import DEMO_A, DEMO_B

    cmd = [sys.executable, "-m", "kerneldiff.cli", "compare", str(DEMO_A), str(DEMO_B), "--format", "json"]
    r = subprocess.run(cmd, capture_output=True, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["a"]["key"] == "a"
    r = subprocess.run(cmd[:3] + [str(DEMO_A), str(tmp_path / "missing.json")], capture_output=True, timeout=120)
    assert r.returncode == 2 and r.stderr.decode().count("\n") == 1
    with open("/dev/full", "w") as full:
        r = subprocess.run(cmd, stdout=full, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 2 and r.stderr.decode().count("\n") == 1 and "Traceback" not in r.stderr.decode()


_HUGEPAGES = ("import kerneldiff.cli.main\ntry:\n    import numpy._core.multiarray as m\nexcept ImportError:  # numpy 1.x\n"
              "    import numpy.core.multiarray as m\nprint(m._get_madvise_hugepage())")


@pytest.mark.parametrize("var, code, ours, theirs, seen", [
    # OpenBLAS's thread pool held to one thread (no linear algebra here, and its spinning threads
    # took CPU from the loads)
    ("OPENBLAS_NUM_THREADS", "import kerneldiff.cli.main, numpy, os; print(os.environ['OPENBLAS_NUM_THREADS'])",
     "1", "3", "3"),
    # numpy's transparent-huge-page requests off (allocations stalled on memory compaction:
    # building a 1 GB model 0.14-0.27 s with them, 0.16-0.18 s without)
    ("NUMPY_MADVISE_HUGEPAGE", _HUGEPAGES, "False", "1", "True"),
], ids=["blas-threads", "huge-pages"])
def test_the_commands_numpy_settings_yield_to_the_users(var, code, ours, theirs, seen):
    """The command sets these before numpy loads; a user's own setting is kept."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != var}
    for value, expected in ((None, ours), (theirs, seen)):
        if value is not None:
            env[var] = value
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == expected, out.stderr[-500:]
