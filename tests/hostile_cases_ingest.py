"""Hostile corpus, round two: JSON structure, numbers, correlation ids, names and their storage (core/ingest).

Cases use the builders of hostile_corpus; the corpus's harness (test_hostile.py) runs each through
`kerneldiff info` and `kerneldiff compare`."""

from __future__ import annotations

import functools
import gzip
import json
import random
from pathlib import Path

from hostile_corpus import GOOD_KERNELS, Case, dumps, good_events, gz, kernel, metadata, trace_bytes

N = GOOD_KERNELS
TWO_DOCUMENTS = r"more than one JSON document"

# --- names whose 64-bit hashes collide (the compiled scanner's name table) ---------------------

_M = (1 << 64) - 1


def scan_hash(b: bytes) -> int:
    """The compiled scanner's name hash (_fastscan.c: hash_bytes) in plain Python: FNV-1a over 8-byte
    little-endian words, then the last bytes, mixed with the length."""
    h, prime, i = 0xCBF29CE484222325, 0x100000001B3, 0
    while i + 8 <= len(b):
        h = ((h ^ int.from_bytes(b[i:i + 8], "little")) * prime) & _M
        h ^= h >> 32
        i += 8
    for c in b[i:]:
        h = ((h ^ c) * prime) & _M
    h ^= len(b)
    h ^= h >> 29
    return (h * 0xBF58476D1CE4E5B9) & _M


def _state(b: bytes) -> int:
    """The hash state after whole words (len(b) a multiple of 8), before the length is mixed in."""
    h = 0xCBF29CE484222325
    for i in range(0, len(b), 8):
        h = ((h ^ int.from_bytes(b[i:i + 8], "little")) * 0x100000001B3) & _M
        h ^= h >> 32
    return h


_NAME_BYTES = [c for c in range(0x21, 0x7F) if c not in b'"\\']


@functools.lru_cache(maxsize=None)
def colliding_names(a: bytes = b"flash_fwd_kernel", b: bytes = b"nvjet_tst_128x64") -> tuple[str, str]:
    """Two different printable names of equal length with the same scan_hash, the first starting
    with `a` (an attention kernel), the second with `b` (a GEMM). The word hash XORs each word into
    the state: after a third word the two states differ by some delta; a last word t for one name
    and t ^ delta for the other makes them equal. Third words are searched until the delta has no
    byte with its high bit set, so both last words can be plain ASCII."""
    assert len(a) % 8 == 0 and len(b) % 8 == 0 and len(a) == len(b)

    rng = random.Random(16)

    def word() -> bytes:   # every byte varies: the multiply carries low bytes only upwards
        return bytes(rng.choice(_NAME_BYTES) for _ in range(8))

    by_high: dict[int, bytes] = {}
    for _ in range(4096):
        xa = word()
        by_high.setdefault(_state(a + xa) & 0x8080808080808080, xa)
    for _ in range(4096):
        yb = word()
        sb = _state(b + yb)
        xa = by_high.get(sb & 0x8080808080808080)
        if xa is None:
            continue
        delta = (_state(a + xa) ^ sb).to_bytes(8, "little")
        last = bytes(next((t for t in _NAME_BYTES if t ^ d in _NAME_BYTES), 0) for d in delta)
        if 0 in last:
            continue
        na, nb = a + xa + last, b + yb + bytes(t ^ d for t, d in zip(last, delta))
        assert na != nb and scan_hash(na) == scan_hash(nb)
        return na.decode(), nb.decode()
    raise AssertionError("no collision found")  # pragma: no cover - the search space is ample


SCAN_MIN_GZIP = 32 * 1024 * 1024   # workers.SCAN_MIN_GZIP: from this size on the compiled scanner reads
COLLIDING, ATTENTION = 200_000, 20_000


def _hash_collision(path: Path) -> None:
    """A gzip big enough for the compiled scanner (a stored, uncompressed metadata string makes
    the size) with 200,000 kernels of two names whose hashes collide."""
    attention, gemm = colliding_names()
    pad = gzip.compress(b'{"padding": "' + b"p" * (SCAN_MIN_GZIP + (1 << 20)) + b'", ', compresslevel=0, mtime=0)
    tmpl = ('{"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7, "ts": %d, "dur": 2, '
            '"args": {"device": 0, "stream": 7, "correlation": %d}}')
    # GEMMs, then the attention kernels, then GEMMs again: one scan batch caches the GEMM name
    # first, so a later batch whose name only matches its hash would read every attention kernel
    # as that GEMM and the attention name would vanish from the reports
    # (all early in the file: the first run a worker process scans with one cache)
    order = [gemm] * 5_000 + [attention] * ATTENTION + [gemm] * (COLLIDING - 5_000 - ATTENTION)
    events = [dumps(e) for e in good_events()] + [
        (tmpl % (name, 100_000 + 10 * i, 10_000 + i)).encode() for i, name in enumerate(order)]
    path.write_bytes(pad + gz(trace_bytes(events, head=dumps(metadata())[1:-1].lstrip())))


