"""The command line's shared options are defined once, in cli/args.py: no command declares one of
them itself (read from the source with `ast`), and each command that takes one parses and refuses
it the same way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kerneldiff.cli.main import _build_parser

ROOT = Path(__file__).resolve().parents[2]
SHARED = {"--phase", "--registry", "--no-cache", "--all-passes", "--device", "--rank", "--jobs", "--scheduler"}


def _declared(path: Path) -> set[str]:
    """Flags a file declares with `add_argument("--flag", …)`."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            out |= {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return out


def test_shared_options_are_declared_only_in_args():
    found = {p.name: _declared(p) & SHARED for p in sorted((ROOT / "cli").glob("*.py"))}
    assert found.pop("args.py") == SHARED
    assert not {k: v for k, v in found.items() if v}, found


def test_the_checker_sees_a_declared_flag(tmp_path):
    f = tmp_path / "x.py"
    f.write_text('p.add_argument("--rank", type=int)\ng.add_argument("-o", "--output")\n')
    assert _declared(f) == {"--rank", "-o", "--output"}


@pytest.mark.parametrize("command, flag", [(c, f) for c in ("compare", "gate") for f in ("--rank", "--jobs")]
                         + [("compare", "--device"), ("info", "--device")])
def test_each_command_refuses_a_bad_index_alike(command, flag, capsys):
    parser = _build_parser(command)
    traces = ["a"] if command == "info" else ["a", "b"]
    with pytest.raises(SystemExit) as e:
        parser.parse_args([command, *traces, flag, "-1"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"argument {flag}: must be between" in err
    assert parser.parse_args([command, *traces, flag, "3"]).__dict__[flag.lstrip("-")] == 3
