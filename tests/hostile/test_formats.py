"""A file that is another format than JSON gets a one-line error that says which (exit 2):
compressed with something else than gzip, a zip archive, UTF-16 or UTF-32 text."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import subprocess
import sys
import zipfile

import pytest

import hostile_corpus as hc

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

DOC = json.dumps(hc.good_doc())


def _zip(path):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("trace.json", DOC)


CASES = {
    "bzip2": (lambda p: p.write_bytes(bz2.compress(DOC.encode())), "bzip2-compressed"),
    "xz": (lambda p: p.write_bytes(lzma.compress(DOC.encode())), "xz-compressed"),
    "zstd": (lambda p: p.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 64), "zstd-compressed"),
    "zip": (_zip, "a zip archive"),
    "utf16": (lambda p: p.write_bytes(DOC.encode("utf-16")), "UTF-16 text"),
    "utf32": (lambda p: p.write_bytes(DOC.encode("utf-32")), "UTF-32 text"),
    "gzip_of_bzip2": (lambda p: p.write_bytes(gzip.compress(bz2.compress(DOC.encode()))), "bzip2-compressed"),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_another_format_is_named_in_one_line(tmp_path, kind):
    make, said = CASES[kind]
    p = tmp_path / "trace.json.gz"
    make(p)
    r = subprocess.run([sys.executable, "-m", "kerneldiff.cli", "info", str(p)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and str(p) in lines[0] and said in lines[0], r.stderr
