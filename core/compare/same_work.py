"""Whether a kernel both sides run under one name does the same work: the input shapes its
launching operator recorded (record_shapes). One cuDNN attention kernel ran eager Llama's SDPA on 8
KV heads and compiled Llama's on 32 (Inductor repeats the KV heads before the call): the same name,
4× the K/V work, read as "31 % slower" when its means were compared as the same work. Where both
sides recorded shapes for the kernel's launches and no shape is common to the two, the pair is not
the same work and says so."""

from __future__ import annotations

import json

import numpy as np

MAX_SHOWN = 1   # shapes shown per side: the most common


def _shapes(v, pos: np.ndarray) -> tuple[dict[str, int], str]:
    """{recorded input dims (JSON text): launches} of the kernels at view positions `pos`, and the
    most common launching operator's name; empty where no launch recorded shapes."""
    m = v.m
    op = v._take(m.kernels.cpu_op)[pos]
    op = op[op >= 0]
    if not len(op) or not len(m.cpu_ops):
        return {}, ""
    dims = m.cpu_ops.dims[op]
    keep = dims >= 0
    if not keep.any():
        return {}, ""
    ids, n = np.unique(dims[keep], return_counts=True)
    names, nn = np.unique(m.cpu_ops.name[op[keep]], return_counts=True)
    return ({m.strings[int(i)]: int(c) for i, c in zip(ids.tolist(), n.tolist())},
            m.strings[int(names[int(np.argmax(nn))])])


def shape_difference(va, pa: np.ndarray, vb, pb: np.ndarray) -> str:
    """"" when the two sides' launches of one kernel share a recorded input shape (or a side
    recorded none: unknown); else what each side ran it on."""
    sa, oa = _shapes(va, pa)
    sb, ob = _shapes(vb, pb)
    if not sa or not sb or sa.keys() & sb.keys():
        return ""
    # inputs both sides record: an out= variant adds its output (Inductor's mm: [x, w, out]), a
    # masked attention its mask; the leading inputs every launch names are what is compared
    pa_, pb_ = _parsed(sa), _parsed(sb)
    if pa_ is None or pb_ is None:
        return ""
    n = min(_leading(d) for d in pa_ + pb_)
    if n == 0 or {_key(d, n) for d in pa_} & {_key(d, n) for d in pb_}:
        return ""

    def top(s: dict[str, int], op: str) -> str:
        best = sorted(s.items(), key=lambda x: (-x[1], x[0]))[:MAX_SHOWN]
        more = len(s) - len(best)
        shown = ", ".join(_key(json.loads(d), n).replace(" ", "") for d, _ in best)
        return f"{op} {shown}" + (f" (+{more} more)" if more else "")

    return f"different recorded input shapes, not the same work: A {top(sa, oa)}; B {top(sb, ob)}"


MAX_SHAPES = 256   # distinct shapes a side may list before the kernel is taken as too varied to judge


def _parsed(s: dict[str, int]) -> list[list] | None:
    if len(s) > MAX_SHAPES:
        return None
    out = []
    for d in s:
        try:
            x = json.loads(d)
        except ValueError:
            return None
        if not isinstance(x, list):
            return None
        out.append(x)
    return out


def _leading(dims: list) -> int:
    """How many leading inputs carry a shape (a tensor's, not a scalar's [])."""
    n = 0
    for x in dims:
        if not (isinstance(x, list) and x):
            break
        n += 1
    return n


def _key(dims: list, n: int) -> str:
    return json.dumps(dims[:n])
