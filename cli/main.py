"""Entry point. Each subcommand lives in its own module exposing `add_parser(sub)` and `run(args)`.

Bad input never produces a traceback: a `TraceError` becomes one line on stderr and exit code 2.
"""

import gc   # no `from __future__ import annotations`: that import is ~0.2 ms of `--version`
import os
import sys

# numpy's OpenBLAS starts a thread per core when it is imported, and they spin for a while;
# kerneldiff does no linear algebra, and on few cores those threads take CPU from the loads. Set
# before anything imports numpy; a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# numpy asks for transparent huge pages on every array of 4 MB or more; where the kernel compacts
# memory to find them (defrag "madvise", the usual default) an allocation can stall, and building a
# big trace's model varies by the stalls (up to +50% on a 1 GB trace), not by the work.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")


# subcommand name -> module (imported lazily so `kerneldiff --help` stays instant)
SUBCOMMANDS = {
    "info": "kerneldiff.cli.info",
    "compare": "kerneldiff.cli.compare",
    "synth": "kerneldiff.cli.synth",
    "aie": "kerneldiff.cli.aie",
    "gate": "kerneldiff.cli.gate",
}


def _import(name: str):
    # importlib (and the warnings module it imports) only past --version: ~0.5 ms of its ~16 ms
    from importlib import import_module

    return import_module(name)


def _build_parser(selected: str | None):
    from kerneldiff.cli.args import Parser   # argparse and the flag parsers: not for `--version`

    p = Parser(
        prog="kerneldiff",
        description="Compare two GPU profiler traces side by side. "
        "`kerneldiff A B` opens the explorer; `kerneldiff` alone opens the bundled demo pair.",
    )
    p.add_argument("-V", "--version", action=_version_action(), nargs=0, help="print the version and exit")
    sub = p.add_subparsers(dest="command")
    for name, modname in SUBCOMMANDS.items():
        if selected is not None and name != selected:
            # a subcommand's run never shows the others (its usage and errors are its own), and
            # each parser costs its gettext look-ups and formatter: ~1 ms apiece of an `info`
            continue
        try:
            mod = _import(modname)
        except ModuleNotFoundError:
            continue
        mod.add_parser(sub)
    return p


def _installed_version() -> str | None:
    """The Version: line of kerneldiff's installed metadata, found on sys.path directly
    (importlib.metadata's import alone costs ~25 ms, twice `python -c pass`)."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for n in names:
            if n.startswith("kerneldiff-") and n.endswith(".dist-info"):
                try:
                    with open(os.path.join(entry or ".", n, "METADATA"), encoding="utf-8") as f:
                        for line in f:
                            if line.startswith("Version:"):
                                return line.split(":", 1)[1].strip()
                            if not line.strip():
                                break
                except OSError:
                    pass
    return None


def version() -> str:
    found = _installed_version()
    if found:
        return found
    from importlib.metadata import PackageNotFoundError, version as dist_version

    try:
        return dist_version("kerneldiff")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _version_action():
    import argparse

    class _Version(argparse.Action):
        """--version among other flags, with the version looked up only when asked."""

        def __call__(self, parser, namespace, values, option_string=None):
            print(f"kerneldiff {version()}")
            parser.exit()

    return _Version


def _looks_like_command(word: str) -> bool:
    """A bare word that names no file is a mistyped subcommand, not a trace (traces have a path
    separator or an extension)."""
    import os

    return not word.startswith("-") and os.sep not in word and "." not in word and not os.path.lexists(word)


def _settings_problem() -> str | None:
    """An environment setting that cannot be used (checked before any work, not after a load)."""
    import os

    if not os.environ.get("KERNELDIFF_CACHE_MAX", "").strip():
        return None
    from kerneldiff.core.session import setting_problem

    return setting_problem()


class _Stdout:
    """sys.stdout while a command runs: a report that cannot be written (`> /dev/full`, a full
    disk) is refused in one line naming stdout, whichever writer hit it (print, Rich, a flush)."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def _failed(self, e: OSError):
        from kerneldiff.core.errors import TraceError
        # what is still buffered would fail again at exit ("Exception ignored ..."): drop it
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, AttributeError, ValueError):   # not a real file (captured in tests)
            pass
        return TraceError("stdout", f"cannot write: {e.strerror or e}")

    def write(self, s: str) -> int:
        try:
            return self._stream.write(s)
        except BrokenPipeError:
            raise            # `| head` closed the pipe: ended quietly below
        except OSError as e:
            raise self._failed(e) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise self._failed(e) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _escape_what_cannot_be_encoded() -> None:
    """A terminal or pipe whose encoding cannot hold a character (PYTHONIOENCODING=ascii, a latin-1
    locale) gets it as a visible escape (\\xb5) instead of a crash halfway through a report."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):   # replaced or closed streams: left as they are
            pass


def reuse_freed_memory() -> None:
    """glibc's malloc, for a headless run: freed memory is kept for reuse and blocks up to 32 MB are
    served from it, instead of each big block being mapped afresh and unmapped when freed (every
    first touch of a fresh page is a fault: about a quarter of a 2x60 MB compare's page faults
    go). A run lives seconds, so what it does not give back goes at its exit; the explorer keeps
    the defaults. Transparent huge pages for the heap would cut the faults further but stall some
    runs on memory compaction, as numpy's do (above): not used."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):   # no glibc (musl has no mallopt): its defaults stay
        return
    mallopt(-3, 32 << 20)   # M_MMAP_THRESHOLD: blocks from 32 MB up are still mapped on their own
    mallopt(-1, 1 << 30)    # M_TRIM_THRESHOLD: up to 1 GB freed at the heap's top is kept