# --- the top-level traceEvents key --------------------------------------------------------------

def _decoys() -> list[dict]:
    """Events that must never be read: kernels under a `traceEvents` key that is not the top one."""
    return [kernel(f"decoy_kernel_{i}", ts=50.0 + i) for i in range(5)]


def _doc_with(before: bytes, after: bytes = b"") -> bytes:
    """metadata, `before`, the real traceEvents, `after` (JSON members with their commas)."""
    events = b", ".join(dumps(e) for e in good_events())
    return dumps(metadata())[:-1] + b", " + before + b'"traceEvents": [' + events + b"]" + after + b"}"


def _document_cases() -> list[Case]:
    good = dumps({**metadata(), "traceEvents": good_events()})
    decoy = dumps(_decoys())
    good_array = dumps(good_events())
    return [
        Case("r2_key_inside_key", 'a key that ends in `\\"traceEvents` (the finder matched inside it)', "load",
             _doc_with(b'"x\\"traceEvents": ' + decoy + b", "), kernels=N),
        Case("r2_key_in_nested_object", "a traceEvents list inside a nested metadata object", "load",
             _doc_with(b'"nested": {"traceEvents": ' + decoy + b"}, "), kernels=N),
        Case("r2_key_in_metadata_list", "a traceEvents list inside an object inside a metadata list", "load",
             _doc_with(b'"runs": [1, {"traceEvents": ' + decoy + b"}], "), kernels=N),
        Case("r2_key_in_string", 'a metadata string holding the text \\"traceEvents\\": [', "load",
             _doc_with(b'"note": "\\"traceEvents\\": [{\\"ph\\": \\"X\\"}", '), kernels=N),
        Case("r2_key_escaped", "the key written with a JSON escape: trace\\u0045vents (valid, the same key)",
             "load", good.replace(b'"traceEvents"', b'"trace\\u0045vents"'), kernels=N),
        Case("r2_key_nested_after", "the real traceEvents, then a nested traceEvents in later metadata", "load",
             _doc_with(b"", b', "later": {"traceEvents": ' + decoy + b"}"), kernels=N),
        Case("r2_key_duplicated", "traceEvents twice at the top level (JSON keeps the last)", "error",
             _doc_with(b'"traceEvents": ' + decoy + b", "), problem=r"traceEvents.*twice"),
        Case("r2_key_duplicated_after", "traceEvents twice at the top level, the second after the first",
             "error", _doc_with(b"", b', "traceEvents": ' + decoy), problem=r"traceEvents.*twice"),
        Case("r2_two_documents", "two whole traces concatenated (cat a.json b.json)", "error", good + good,
             problem=TWO_DOCUMENTS),
        Case("r2_two_documents_lines", "two whole traces on two lines", "error", good + b"\n" + good + b"\n",
             problem=TWO_DOCUMENTS),
        Case("r2_two_arrays_lines", "two top-level event arrays on two lines", "error",
             good_array + b"\n" + good_array, problem=TWO_DOCUMENTS),
        Case("r2_two_gzip_documents", "two gzip members, each a whole trace", "error", gz(good) + gz(good),
             suffix=".json.gz", problem=TWO_DOCUMENTS),
        Case("r2_gzip_empty_first_member", "an empty gzip member, then the trace (one stream)", "load",
             gz(b"") + gz(good), suffix=".json.gz", kernels=N),
        Case("r2_gzip_blank_first_member", "a gzip member of blanks, then the trace (one stream)", "load",
             gz(b" \n\t " * 1000) + gz(good), suffix=".json.gz", kernels=N),
        Case("r2_gzip_key_split", "the traceEvents key split between two gzip members", "load",
             gz(good[:good.index(b"traceEv")]) + gz(good[good.index(b"traceEv"):]), suffix=".json.gz",
             kernels=N),
        Case("r2_hash_collision", f"{COLLIDING:,} kernels of two equal-length names with the same "
             "64-bit hash (an attention kernel and a GEMM), big enough for the compiled scanner", "load",
             make=_hash_collision, suffix=".json.gz", kernels=N + COLLIDING,
             literal=colliding_names(), big=True),
    ]


