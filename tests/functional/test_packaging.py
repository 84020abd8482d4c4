"""The installed layout: one `kerneldiff` package, a core that never pulls in the UI, a CLI that
answers scripts with one line instead of opening the full-screen app."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
import pytest

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> subprocess.CompletedProcess:
    # a fresh interpreter outside the repository, so the checkout's folders are not on sys.path
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/",
                          env={**os.environ, "PYTHONPATH": ""}, timeout=120)


def test_core_imports_neither_textual_nor_rich():
    code = ("import sys, kerneldiff.core, kerneldiff.core.session, kerneldiff.core.compare.engine, "
            "kerneldiff.core.ingest.loader, kerneldiff.core.report.tables, kerneldiff.core.aie.session; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'rich'}))")
    p = _run(code)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_compare_as_json_or_csv_imports_no_rich():
    """Rich draws the text report only: `compare --format json` (and csv) start ~20 ms sooner without it."""
    from kerneldiff.core.demo import DEMO_A, DEMO_B

    code = ("import os, sys; from kerneldiff.cli.main import main; "
            f"rc = [main(['compare', {str(DEMO_A)!r}, {str(DEMO_B)!r}, '--no-cache', '--format', f]) for f in ('json', 'csv')]; "
            "print(rc, sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'rich'}), file=sys.stderr)")
    p = _run(code)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines()[-1] == "[0, 0] []"


def test_installed_under_one_package_name():
    p = _run("import kerneldiff.core, kerneldiff.tui, kerneldiff.cli, importlib.util as u; "
             "print(u.find_spec('core') is None, u.find_spec('tui') is None, u.find_spec('cli') is None)")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["True", "True", "True"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kerneldiff.cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, cwd=ROOT, timeout=120)


def test_version():
    p = _cli("--version")
    assert p.returncode == 0
    assert p.stdout.startswith("kerneldiff ") and p.stdout.split()[1][0].isdigit()


def test_unknown_subcommand_is_one_line_exit_2():
    p = _cli("frobnicate")
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "frobnicate" in p.stderr and "unknown command" in p.stderr


def test_missing_file_without_terminal_is_one_line_exit_2(tmp_path):
    p = _cli(str(tmp_path / "nope.json"))
    assert p.returncode == 2
    assert p.stderr.strip() == f"kerneldiff: {tmp_path / 'nope.json'}: no such file"


def test_explorer_without_terminal_refuses_instead_of_hanging():
    from kerneldiff.core.demo import DEMO_A

    p = _cli(str(DEMO_A))
    assert p.returncode == 2
    assert "needs a terminal" in p.stderr and p.stderr.count("\n") == 1


def test_every_package_folder_is_listed_for_the_wheel():
    """A subpackage missing from pyproject's `packages` works in an editable install and is absent
    from the wheel (core/ranks once was): every folder with an __init__.py is listed, data files too."""
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = {"kerneldiff." + ".".join(p.parent.relative_to(ROOT).parts)
             for top in ("core", "tui", "cli") for p in (ROOT / top).rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)
    for data in (ROOT / "core").rglob("*.toml"):
        pkg = "kerneldiff." + ".".join(data.parent.relative_to(ROOT).parts)
        assert any(data.match(pat) for pat in cfg["package-data"].get(pkg, [])), data
