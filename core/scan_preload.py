"""Imported by the workers' fork server (see loader._mp_context): loads the compiled scanner
there once — or compiles it, the first time after install — so every worker forked from the
server starts with it instead of loading it again (~0.3 s each)."""

from . import scan

scan.warm()
