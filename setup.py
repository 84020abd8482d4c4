"""The one compiled part: the trace scanner (core/ingest/_fastscan.c). It is optional: where no C
compiler is at hand the install still succeeds and traces are read by the msgspec path alone
(slower, same results). Everything else is declared in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("kerneldiff.core.ingest._fastscan", ["core/ingest/_fastscan.c"],
                             extra_compile_args=["-O2", "-fno-strict-aliasing"], optional=True)])
