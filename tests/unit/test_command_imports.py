"""What a command imports: nothing it does not use. Each command runs in a fresh interpreter through
the real entry point and lists `sys.modules` at exit; a UI toolkit, a cluster scheduler or another
command's modules in that list are start-up time every run pays for nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT.parent / "shared" / "traces" / "a100_triton_example.json.gz"

# run `kerneldiff ARGV` as the console script does, then print the modules it left imported
LIST = """
import atexit, json, os, sys
def dump():
    sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
    sys.stderr.flush()
os._exit = lambda rc, _exit=os._exit: (dump(), _exit(rc))   # headless commands end with os._exit
atexit.register(dump)
sys.argv = ["kerneldiff", *sys.argv[1:]]
from kerneldiff.cli.main import entry
entry()
"""

# never needed headless: the explorer's toolkit, the cluster scheduler, the test tools, pandas
HEAVY = ("textual", "kerneldiff.tui", "distributed", "dask", "pandas", "pytest", "hypothesis", "tornado")


def modules(*argv: str, without_pathlib: bool = False) -> set[str]:
    """without_pathlib: run with pathlib dropped first (an editable install's path hook imports it
    itself), to see whether the command imports it again."""
    code = LIST if not without_pathlib else LIST.replace(
        "from kerneldiff.cli.main import entry", "sys.modules.pop('pathlib', None)\nfrom kerneldiff.cli.main import entry")
    p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, timeout=120)
    line = [x for x in p.stderr.splitlines() if x.startswith("MODULES ")]
    assert line, p.stderr[-2000:]
    return set(json.loads(line[-1][len("MODULES "):]))


def heavy(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if m.split(".")[0] in HEAVY or m.startswith("kerneldiff.tui"))


def test_version_imports_no_analysis_and_no_argparse():
    mods = modules("--version")
    assert not heavy(mods)
    ours = sorted(m for m in mods if m.startswith("kerneldiff."))
    assert ours == ["kerneldiff.cli", "kerneldiff.cli.main"], ours
    assert "numpy" not in mods and "argparse" not in mods and "importlib.metadata" not in mods
    assert "threading" not in mods   # the explorer's way out joins threads: none can run here


@pytest.mark.skipif(not TINY.exists(), reason="needs ../shared/traces")
@pytest.mark.parametrize("json_out", [False, True])
def test_a_bare_info_imports_no_ui_no_cluster_no_other_command(json_out):
    mods = modules("info", "--no-cache", str(TINY), *(["--json"] if json_out else []))
    assert "kerneldiff.core.session" in mods   # the command did run
    assert not heavy(mods), heavy(mods)
    other = ("kerneldiff.cli.compare", "kerneldiff.cli.gate", "kerneldiff.cli.synth", "kerneldiff.cli.aie",
             "kerneldiff.core.compare", "kerneldiff.core.gate", "kerneldiff.core.report.html",
             "kerneldiff.core.ranks", "kerneldiff.core.synth")
    assert not sorted(m for m in mods if m.startswith(other)), sorted(m for m in mods if m.startswith(other))
    # np.unique imports numpy.ma on first use (~15 ms): the info path uses numbers.distinct instead
    assert "numpy.ma" not in mods
    # msgspec is imported without it (core/msgspec_import.py: ~4 ms)
    assert "msgspec" in mods and "typing_extensions" not in mods
    # work and FLOPs are the comparison's: eager attention's operator names live with its marking
    assert "kerneldiff.core.analysis.flops" not in mods
    if json_out:   # JSON is written without Rich
        assert not sorted(m for m in mods if m.split(".")[0] == "rich")
    else:   # text to a pipe is laid out by cli/plain.py: Rich's cell widths, not its console (~16 ms)
        assert "kerneldiff.cli.plain" in mods
        assert not {"rich.console", "rich.table", "rich.text", "rich.segment"} & mods, sorted(mods)


def test_the_command_script_imports_only_the_entry_point():
    # pip's console-script wrapper imports `re` (~8 ms, half of `python -c pass`) before kerneldiff:
    # the command is a plain script (setup.py) whose only import is the entry point
    import ast

    tree = ast.parse((ROOT / "bin" / "kerneldiff").read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [(n.module, [a.name for a in n.names]) for n in imports] == [("kerneldiff.cli.main", ["entry"])]


@pytest.mark.parametrize("how", ["script", "module"])
def test_the_installed_command_and_python_m_kerneldiff_run(how):
    script = Path(sys.executable).parent / "kerneldiff"
    if how == "script" and not script.exists():
        pytest.skip("no installed kerneldiff command beside this interpreter")
    argv = [str(script)] if how == "script" else [sys.executable, "-m", "kerneldiff"]
    p = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("kerneldiff "), p.stderr[-2000:]
    if how == "script":   # the plain script, not a console-script wrapper
        assert "import re" not in [line.strip() for line in script.read_text().splitlines()]


@pytest.mark.skipif(not TINY.exists(), reason="needs ../shared/traces")
def test_a_bare_info_imports_no_pathlib_and_no_hashlib_of_its_own():
    # pathlib (with urllib and ipaddress) and hashlib (OpenSSL) were ~8 ms of a 1-kernel info: the
    # registry's cache is found with os.path and keyed by CPython's own SHA-256.
    # the first run on a fresh machine parses the shipped registry and stores it (pathlib, tomllib);
    # every later run finds it cached, and that run is the one measured
    modules("info", "--no-cache", "--json", str(TINY))
    mods = modules("info", "--no-cache", "--json", str(TINY), without_pathlib=True)
    assert "pathlib" not in mods and "hashlib" not in mods and "shutil" not in mods


def test_the_comparison_screen_imports_no_numpy():
    """A pair compared before opens on its stored comparison, read without numpy: the screen that
    shows it must not import numpy either (~0.1 s before its first frame when it did)."""
    code = ("import sys; import kerneldiff.tui.app, kerneldiff.tui.screens.main; "
            "print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith('numpy.')))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "[]"


def test_msgspec_without_typing_extensions_reads_as_with_it():
    """msgspec imported the way kerneldiff imports it decodes kerneldiff's structs as msgspec
    imported with typing_extensions does, and typing_extensions can still be imported after it."""
    code = """
