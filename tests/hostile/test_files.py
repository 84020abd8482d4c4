"""Hostile files, round two, where the corpus harness does not fit: FIFOs (guarded so a bug cannot
hang the suite), devices read by `kerneldiff aie`, tampered cache entries, KERNELDIFF_CACHE_MAX,
the probe's memory and inflation bounds, file names holding control characters, the explorer.

CLI runs are child processes bounded by CPU time and address space (RLIMIT_CPU / RLIMIT_AS), never
by wall-clock time, each with its own cache and home directory."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import resource
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import hostile_corpus as hc
import hostile_cases_files as r2
from kerneldiff.core import cache_keys
from kerneldiff.core.errors import TraceError, shown_path
from kerneldiff.core.ingest import cache, probe as probe_mod
from kerneldiff.core.orchestration import load
from kerneldiff.core.ingest.probe import probe

pytestmark = pytest.mark.slow   # big inputs, subprocesses or many screens: CI runs it, the fast loop does not

CPU_S = 60                 # CPU seconds per child: a read that never ends is killed, a slow machine is not
MEMORY = 2 << 30           # address space per child
NOT_REGULAR = {            # what each non-regular path is called
    "fifo": "FIFO", "zero": "character device", "urandom": "character device", "cpuinfo": "pseudo-file",
    "dir": "directory", "loop": "symlink loop", "dangling": "dangling symlink",
}


# --- helpers ----------------------------------------------------------------------------------

@pytest.fixture
def home(tmp_path, monkeypatch):
    """A private cache and home for this test and its children."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("KERNELDIFF_CACHE_MAX", raising=False)
    return tmp_path / "xdg" / "kerneldiff" / "models"


