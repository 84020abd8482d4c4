import sys

from kerneldiff.cli.main import main

sys.exit(main())
