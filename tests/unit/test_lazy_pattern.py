"""LazyPattern: the compiled pattern's answers, compiled on first use only; and the modules a bare
`info` imports leave their lazy patterns uncompiled until a trace asks for them."""

from __future__ import annotations

import re
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from kerneldiff.core.lazy_pattern import LazyPattern

PATTERNS = [(r"^(cuda|hip)\w*Synchronize", 0), (r"DtoH|D2H", re.I), (r"_([0-9]+)$", 0), (r"(?:a|b)+c", 0)]


@given(st.sampled_from(PATTERNS), st.text(alphabet="abcdhtoD2H_0123456789cudaSynchronize ", max_size=40))
def test_lazy_pattern_answers_as_the_compiled_one(pf, text):
    text_, flags = pf
    lazy, real = LazyPattern(text_, flags), re.compile(text_, flags)
    for method in ("match", "search", "fullmatch"):
        a, b = getattr(lazy, method)(text), getattr(real, method)(text)
        assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups()))
    assert lazy.sub("-", text) == real.sub("-", text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert lazy.pattern == text_ and lazy.flags == real.flags


def test_compiled_on_first_use_and_kept():
    p = LazyPattern(rb"\d+")
    assert set(vars(p)) == {"_text", "_flags"}         # nothing compiled yet
    assert p.search(b"ab12").group() == b"12"
    assert "search" in vars(p) and p.search(b"7").group() == b"7"


def test_a_bad_pattern_fails_at_first_use_and_private_names_are_not_forwarded():
    p = LazyPattern(r"(")
    try:
        p.match("x")
        raise AssertionError("expected re.error")
    except re.error:
        pass
    try:
        p._compiled
        raise AssertionError("expected AttributeError")
    except AttributeError:
        pass


# importing what `info` imports compiles none of the module-level lazy patterns
IMPORT_ONLY = """
import sys
from kerneldiff.cli.main import entry   # noqa: F401
import kerneldiff.core.session, kerneldiff.core.analysis.readings, kerneldiff.core.analysis.summary
import kerneldiff.core.ingest.loader, kerneldiff.core.ingest.slices, kerneldiff.core.names.display
from kerneldiff.core.lazy_pattern import LazyPattern
found, compiled = 0, []
for name, mod in list(sys.modules.items()):
    if name.startswith("kerneldiff."):
        for k, v in vars(mod).items():
            for p in (v if isinstance(v, tuple) else (v,)):
                for q in (p if isinstance(p, tuple) else (p,)):
                    if isinstance(q, LazyPattern):
                        found += 1
                        if set(vars(q)) != {"_text", "_flags"}:
                            compiled.append(name + "." + k)
print(found, compiled)
"""


def test_info_modules_compile_no_lazy_pattern_at_import():
    out = subprocess.run([sys.executable, "-c", IMPORT_ONLY], capture_output=True, text=True, timeout=120)
    found, compiled = out.stdout.split(" ", 1)
    assert int(found) >= 30, out.stdout + out.stderr   # the info path's lazy patterns were seen
    assert compiled.strip() == "[]", compiled
