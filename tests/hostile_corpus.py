"""Generate the hostile-trace corpus: broken, adversarial and foreign files a user might feed kerneldiff.

Every case is built from code here (no pasted blobs), from one small valid Kineto trace
(`good_doc`) that the malformed cases start from. `build(directory)` writes the files and returns
the case list; `python tests/hostile_corpus.py OUT_DIR` does the same from a shell.

Each case says what kerneldiff must do with it:
* expect "load":  info/compare exit 0; `warn` (a regex) must match a printed warning when data
  was dropped, so the user learns how many events were lost;
* expect "error": exit 2 with one stderr line naming the file and the problem (`problem` regex);
* expect "any":   either of the two (e.g. a gzip bomb may load or be refused), never anything else;
* `literal`: trace strings that must appear verbatim in the text report (markup printed as text);
* `escape`: the trace carries terminal control characters, so no raw ESC may reach stdout.
"""

from __future__ import annotations

import functools
import gzip
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

MARKUP = "[bold red]x[/]"
LINK_MARKUP = "[link=https://example.invalid]click[/link]"
ESCAPES = "\x1b[2J\x1b[H"             # clear screen + cursor home
C1_CSI = "\x9b31m"                     # 8-bit CSI: some terminals honour it like ESC [
BIDI = "gemm\u202eevil"                # right-to-left override hides what follows

# One kernel per role of a pre-norm transformer layer; the classifier knows all of them.
LAYER_KERNELS = (
    ("rms_norm_kernel", "aten::rms_norm"),
    ("nvjet_tst_128x64_qkv", "aten::mm"),
    ("flash_fwd_kernel", "aten::_flash_attention_forward"),
    ("nvjet_tst_128x64_o", "aten::mm"),
    ("rms_norm_kernel", "aten::rms_norm"),
    ("nvjet_tst_128x64_up", "aten::mm"),
    ("vectorized_elementwise_kernel<silu>", "aten::silu"),
    ("nvjet_tst_128x64_down", "aten::mm"),
)
GOOD_KERNELS = 3 * 2 * len(LAYER_KERNELS)  # good_events(): 3 steps x 2 layers
TRUNCATED = r"truncated\b.*?\bkept the \d+ complete events"
STEP_NAMES = ("execute_context_1(64_64)_generation_0(0)", "execute_context_0(0)_generation_4(4)",
              "execute_context_0(0)_generation_4(4)")


def metadata(device_name: str = "NVIDIA H100 80GB HBM3", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": device_name, "totalGlobalMem": 85899345920,
                              "computeMajor": 9, "computeMinor": 0, "warpSize": 32, "numSms": 132}],
        "cupti_version": 22, "cuda_runtime_version": 12040,
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
        "with_stack": 1, "record_shapes": 0,
    }
    meta.update(extra)
    return meta


