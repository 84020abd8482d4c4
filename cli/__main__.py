from kerneldiff.cli.main import entry

entry()
