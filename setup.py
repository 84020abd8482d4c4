"""The compiled parts: the trace scanner (core/ingest/_fastscan.c), the alignment's name
similarity (core/compare/_similarity.c), the timeline's gap scan (core/analysis/_gapscan.c) and the
host hotspots' segment sweep (core/analysis/_hostscan.c). All are optional: where no C compiler
is at hand the install still succeeds and kerneldiff runs without them (the msgspec reader,
difflib, numpy: slower, same results). Everything else is declared in
pyproject.toml."""

import os

from setuptools import Extension, setup

setup(ext_modules=[Extension("kerneldiff.core.ingest._fastscan", ["core/ingest/_fastscan.c"],
                             depends=["core/ingest/_fastscan_walk.h"], extra_compile_args=["-O2", "-fno-strict-aliasing"], optional=True),
                   Extension("kerneldiff.core.compare._similarity", ["core/compare/_similarity.c"],
                             extra_compile_args=["-O2"], optional=True),
                   Extension("kerneldiff.core.analysis._gapscan", ["core/analysis/_gapscan.c"],
                             extra_compile_args=["-O2"], optional=True),
                   Extension("kerneldiff.core.analysis._hostscan", ["core/analysis/_hostscan.c"],
                             extra_compile_args=["-O2"], optional=True)],
      # The `kerneldiff` command: a plain script (bin/kerneldiff), not pip's console-script wrapper,
      # whose `import re` was a third of `kerneldiff --version` (~8 ms against `python -c pass`
      # ~15 ms). Windows runs scripts through the .exe launcher only a console-script entry point gets.
      **({"entry_points": {"console_scripts": ["kerneldiff = kerneldiff.cli.main:entry"]}} if os.name == "nt"
         else {"scripts": ["bin/kerneldiff"]}))