def good_events(layers: int | tuple[int, ...] = 2, steps: int = 3, extra_kernel: str | None = None,
                python_cycle: bool = False) -> list[dict[str, Any]]:
    """Steps of a tiny model: annotation, Python frames, cpu ops, launches and kernels, all linked.

    `layers` is per step when a tuple (a pass with an odd layer count).
    `extra_kernel` adds one kernel with that name per layer (e.g. a hostile name).
    `python_cycle` makes the Python parent ids of each step form a loop."""
    ev: list[dict[str, Any]] = []
    corr = 0
    pyid = 0
    for s in range(steps):
        t0 = 10_000.0 * s
        ev.append({"ph": "X", "cat": "user_annotation", "name": STEP_NAMES[s % len(STEP_NAMES)],
                   "pid": 1, "tid": 1, "ts": t0, "dur": 9_000.0})
        ev.append({"ph": "X", "cat": "gpu_user_annotation", "name": STEP_NAMES[s % len(STEP_NAMES)],
                   "pid": 0, "tid": 7, "ts": t0 + 50, "dur": 9_000.0})
        pyid += 1
        root = pyid
        cycle_id = 1_000_000 + s  # with python_cycle: root -> cycle_id -> first layer frame -> root
        ev.append({"ph": "X", "cat": "python_function", "name": "model.py(10): forward", "pid": 1, "tid": 1,
                   "ts": t0 + 1, "dur": 8_990.0,
                   "args": {"Python id": root, "Python parent id": cycle_id if python_cycle else -1}})
        kernels = list(LAYER_KERNELS) + ([(extra_kernel, "aten::hostile")] if extra_kernel is not None else [])
        t = t0 + 5
        for layer in range(layers[s] if isinstance(layers, tuple) else layers):
            pyid += 1
            frame = pyid
            ev.append({"ph": "X", "cat": "python_function", "name": f"layer.py({layer}): forward", "pid": 1,
                       "tid": 1, "ts": t, "dur": 30.0 * len(kernels),
                       "args": {"Python id": frame, "Python parent id": root}})
            if python_cycle and layer == 0:
                ev.append({"ph": "X", "cat": "python_function", "name": "loop.py(1): cycle", "pid": 1,
                           "tid": 1, "ts": t0 + 1, "dur": 8_990.0,
                           "args": {"Python id": cycle_id, "Python parent id": frame}})
            for i, (kname, op) in enumerate(kernels):
                corr += 1
                ext = 100_000 + corr
                ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t + 1, "dur": 20.0,
                           "args": {"External id": ext}})
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": t + 3, "dur": 5.0, "args": {"correlation": corr, "External id": ext}})
                ev.append({"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": 7, "ts": t + 60,
                           "dur": 4.0 + i + (2.0 if "flash" in kname else 0.0),
                           "args": {"correlation": corr, "External id": ext, "device": 0, "stream": 7}})
                t += 30
    ev.append({"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}})
    return ev


def good_doc(**kw: Any) -> dict[str, Any]:
    device = kw.pop("device_name", "NVIDIA H100 80GB HBM3")
    extra = kw.pop("meta", {})
    return {**metadata(device, **extra), "traceEvents": good_events(**kw)}


def dumps(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def trace_bytes(events_json: list[bytes], head: bytes | None = None) -> bytes:
    """A Kineto document from already-serialised events (for events json.dumps cannot write)."""
    head = dumps(metadata())[:-1] if head is None else head
    return head + b', "traceEvents": [' + b", ".join(events_json) + b"]}"


def kernel(name: Any = "nvjet_tst_128x64_qkv", ts: Any = 100.0, dur: Any = 5.0, **extra: Any) -> dict[str, Any]:
    e = {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
         "args": {"device": 0, "stream": 7, "correlation": 1}}
    e.update(extra)
    return e


@dataclass
class Case:
    name: str
    what: str
    expect: str                        # load | error | any (compare; info too unless `info` says)
    data: bytes | None = None          # file content (None: `make` creates the path itself)
    suffix: str = ".json"
    warn: str | None = None            # regex a warning must match (data was dropped or altered)
    problem: str | None = None         # regex the one-line error must match
    literal: tuple[str, ...] = ()      # strings that must be printed verbatim in text reports
    escape: bool = False               # carries control characters: no raw ESC on stdout
    make: Callable[[Path], None] | None = None
    info: str | None = None            # what `info` must do when it differs from `expect`
    kernels: int | None = None         # kernels the model must hold when it loads
    big: bool = False                  # slow or large: run first, alone in its own process
    path: Path = field(default=Path())

    @property
    def filename(self) -> str:
        return self.name + self.suffix


# --- the cases ----------------------------------------------------------------------------------

def _truncations(good: bytes) -> list[Case]:
    """A valid trace cut at many offsets, as a killed profiler leaves it."""
    events_at = good.index(b'"traceEvents": [') + len(b'"traceEvents": [')
    first_end = good.index(b"}, {", events_at) + 1     # end of the first complete event
    cuts = sorted({events_at - 40, events_at, events_at + 7, first_end + 3}
                  | {int(len(good) * f) for f in (0.3, 0.6, 0.9)} | {len(good) - 1})
    out = []
    for c in cuts:
        if c <= events_at:
            # nothing of the event array survived: nothing to show
            out.append(Case(f"truncated_{c:06d}", f"valid trace cut at byte {c} (before any event)",
                            "error", good[:c], problem=r"truncated|invalid JSON|no complete event"))
        elif c < first_end:
            out.append(Case(f"truncated_{c:06d}", f"valid trace cut at byte {c} (inside the first event)",
                            "error", good[:c], problem=r"truncated|no complete event"))
        else:
            out.append(Case(f"truncated_{c:06d}", f"valid trace cut at byte {c}", "load", good[:c],
                            warn=TRUNCATED))
    return out


def _million_identical(path: Path) -> None:
    one = json.dumps(kernel("nvjet_tst_128x64_qkv", ts=100.0, dur=5.0)).encode() + b","
    block = one * 10_000
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(dumps(metadata())[:-1] + b', "traceEvents": [')
        for _ in range(100):
            f.write(block)
        f.write(one[:-1] + b"]}")   # 1,000,001 events in all


def _gzip_bomb(path: Path) -> None:
    """1 GiB of blanks (valid JSON between two events) in ~1 MB: 64 gzip members of 16 MiB each."""
    blank = gzip.compress(b" " * (16 << 20), compresslevel=9, mtime=0)
    with open(path, "wb") as f:
        f.write(gz(dumps(metadata())[:-1] + b', "traceEvents": [' + dumps(kernel()) + b","))
        for _ in range(64):
            f.write(blank)
        f.write(gz(dumps(kernel(ts=200.0)) + b"]}"))


# The loader decodes gzip files from this size on in worker processes where there are more than two
# CPUs (on two, from 24 MB: `forkserver.thresholds`); the big cases below exceed it, and
# tests/hostile/test_corpus.py also reads them with two workers, to exercise that path and its fallback.
PARALLEL_GZIP_BYTES = 8 * 1024 * 1024
BIG_KERNELS = 120_000


@functools.lru_cache(maxsize=1)
def _big_events() -> list[bytes]:
    """Kernels with random 120-hex-digit names: random names keep the gzip above the parallel threshold."""
    rng = random.Random(7)
    hexes = rng.randbytes(60 * BIG_KERNELS).hex()
    tmpl = (b'{"ph": "X", "cat": "kernel", "name": "nvjet_%s", "pid": 0, "tid": 7, "ts": %d.5, "dur": 1.25, '
            b'"args": {"device": 0, "stream": 7, "correlation": %d}}')
    return [dumps(e) for e in good_events()] + [
        tmpl % (hexes[i * 120:(i + 1) * 120].encode(), 50_000 + i, i) for i in range(BIG_KERNELS)]


def _big_gzip_bad_events(path: Path) -> None:
    evs = _big_events()
    mid = len(evs) // 2
    bad = [b'{"ph": "X", "cat": "kernel", "name": "nan_k", "ts": NaN, "dur": 1}',
           b'{"ph": "X", "cat": "kernel", "name": "bad\xff\xfeutf8", "ts": 5, "dur": 2}']
    data = gz(trace_bytes(evs[:mid] + bad + evs[mid:]))
    assert len(data) > PARALLEL_GZIP_BYTES
    path.write_bytes(data)


def _big_gzip_truncated(path: Path) -> None:
    data = gz(trace_bytes(_big_events()))
    cut = int(len(data) * 0.9)
    assert cut > PARALLEL_GZIP_BYTES
    path.write_bytes(data[:cut])


def _dir(path: Path) -> None:
    path.mkdir(exist_ok=True)


def cases(seed: int = 1234) -> list[Case]:
    rng = random.Random(seed)
    good = dumps(good_doc())
    n = GOOD_KERNELS
    ev_ok = [dumps(e) for e in good_events()]
    half = len(ev_ok) // 2

    def spliced(*bad: bytes) -> bytes:
        """The good events with raw event texts in the middle (so anything lost after them shows)."""
        return trace_bytes(ev_ok[:half] + list(bad) + ev_ok[half:])

    def with_events(*extra: Any) -> bytes:
        return dumps({**metadata(), "traceEvents": good_events() + list(extra)})

    deep = 10_000
    out: list[Case] = [
        # --- not a trace at all ---
        Case("empty", "zero bytes", "error", b"", problem="empty"),
        Case("whitespace", "only blanks and newlines", "error", b" \n\t \r\n  \n", problem="blank|no JSON"),
        Case("binary", "random bytes", "error", bytes([0xFE]) + rng.randbytes(4096), problem="not JSON"),
        Case("nul_bytes", "NUL bytes", "error", b"\0" * 2048, problem="not JSON"),
        Case("brace_binary", "'{' then random bytes", "error", b"{" + rng.randbytes(4096),
             problem="JSON|traceEvents"),
        Case("scalar_json", "a JSON number", "error", b"42\n", problem="not JSON|must start"),
        Case("string_json", "a JSON string", "error", b'"traceEvents"', problem="not JSON|must start"),
        Case("directory", "a directory instead of a file", "error", make=_dir, suffix=".d",
             problem="directory"),
        # --- gzip damage ---
        Case("corrupt_gzip", "gzip magic then garbage", "error", b"\x1f\x8b\x08\x00" + rng.randbytes(2000),
             suffix=".json.gz", problem="gzip"),
        Case("gzip_bitflip", "valid gzip with flipped bytes in the deflate stream", "error",
             _flip(gz(good), rng), suffix=".json.gz", problem="gzip|JSON"),
        Case("gzip_bad_crc", "valid deflate, wrong CRC in the trailer", "error",
             gz(good)[:-8] + b"\0\0\0\0" + gz(good)[-4:], suffix=".json.gz", problem="gzip"),
        Case("gzip_of_text", "gzip of plain text", "error", gz(b"hello, this is not json\n" * 50),
             suffix=".json.gz", problem="not JSON"),
        Case("gzip_of_empty", "gzip of nothing", "error", gz(b""), suffix=".json.gz", problem="blank|empty"),
        Case("gzip_two_members", "two concatenated gzip members (legal)", "load",
             gz(good[:5000]) + gz(good[5000:]), suffix=".json.gz", kernels=n),
        Case("truncated_gzip", "gzip stream of a valid trace cut in half (a killed job)", "load",
             gz(good)[: len(gz(good)) // 2], suffix=".json.gz", warn=TRUNCATED),
        Case("big_gzip_bad_events", "a gzip over the parallel-decoding threshold with a NaN and invalid "
             "UTF-8 event mid-file", "load", make=_big_gzip_bad_events, suffix=".json.gz",
             warn=r"\b2 malformed events", kernels=n + BIG_KERNELS),
        Case("big_gzip_truncated", "a gzip over the parallel-decoding threshold, cut at 90%", "load",
             make=_big_gzip_truncated, suffix=".json.gz", warn=TRUNCATED),
        Case("gzip_bomb", "1 GiB of blanks inside the event array, 1 MB compressed", "any", make=_gzip_bomb,
             suffix=".json.gz", problem="too large|memory|limit"),
        # --- wrong shape ---
        Case("bare_array", "a top-level array of events (Chrome trace format)", "load",
             dumps(good_events()), kernels=n),
        Case("no_trace_events", "an object without traceEvents", "error",
             dumps(metadata()), problem="traceEvents"),
        Case("trace_events_number", "traceEvents is a number", "error",
             dumps({**metadata(), "traceEvents": 5}), problem="not a list"),
        Case("trace_events_object", "traceEvents is an object", "error",
             dumps({**metadata(), "traceEvents": {"0": kernel()}}), problem="not a list"),
        Case("trace_events_null", "traceEvents is null", "error",
             dumps({**metadata(), "traceEvents": None}), problem="not a list"),
        Case("events_not_objects", "numbers, strings, nulls and lists among the events", "load",
             dumps({**metadata(), "traceEvents": [1, "x", None, [], True] + good_events()}),
             warn=r"\b5 malformed events", kernels=n),
        Case("trailing_garbage", "a complete trace followed by garbage", "load", good + b"\n}}garbage\0",
             warn=r"truncated|garbage|after the JSON", kernels=n),
        Case("utf8_bom", "a valid trace behind a UTF-8 byte-order mark", "load", b"\xef\xbb\xbf" + good,
             kernels=n),
        # --- bad events ---
        *[Case(f"missing_{key}", f"kernels without '{key}'", "load",
               with_events(*({k: v for k, v in kernel(f"nvjet_missing_{key}_{i}").items() if k != key}
                             for i in range(3))),
               warn=r"\b3 malformed events" if key != "args" else None, kernels=n + 3 if key == "args" else n)
          for key in ("ph", "ts", "dur", "name", "args")],
        Case("strings_for_numbers", "ts/dur as words, lists, objects, booleans; numeric strings", "load",
             with_events(kernel(ts="soon"), kernel(dur="long"), kernel(ts=[1]), kernel(dur={"v": 1}),
                         kernel(dur=True), kernel(name=12345), kernel(ts="250.5", dur="7")),
             warn=r"\b6 malformed events", kernels=n + 1),
        Case("nan_infinity_literals", "NaN, Infinity and -Infinity literals mid-trace (Python's json writes them)",
             "load", spliced(b'{"ph": "X", "cat": "kernel", "name": "nan_k", "ts": NaN, "dur": 1}',
                             b'{"ph": "X", "cat": "kernel", "name": "inf_k", "ts": 1, "dur": Infinity}',
                             b'{"ph": "X", "cat": "kernel", "name": "ninf_k", "ts": -Infinity, "dur": 1}'),
             warn=r"\b3 malformed events", kernels=n),
        Case("overflowing_floats", "1e999 (overflows to infinity) as ts and dur", "load",
             spliced(b'{"ph": "X", "cat": "kernel", "name": "big", "ts": 1e999, "dur": 1}',
                     b'{"ph": "X", "cat": "kernel", "name": "big", "ts": 1, "dur": -1e999}'),
             warn=r"\b2 malformed events", kernels=n),
        Case("negative_durations", "negative durations", "load", with_events(*[kernel(dur=-5.0)] * 4),
             warn=r"\b4 events had a negative duration", kernels=n + 4),
        Case("huge_durations", "durations of 1e300 µs and 1e16 µs", "load",
             with_events(kernel(dur=1e300), kernel(dur=1e16)), warn=r"\b2 malformed events", kernels=n),
        Case("timestamps_beyond_int64", "integer timestamps far beyond int64", "load",
             with_events(kernel(ts=2**64 + 5), kernel(ts=-(10**30)), kernel(ts=10**400)),
             warn=r"\b3 malformed events", kernels=n),
        Case("ids_beyond_int64", "correlation / External id / pid / tid beyond int64", "load",
             with_events(kernel(pid=2**70, tid=-(2**70), args={"correlation": 2**80, "External id": 10**30,
                                                              "device": 2**65, "stream": "Spans"})),
             kernels=n + 1),
        Case("duplicate_keys", "an event with every key twice (the last one wins)", "load",
             spliced(b'{"ph": "i", "ph": "X", "cat": "cpu_op", "cat": "kernel", "name": "a",'
                     b' "name": "nvjet_tst_dup", "ts": "x", "ts": 5, "dur": 1, "dur": 2}'), kernels=n + 1),
        Case("invalid_utf8", "a kernel name with bytes that are not UTF-8, mid-trace", "load",
             spliced(b'{"ph": "X", "cat": "kernel", "name": "bad\xff\xfe\xc3(name", "ts": 5, "dur": 2}'),
             warn=r"UTF-8|malformed|replaced"),
        Case("raw_control_bytes", "raw (unescaped) ESC and BEL bytes inside a JSON string, mid-trace", "load",
             spliced(b'{"ph": "X", "cat": "kernel", "name": "k\x1b[2J\x07", "ts": 5, "dur": 2}'),
             escape=True),
        Case("huge_name", "one kernel name of 10 MB", "load", with_events(kernel("k" * 10_000_000)),
             kernels=n + 1),
        Case("huge_name_fake_boundaries", "a 10 MB kernel name made of '},{' (looks like event boundaries)",
             "load", dumps({**metadata(), "traceEvents": good_events() + [kernel('"},{"' * 2_000_000)]
                            + good_events(steps=1)}), kernels=n + 1 + n // 3),
        Case("deep_args", f"args nested {deep} levels deep", "any",
             spliced(b'{"ph": "X", "cat": "kernel", "name": "deep", "ts": 5, "dur": 2, "args": '
                     + b'{"a": ' * deep + b"1" + b"}" * deep + b"}"), problem="nested|deep"),
        Case("deep_metadata", f"a metadata value nested {deep} levels deep before traceEvents", "load",
             dumps(metadata())[:-1] + b', "deep": ' + b"[" * deep + b"]" * deep + b', "traceEvents": ['
             + b", ".join(ev_ok) + b"]}", kernels=n),
        Case("million_identical", "1,000,001 identical kernel events (gzip)", "load", make=_million_identical,
             suffix=".json.gz", kernels=1_000_001),
        Case("python_parent_cycle", "Python parent ids that form a loop", "load",
             dumps(good_doc(python_cycle=True)), kernels=n),
        Case("all_zero_durations", "every kernel takes 0 µs", "load",
             dumps({**metadata(), "traceEvents": [{**e, "dur": 0} for e in good_events()]}), kernels=n),
        Case("single_kernel", "one kernel and nothing else", "load",
             dumps({"traceEvents": [kernel()]}), kernels=1),
        # --- strings that try to be markup or terminal commands ---
        Case("markup_names", "markup in kernel, device, annotation and metadata strings", "load",
             dumps(good_doc(extra_kernel=MARKUP, device_name=LINK_MARKUP,
                            meta={"cuda_runtime_version": MARKUP, "distributedInfo": {"backend": MARKUP}})),
             literal=(MARKUP, LINK_MARKUP), kernels=n + n // 8),
        Case("escape_names", "terminal escape sequences in kernel, device and metadata strings", "load",
             dumps(good_doc(extra_kernel=ESCAPES + "k", device_name=ESCAPES + "GPU" + C1_CSI,
                            meta={"cuda_runtime_version": ESCAPES, "distributedInfo": {"backend": BIDI}})),
             escape=True, kernels=n + n // 8),
        Case("[bold red]markup_filename", "markup in the file name itself", "load", good,
             literal=("[bold red]markup_filename",), kernels=n),
        Case("metadata_wrong_types", "deviceProperties of the wrong types, versions as objects", "load",
             dumps({**metadata(), "deviceProperties": [1, "x", {"name": 5, "totalGlobalMem": "lots",
                                                                "computeMajor": "9"}],
                    "cupti_version": {"v": 1}, "distributedInfo": [1], "with_stack": [],
                    "traceEvents": good_events()}), kernels=n),
        # --- traces of another kind ---
        Case("aie_trace", "an AMD AIE (NPU) trace where a Kineto trace is expected", "error",
             _aie_bytes(), problem="AIE", info="load"),
        Case("training_trace", "a trace without inference steps or attention (another kind of run)", "load",
             dumps({**metadata(), "traceEvents": [
                 kernel("sgemm_128x64_nn", ts=10.0 * i, dur=3.0) for i in range(50)]}), kernels=50),
        Case("no_kernels", "a CPU-only trace: no GPU kernel at all", "load",
             dumps({**metadata(), "traceEvents": [e for e in good_events() if e.get("cat") != "kernel"]}),
             warn="no GPU kernels", kernels=0),
    ]
    return out + _truncations(good) + _round_two()


def _round_two() -> list[Case]:
    """The second adversarial corpus, one module per area (tests/hostile_cases_*.py)."""
    import hostile_cases_files
    import hostile_cases_ingest
    import hostile_cases_names

    return [*hostile_cases_ingest.cases(), *hostile_cases_files.cases(), *hostile_cases_names.cases()]


def _flip(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for i in rng.sample(range(20, len(b) - 20), 12):
        b[i] ^= 0xFF
    return bytes(b)


def _aie_bytes() -> bytes:
    from kerneldiff.core.aie.synth import AiePlan, make_aie_events

    events, _ = make_aie_events(AiePlan(iterations=2, warmup=1))
    return json.dumps(events).encode()


def build(directory: str | Path, selected: list[Case] | None = None) -> tuple[Path, list[Case]]:
    """Write the good trace and every case (or `selected`) into `directory`; return (good, cases)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    good = d / "good.json"
    good.write_bytes(dumps(good_doc()))
    built = []
    for c in (cases() if selected is None else selected):
        c.path = d / c.filename
        if c.make is not None:
            c.make(c.path)
        else:
            c.path.write_bytes(c.data or b"")
        c.data = None  # the file holds it; do not keep 10 MB strings alive in the test process
        built.append(c)
    return good, built


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/hostile_corpus.py OUT_DIR")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    g, cs = build(sys.argv[1])
    print(f"{g}  (good)")
    for c in cs:
        print(f"{c.path}  [{c.expect}]  {c.what}")
