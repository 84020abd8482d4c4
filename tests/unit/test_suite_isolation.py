"""The suite runs in a throwaway home and cache (tests/conftest.py), never the user's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import TEST_HOME
from kerneldiff.core.ingest.cache import cache_dir


def test_the_cache_and_home_are_the_suites_own():
    assert Path(cache_dir()).resolve().is_relative_to(TEST_HOME.resolve())
    assert Path(os.path.expanduser("~")).resolve().is_relative_to(TEST_HOME.resolve())


def test_child_processes_inherit_them():
    out = subprocess.run([sys.executable, "-c", "from kerneldiff.core.ingest.cache import cache_dir; print(cache_dir())"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out).resolve().is_relative_to(TEST_HOME.resolve())
