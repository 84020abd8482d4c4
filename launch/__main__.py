"""`python -m kerneldiff`: the same as the `kerneldiff` command."""
from kerneldiff.cli.main import entry

entry()