def entry() -> None:
    """The `kerneldiff` command. After a headless subcommand has written its report, the process
    ends without the interpreter's teardown: freeing a loaded pair's millions of objects one by
    one costs ~10% of a compare. Output is flushed first. The explorer ends the same way once its
    threads are joined and its exit handlers have run, as the interpreter's exit does them
    (quitting after browsing a trace of 100,000 kernels took ~1.8 s, ~1.5 s of it the teardown).

    A headless subcommand also runs without the cyclic garbage collector: it lives seconds, its
    big data are numpy arrays freed by reference counting, and the collector's passes over the
    objects that imports and a comparison create cost ~2% of a compare. The explorer, which lives
    for hours, keeps it."""
    argv = sys.argv[1:]
    if argv[:1] and argv[0] in SUBCOMMANDS:
        gc.disable()
        reuse_freed_memory()
    rc = main(argv)
    if not (argv[:1] and argv[0] in SUBCOMMANDS):
        # the explorer: what the interpreter's exit does before its teardown, in its order (the
        # teardown after them took ~1.5 s once a trace of 100,000 kernels had been browsed): the
        # threads' exit hooks (a thread pool's idle workers told to end) and the join of every
        # thread that is not a daemon, then the exit handlers. Neither module is imported for
        # them: no thread runs where `threading` never was, and no handler was registered where
        # `atexit` never was (`--version`: ~2 ms, a fifth of the command, was importing threading)
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
        if "atexit" in sys.modules:
            sys.modules["atexit"]._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a closed or full pipe: report as before, the slow way
            sys.exit(rc)
    os._exit(rc)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _escape_what_cannot_be_encoded()
    if argv[:1] in (["--version"], ["-V"]):
        print(f"kerneldiff {version()}")
        return 0
    # the rest of the package only past --version (which imports nothing of it: ~5 ms)
    from kerneldiff.core.errors import TraceError, shown_path
    from kerneldiff.core.session import visible

    if argv and argv[0] not in SUBCOMMANDS and _looks_like_command(argv[0]):
        print(f"kerneldiff: {shown_path(argv[0])}: unknown command and no such file (commands: {', '.join(SUBCOMMANDS)}; "
              f"or give one or two trace files)", file=sys.stderr)
        return 2
    problem = _settings_problem()
    if problem:
        print(f"kerneldiff: {problem}", file=sys.stderr)
        return 2
    if argv and argv[0] in SUBCOMMANDS:
        from kerneldiff.cli.args import UsageError

        parser = _build_parser(argv[0])
        args = parser.parse_args(argv)
        mod = _import(SUBCOMMANDS[argv[0]])
        real_stdout = sys.stdout
        sys.stdout = _Stdout(real_stdout)
        try:
            rc = int(mod.run(args) or 0)
            sys.stdout.flush()   # a redirect to a full disk fails here, not at exit after "exit 0"
            return rc
        except TraceError as e:
            print(f"kerneldiff: {e}", file=sys.stderr)
            return 2
        except UsageError as e:   # a flag's value (or a --peaks file's key): named in the message
            print(f"kerneldiff: {visible(' '.join(str(e).split()))}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:
            return 0
        except (MemoryError, RecursionError) as e:
            # a pathological input the loader did not bound: still one line, never a traceback
            what = "out of memory" if isinstance(e, MemoryError) else "input nested too deeply"
            names = getattr(args, "traces", None) or [getattr(args, "a", None) or getattr(args, "trace", "")]
            print(f"kerneldiff: {' '.join(map(shown_path, names))}: {what}", file=sys.stderr)
            return 2
        except Exception as e:  # last resort: report, do not dump a traceback on the user
            msg = visible(" ".join(str(e).split())[:300])
            print(f"kerneldiff: internal error ({type(e).__name__}: {msg}); please report it "
                  f"with the command line", file=sys.stderr)
            return 70
        finally:
            sys.stdout = real_stdout
    from kerneldiff.cli.app_launch import launch

    return launch(argv)


if __name__ == "__main__":
    sys.exit(main())
