"""msgspec, imported without typing_extensions: ~4 ms of every command that reads a trace.

msgspec tries to import typing_extensions only to read its kinds of annotations (its
`get_type_hints`, `Required`), and falls back to `typing`'s, as where typing_extensions is not
installed. kerneldiff's structs use no such annotations, so the modules that use msgspec import it
from here: the first import is made with typing_extensions hidden, and nothing else is changed (a
later `import typing_extensions`, Textual's, imports it as usual).
"""

import sys

if "msgspec" not in sys.modules and "typing_extensions" not in sys.modules:
    sys.modules["typing_extensions"] = None   # an import of it raises ImportError
    try:
        import msgspec
    finally:
        if sys.modules.get("typing_extensions", 0) is None:
            del sys.modules["typing_extensions"]

import msgspec  # noqa: E402,F811 - the module, however it was first imported

__all__ = ["msgspec"]