def _limits(cpu_s: int = CPU_S, memory: int = MEMORY) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def cli(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`kerneldiff ARGV` in a child bounded by CPU time and memory."""
    full = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run([sys.executable, "-m", "kerneldiff.cli", *argv], env=full, capture_output=True,
                          preexec_fn=_limits, stdin=subprocess.DEVNULL)


def one_error_line(p: subprocess.CompletedProcess, path: str, problem: str) -> str:
    err = p.stderr.decode("utf-8", "replace")
    lines = err.splitlines()
    assert p.returncode == 2, (p.returncode, err[-1000:])
    assert len(lines) == 1 and lines[0].startswith("kerneldiff: "), lines[:5]
    assert shown_path(path) in lines[0] and problem in lines[0], lines[0]
    return lines[0]


def _child_main(conn, fn, args, memory):
    _limits(memory=memory)
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        conn.send(("error", f"{type(e).__name__}: {e}"))


def in_child(fn, *args, memory: int = 1 << 30):
    """fn(*args) in a forked child under RLIMIT_AS `memory` (on top of nothing: an absolute cap)
    and RLIMIT_CPU; its return value, or its exception as text."""
    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe()
    p = ctx.Process(target=_child_main, args=(there, fn, args, memory))
    p.start()
    there.close()
    try:
        result = here.recv()
    except EOFError:
        result = ("died", f"exit code {p.join() or p.exitcode}")
    p.join()
    return result


@contextlib.contextmanager
def fifo_guard(fifo: Path):
    """Whatever runs inside may not open `fifo` for reading. A reader that blocks in open() is
    released by a writer thread (it then reads end-of-file), so a bug fails the test, never hangs it."""
    opened_early = []
    done = threading.Event()

    def writer() -> None:
        fd = os.open(fifo, os.O_WRONLY)   # returns once something opens the FIFO for reading
        opened_early.append(not done.is_set())
        os.close(fd)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)   # release the writer ourselves
        t.join()
        os.close(fd)
    assert opened_early == [False], "the FIFO was opened for reading"


@pytest.fixture
def special(tmp_path):
    """Paths that are not regular files, by kind."""
    d = tmp_path / "special"
    d.mkdir()
    paths = {"fifo": d / "pipe.json", "zero": Path("/dev/zero"), "urandom": Path("/dev/urandom"),
             "cpuinfo": Path("/proc/cpuinfo"), "dir": d / "dir.json", "loop": d / "loop.json",
             "dangling": d / "dangling.json"}
    os.mkfifo(paths["fifo"])
    paths["dir"].mkdir()
    os.symlink("loop.json", paths["loop"])
    os.symlink("absent/x.json", paths["dangling"])
    for kind, p in paths.items():
        if not os.path.lexists(p):
            pytest.skip(f"{p} is absent on this system")
    return paths


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("good") / "good.json"
    p.write_bytes(hc.dumps(hc.good_doc()))
    return p


# --- 1. non-regular files: refused from their stat, before any read ---------------------------

@pytest.mark.parametrize("kind", sorted(NOT_REGULAR))
def test_every_reader_refuses_what_is_not_a_regular_file(special, kind, home):
    from kerneldiff.core.aie.analysis import load_aie_events
    from kerneldiff.core.ingest.source import Source

    path = str(special[kind])
    guard = fifo_guard(special["fifo"])
    with guard:
        for read in (probe, Source, load_aie_events, lambda p: load(p, use_cache=True)):
            with pytest.raises(TraceError) as e:
                read(path)
            assert NOT_REGULAR[kind] in e.value.problem and e.value.path == path
        assert cache.key_for(path, None) is None   # nothing to key, nothing cached


@pytest.mark.parametrize("kind", sorted(NOT_REGULAR))
@pytest.mark.parametrize("command", ["info", "aie", "explorer"])
def test_cli_refuses_what_is_not_a_regular_file_in_one_line(special, kind, command, home):
    path = str(special[kind])
    argv = [path] if command == "explorer" else [command, path]   # no terminal: the explorer probes, then refuses
    with fifo_guard(special["fifo"]):
        p = cli(*argv)
    one_error_line(p, path, NOT_REGULAR[kind])


def test_a_bare_word_naming_a_symlink_loop_is_the_loop_not_an_unknown_command(tmp_path, home):
    loop = tmp_path / "loopy"
    os.symlink("loopy", loop)
    p = subprocess.run([sys.executable, "-m", "kerneldiff.cli", "loopy"], cwd=tmp_path, capture_output=True,
                       preexec_fn=_limits, stdin=subprocess.DEVNULL)
    one_error_line(p, "loopy", "symlink loop")


async def test_explorer_first_frame_on_a_fifo_shows_the_error(special, home):
    from kerneldiff.tui.app import KernelDiffApp
    from kerneldiff.tui.screens.error import ErrorScreen
    from tui_driver import all_text, wait_until

    with fifo_guard(special["fifo"]):
        app = KernelDiffApp([str(special["fifo"])], use_cache=False)
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen))
            assert "FIFO" in all_text(app.screen)
            await pilot.press("q")
    assert app.exit_code == 2


# --- 2. the cache -------------------------------------------------------------------------------

def _names(model) -> set[str]:
    return {model.kernel_name(i) for i in range(len(model.kernels))}


def test_edit_in_place_keeping_size_and_mtime_is_not_served_stale(tmp_path, home, classifier):
    p = tmp_path / "t.json"
    p.write_bytes(hc.dumps(hc.good_doc()))
    first = load(p, classifier=classifier, use_cache=True)
    assert "flash_fwd_kernel" in _names(first) and len(list(home.glob("*.kdc"))) == 1
    st = p.stat()
    data = p.read_bytes().replace(b"flash_fwd_kernel", b"flash_bwd_kernel")   # same length
    with open(p, "r+b") as f:     # in place: same inode
        f.write(data)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (p.stat().st_size, p.stat().st_mtime_ns, p.stat().st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    again = load(p, classifier=classifier, use_cache=True)
    assert "flash_bwd_kernel" in _names(again) and "flash_fwd_kernel" not in _names(again)


@pytest.mark.parametrize("where", ["head", "tail", "sample", "nowhere"])
def test_content_fingerprint_sees_head_tail_and_sampled_blocks(tmp_path, where):
    """The fingerprint alone (for file systems whose ctime cannot be trusted)."""
    size = 10 << 20
    p = tmp_path / "blob"
    p.write_bytes(os.urandom(size))
    inner = size - 2 * cache_keys.FINGERPRINT_EDGE
    offset = {"head": 100, "tail": size - 100, "nowhere": None,
              "sample": cache_keys.FINGERPRINT_EDGE + inner * 5 // (cache_keys.FINGERPRINT_SAMPLES + 1) + 10}[where]

    def fingerprint() -> str:
        with open(p, "rb") as f:
            return cache_keys.content_fingerprint(f.fileno(), size)

    before = fingerprint()
    if offset is not None:
        with open(p, "r+b") as f:
            f.seek(offset)
            b = f.read(1)
            f.seek(offset)
            f.write(bytes([b[0] ^ 0xFF]))
    assert (fingerprint() != before) == (offset is not None)


def _cached(tmp_path, classifier) -> tuple[Path, str, Path]:
    p = tmp_path / "t.json"
    p.write_bytes(hc.dumps(hc.good_doc()))
    load(p, classifier=classifier, use_cache=True)
    key = cache.key_for(p, classifier)
    entry = cache.entry_path(key)
    assert entry.is_file() and cache.get(key) is not None
    return p, key, entry


def _rewrite_header(entry: Path, change) -> None:
    """Replace the entry's JSON header by change(header), with a valid length and CRC."""
    raw = entry.read_bytes()
    hlen, _, end = cache.TRAILER.unpack(raw[-cache.TRAILER.size:])
    body = raw[:len(raw) - cache.TRAILER.size - hlen]
    blob = json.dumps(change(json.loads(raw[len(body):len(raw) - cache.TRAILER.size]))).encode()
    entry.write_bytes(body + blob + cache.TRAILER.pack(len(blob), cache.crc32(blob), end))


@pytest.mark.parametrize("header", [
    lambda h: [h],                                   # a list, not an object
    lambda h: {**h, "arrays": [1, 2]},
    lambda h: {**h, "arrays": {**h["arrays"], "kernels.ts": {"offset": 8, "length": 2**62, "crc": 0}}},
    lambda h: {**h, "arrays": {**h["arrays"], "kernels.ts": "x"}},
], ids=["list", "arrays_list", "length_beyond_file", "array_entry_string"])
def test_a_cache_header_that_lies_is_dropped_and_rebuilt(tmp_path, home, classifier, header):
    p, key, entry = _cached(tmp_path, classifier)
    _rewrite_header(entry, header)
    assert cache.get(key) is None and not entry.exists()
    assert len(load(p, classifier=classifier, use_cache=True).kernels) == hc.GOOD_KERNELS
    assert entry.is_file()


def test_an_array_header_claiming_2_40_rows_is_dropped_without_allocating(tmp_path, home, classifier):
    p, key, entry = _cached(tmp_path, classifier)
    raw = bytearray(entry.read_bytes())
    hlen = cache.TRAILER.unpack(raw[-cache.TRAILER.size:])[0]
    header = json.loads(raw[len(raw) - cache.TRAILER.size - hlen:len(raw) - cache.TRAILER.size])
    off = header["arrays"]["kernels.ts"]["offset"]
    npy_len = struct.unpack("<H", raw[off + 8:off + 10])[0]        # .npy version 1.0 header
    text = raw[off + 10:off + 10 + npy_len].decode("latin1")
    rows = f"({hc.GOOD_KERNELS},)"
    assert rows in text
    huge = text.replace(rows, f"({2**40},)").replace(" " * (len(str(2**40)) - len(str(hc.GOOD_KERNELS))), "", 1)
    assert len(huge) == len(text)
    raw[off + 10:off + 10 + npy_len] = huge.encode("latin1")
    entry.write_bytes(bytes(raw))
    kind, got = in_child(lambda: cache.get(key) is None and not entry.exists(), memory=1 << 30)
    assert (kind, got) == ("ok", True)
    assert cache.get(key) is None


def test_a_cache_entry_replaced_by_a_symlink_to_a_fifo_is_ignored_and_rebuilt(tmp_path, home, classifier):
    p, key, entry = _cached(tmp_path, classifier)
    fifo = tmp_path / "trap"
    os.mkfifo(fifo)
    entry.unlink()
    os.symlink(fifo, entry)
    with fifo_guard(fifo):
        assert cache.get(key) is None
        assert not os.path.lexists(entry)
        model = load(p, classifier=classifier, use_cache=True)
    assert len(model.kernels) == hc.GOOD_KERNELS and entry.is_file() and not entry.is_symlink()


@pytest.mark.parametrize("value", ["inf", "1e400", "-1", "nan", "\u0663", "1_000", "12 parsecs", "9" * 5000],
                         ids=["inf", "1e400", "negative", "nan", "arabic_indic", "underscore", "words", "5000_digits"])
def test_a_bad_cache_limit_is_one_line_never_a_crash(good, home, value):
    assert cache.max_bytes() == cache.DEFAULT_MAX
    os.environ["KERNELDIFF_CACHE_MAX"] = value
    try:
        assert cache.max_bytes() == 0              # the library never raises: writing off
        with pytest.raises(ValueError):
            cache.parse_size(value)
    finally:
        del os.environ["KERNELDIFF_CACHE_MAX"]
    p = cli("info", str(good), env={"KERNELDIFF_CACHE_MAX": value})
    lines = p.stderr.decode().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "KERNELDIFF_CACHE_MAX" in lines[0], lines


@pytest.mark.parametrize("value, size", [("0", 0), ("500MB", 500 * 10**6), ("1.5 GB", 1_500_000_000),
                                         ("4000", 4000), (" 2g ", 2 * 10**9), ("", cache.DEFAULT_MAX)])
def test_cache_limits_people_write_are_read(monkeypatch, value, size):
    monkeypatch.setenv("KERNELDIFF_CACHE_MAX", value)
    assert cache.max_bytes(strict=True) == size


# --- 3. the probe's limits ----------------------------------------------------------------------

def _probe_summary(path: str) -> tuple:
    info = probe(path)
    return info.kind, info.gpu


@pytest.mark.parametrize("build", [r2.deep_args_head, r2.deep_list_metadata], ids=["args", "metadata"])
def test_probe_reads_a_head_nested_a_million_deep_in_bounded_memory(tmp_path, build):
    p = tmp_path / "deep.json"
    p.write_bytes(build())
    status, (kind, gpu) = in_child(_probe_summary, str(p), memory=1 << 30)
    # 1M '[' fill the head: traceEvents lies beyond it, so the kind may stay unknown
    assert status == "ok" and kind in ("kineto", "unknown") and gpu == "NVIDIA H100 80GB HBM3"


def test_probe_inflates_a_bounded_amount_of_a_small_gzip_of_gigabytes(tmp_path, monkeypatch):
    """3 GiB of blanks in 3 MB of gzip, metadata at the end: the probe inflates at most its head
    and TAIL_INFLATE bytes (it once inflated all 3 GiB on every open, cached or not)."""
    p = tmp_path / "blanks.json.gz"
    r2.write_blank_gzip_trace(p, 3)
    assert p.stat().st_size < probe_mod.SMALL_GZIP
    inflated = []
    real = probe_mod.inflate

    def counting(*args, **kw):
        for piece in real(*args, **kw):
            inflated.append(len(piece))
            yield piece

    monkeypatch.setattr(probe_mod, "inflate", counting)
    info = probe(p)
    assert info.kind == "kineto" and not info.metadata_complete     # the tail was too far to read
    assert sum(inflated) <= probe_mod.HEAD_BYTES + probe_mod.TAIL_INFLATE + 2 * r2.BLANK_MEMBER_MIB


def test_probe_reads_a_trace_behind_empty_and_blank_gzip_members(tmp_path):
    p = tmp_path / "members.json.gz"
    r2._empty_first_member(p)
    info = probe(p)
    assert info.kind == "kineto" and info.gpu == "NVIDIA H100 80GB HBM3"


def test_probe_and_aie_read_a_process_name_with_null_args(tmp_path):
    p = tmp_path / "aie.json"
    p.write_bytes(r2.aie_with_null_args())
    info = probe(p)
    assert info.kind == "aie" and info.aie_cores
    out = cli("aie", str(p))
    assert out.returncode == 0 and out.stderr == b"", out.stderr


def test_aie_of_a_small_gzip_of_gigabytes_is_refused_in_bounded_memory(tmp_path, home):
    p = tmp_path / "aie.json.gz"
    r2.write_aie_blank_gzip(p, 3)
    assert p.stat().st_size < 8 << 20
    one_error_line(cli("aie", str(p)), str(p), "too large")   # under RLIMIT_AS 2 GiB: it once took 6 GB


def test_aie_of_a_small_valid_gzip_still_loads(tmp_path):
    from kerneldiff.core.aie.analysis import load_aie_events

    p = tmp_path / "aie.json.gz"
    r2.write_aie_blank_gzip(p, 1 / 64)        # 16 MiB of blanks: within the bound
    assert len(load_aie_events(p)) == len(json.loads(r2.aie_events_bytes())) + 1


# --- 4. file names that carry terminal controls -------------------------------------------------

EVIL = ["esc\x1b[2J\x1b[Hname", "rlo\u202ejson.exe", "new\nline", "c1\x9b31m", "bell\x07"]


@pytest.mark.parametrize("name", EVIL, ids=["escape", "bidi", "newline", "c1", "bell"])
def test_file_names_in_error_lines_are_shown_with_visible_escapes(tmp_path, good, home, name):
    bad = tmp_path / (name + ".json")
    bad.write_bytes(b"42")
    missing = tmp_path / (name + "-missing.json")
    ok = tmp_path / (name + "-ok.json")
    ok.write_bytes(good.read_bytes())
    runs = [(cli("info", str(bad)), bad, "must start"), (cli("compare", str(good), str(missing)), missing, "no such"),
            (cli(str(bad)), bad, "must start"), (cli("aie", str(bad)), bad, ""),
            (cli("compare", str(good), str(good), "-o", str(missing / "x")), missing / "x", "cannot write")]
    for p, path, problem in runs:
        line = one_error_line(p, str(path), problem)
        assert not any(c in line for c in "\x1b\x9b\u202e\x07")
    loaded = cli("info", str(ok))
    assert loaded.returncode == 0 and loaded.stderr == b""
    assert not any(c in loaded.stdout.decode() for c in "\x1b\x9b\u202e\x07")
    assert shown_path(ok.name) in loaded.stdout.decode()


async def test_explorer_error_screen_shows_a_hostile_file_name_visibly(tmp_path, home):
    from kerneldiff.tui.app import KernelDiffApp
    from kerneldiff.tui.screens.error import ErrorScreen
    from tui_driver import all_text, wait_until

    bad = tmp_path / "esc\x1b[2J\u202enew\nline.json"
    bad.write_bytes(b"not json")
    app = KernelDiffApp([str(bad)], use_cache=False)
    async with app.run_test(size=(160, 36)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen))
        text = all_text(app.screen)
        assert not any(c in text for c in "\x1b\u202e") and "esc\\x1b[2J\\u202enew\\nline.json" in text
        await pilot.press("q")
    assert app.exit_code == 2


# --- 5. the explorer when the probe runs out of memory ------------------------------------------

async def test_explorer_memory_error_while_probing_shows_the_error_screen_and_exits_2(good, monkeypatch, home):
    from kerneldiff.core.ingest import probe as reader
    from kerneldiff.tui.app import KernelDiffApp
    from kerneldiff.tui.screens.error import ErrorScreen
    from tui_driver import all_text, wait_until

    def no_memory(path):
        raise MemoryError

    monkeypatch.setattr(reader, "probe", no_memory)
    app = KernelDiffApp([str(good)], use_cache=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen))
        assert "out of memory" in all_text(app.screen)
        await pilot.press("q")
    assert app.exit_code == 2


def test_without_a_terminal_a_memory_error_while_probing_is_one_line(good, monkeypatch, capsys):
    from kerneldiff.core.ingest import probe as reader
    from kerneldiff.tui.app import run_app

    def no_memory(path):
        raise MemoryError

    monkeypatch.setattr(reader, "probe", no_memory)
    assert run_app([str(good)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "out of memory" in lines[0] and str(good) in lines[0]
