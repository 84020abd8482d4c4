"""A big plain-JSON trace made from a real one: its events repeated, each copy shifted in time.

Synthetic traces are shaped by the code that writes them; this one keeps a real profiler's bytes:
Kineto's indentation and line breaks, its key order, `with_stack` frames and `record_shapes`
arguments (Input Dims, Concrete Inputs, strides), flows, metadata. The events array of the source
trace (default: ../shared/traces/h100_llama_eager_sdpa.json.gz, 140 MB inflated) is written again
and again until the file reaches --size; copy k has every "ts" moved by k times the source's span
(plus a gap), and every id that links events ("External id", "correlation", flow "id", "Python id",
"Python parent id") moved by k times the largest id, so each copy is a later, separate stretch of
the same run. Everything else is the source's bytes. Edits are made on the text (the digits of a
ts are added to as decimal strings: no float is rounded).

    python bench/gen_replicated.py /tmp/replicated_1GB.json --size 1GB [--source PATH.json.gz]
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent.parent / "shared" / "traces" / "h100_llama_eager_sdpa.json.gz"
_TS = re.compile(rb'("ts": )(-?)(\d+)((?:\.\d+)?)')
_IDS = re.compile(rb'("(?:External id|correlation|id|Python id|Python parent id)": )(\d+)')
_EVENTS = re.compile(rb'"traceEvents"\s*:\s*\[')


def _split(doc: bytes) -> tuple[bytes, bytes, bytes]:
    """(everything up to the events array's '[', the events between the brackets, the rest)."""
    m = _EVENTS.search(doc)
    if m is None:
        raise SystemExit("no traceEvents array in the source")
    end = doc.rindex(b"]", m.end(), doc.rindex(b"traceName") if b"traceName" in doc else len(doc))
    body = doc[m.end():end].rstrip()
    return doc[:m.end()], body, doc[len(doc[:m.end()]) + len(body):]


def write(out: str, size: int, source: Path = SOURCE) -> int:
    doc = gzip.open(source, "rb").read() if source.suffix == ".gz" else source.read_bytes()
    head, body, tail = _split(doc)
    ts = [int(m.group(3)) for m in _TS.finditer(body) if not m.group(2)]
    span = max(ts) - min(ts) + 1000   # whole microseconds; a 1 ms gap between copies
    stride = max(int(m.group(2)) for m in _IDS.finditer(body)) + 1
    written = 0
    with open(out, "wb") as f:
        f.write(head)
        written += len(head)
        k = 0
        while True:
            if k == 0:
                part = body
            else:
                dt, di = k * span, k * stride
                part = _TS.sub(lambda m: m.group(0) if m.group(2) else   # (no negative ts in real traces)
                               b"%s%d%s" % (m.group(1), int(m.group(3)) + dt, m.group(4)), body)
                part = _IDS.sub(lambda m: b"%s%d" % (m.group(1), int(m.group(2)) + di), part)
                f.write(b",")
                written += 1
            f.write(part)
            written += len(part)
            k += 1
            if written + len(tail) >= size:
                break
        f.write(tail)
        written += len(tail)
    return k


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--size", default="1GB", help="at least this many bytes (whole copies): 500MB, 1GB, ...")
    ap.add_argument("--source", type=Path, default=SOURCE)
    args = ap.parse_args(argv)
    units = {"KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9}
    s = args.size.upper()
    size = int(float(s[:-2]) * units[s[-2:]]) if s[-2:] in units else int(s)
    copies = write(args.out, size, args.source)
    print(f"{args.out}: {Path(args.out).stat().st_size / 1e9:.2f} GB, {copies} copies of {args.source.name}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