import sys
first = sys.argv[1] == "ours"
if first:
    from kerneldiff.core.msgspec_import import msgspec
    assert "typing_extensions" not in sys.modules
import typing_extensions   # still importable (Textual's)
import msgspec
from kerneldiff.core.ingest import decode
raw = b'[{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.5, "dur": 2, "pid": 0, "tid": 7, "args": {"stream": 7}}, {"ph": "i", "name": "x"}]'
one = b'[{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.5, "dur": 2, "pid": 0, "tid": 7, "args": {"stream": 7}}]'
print(msgspec.json.encode(decode.try_decode(raw)).decode(), msgspec.json.encode(decode._typed.decode(one)).decode())
"""
    outs = []
    for how in ("ours", "plain"):
        p = subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert p.returncode == 0, p.stderr[-2000:]
        outs.append(p.stdout)
    assert outs[0] == outs[1] and outs[0].strip()


@pytest.mark.skipif(not TINY.exists(), reason="needs ../shared/traces")
def test_a_compare_to_stdout_imports_no_pathlib():
    # pathlib (with urllib.parse and ipaddress, ~2.5 ms) only where a file is written (-o, --table
    # into files)
    argv = ("compare", str(TINY), str(TINY), "--format", "json", "--no-cache")
    modules(*argv)   # the registry cached first
    mods = modules(*argv, without_pathlib=True)
    assert "kerneldiff.core.compare.engine" in mods   # the comparison did run
    assert "pathlib" not in mods   # (urllib.parse and ipaddress stay: the path hook imported them)