# --- numbers and ids ----------------------------------------------------------------------------

def _number_cases() -> list[Case]:
    ev = [dumps(e) for e in good_events()]
    launch = ('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": %s, '
              '"dur": 1, "args": {"correlation": %s}}')
    k = ('{"ph": "X", "cat": "kernel", "name": "nvjet_tst_frac_%d", "pid": 0, "tid": 7, "ts": %s, "dur": 2, '
         '"args": {"device": 0, "stream": 7, "correlation": %s}}')
    frac = [(launch % (10 + i, c)).encode() for i, c in enumerate(("0.5", "1.5", '"2.5"'))] + \
           [(k % (i, 20 + i, c)).encode() for i, c in enumerate(("0.5", "1.5", '"2.5"'))]
    odd = ["1_000", "\uff11\uff10", "\u0661\u0660", " 7", "+7", "07", "1e3_0", "\u0967"]
    strings = [dumps(kernel(f"nvjet_tst_str_{i}", dur=s)) for i, s in enumerate(odd)] + \
              [dumps(kernel(f"nvjet_tst_ts_{i}", ts=s)) for i, s in enumerate(odd[:3])]
    return [
        Case("r2_fractional_correlation", "correlation ids 0.5, 1.5 and \"2.5\" on launches and kernels", "load",
             trace_bytes(ev[:10] + frac + ev[10:]), warn=r"\b6 events had a non-integer id", kernels=N + 3),
        Case("r2_number_strings", "durations and timestamps as \"1_000\", full-width, Arabic-Indic and "
             "Devanagari digits, blanks, a plus sign, a leading zero", "load",
             trace_bytes(ev[:10] + strings + ev[10:]), warn=rf"\b{len(strings)} malformed events", kernels=N),
    ]


# --- names and their storage --------------------------------------------------------------------

def _huge_name(megabytes: int, last: bool):
    def make(path: Path) -> None:
        with gzip.open(path, "wb", compresslevel=1) as f:
            f.write(dumps(metadata())[:-1] + b', "traceEvents": [')
            f.write(b", ".join(dumps(e) for e in good_events()) + b', {"ph": "X", "cat": "kernel", "name": "')
            chunk = b"nvjet_" * ((1 << 20) // 6)
            for _ in range(megabytes * (1 << 20) // len(chunk)):
                f.write(chunk)
            f.write(b'", "pid": 0, "tid": 7, "ts": 5, "dur": 1}')
            f.write(b"]}" if last else b", " + dumps(kernel("nvjet_after_the_huge_one")) + b"]}")
    return make


def _million_unique(path: Path) -> None:
    """1,000,000 kernels, each with its own 1 KB name (all alike but the last 8 digits)."""
    pad = b"k" * 992
    tmpl = b'{"ph": "X", "cat": "kernel", "name": "%s%08d", "pid": 0, "tid": 7, "ts": %d, "dur": 1},'
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(dumps(metadata())[:-1] + b', "traceEvents": [')
        for block in range(100):
            f.write(b"".join(tmpl % (pad, i, i) for i in range(block * 10_000, (block + 1) * 10_000)))
        f.write(dumps(kernel()) + b"]}")


NAME_LIMIT = r"(names?|strings?) longer than [\d,]+ (bytes|characters).*(cut|truncated)"


def _name_cases() -> list[Case]:
    return [
        Case("r2_name_300mb", "one kernel name of 300 MB, mid-trace", "load", make=_huge_name(300, last=False),
             suffix=".json.gz", kernels=N + 2, warn=NAME_LIMIT, big=True),
        Case("r2_name_600mb_last", "one kernel name of 600 MB, the last event", "load",
             make=_huge_name(600, last=True), suffix=".json.gz", kernels=N + 1, warn=NAME_LIMIT, big=True),
    ]


def million_unique_case() -> Case:
    """1,000,000 distinct 1 KB names: ~13 s through the CLI (it took 117 s while the classifier
    tried each rule's literals in turn, and the string merge hashed a worker's names once per run)."""
    return Case("r2_million_unique_names", "1,000,001 kernels with 1,000,000 distinct 1 KB names", "load",
                make=_million_unique, suffix=".json.gz", kernels=1_000_001, big=True)


def cases() -> list[Case]:
    return [*_document_cases(), *_number_cases(), *_name_cases(), million_unique_case()]


if __name__ == "__main__":  # pragma: no cover - a look at the colliding pair
    print(json.dumps(colliding_names()))
