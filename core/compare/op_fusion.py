"""Fusions at the level of operations: which operations one side runs in one kernel (or a few) and
the other in several, inside the layers the comparison aligned, with the time both sides measured.

1. **Operations behind a kernel** (`kernel_ops`). An eager kernel: the operator that launched it
   (`aten::pow`, `_C::fused_add_rms_norm`) and, for the views, its module. An Inductor kernel
   (`triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_14`): the ops its name lists. A vendor kernel
   of a fused category (RMSNorm+GEMM, MoE GEMM+SwiGLU): its operator plus the registry's
   `components`. Each kernel also gets *atoms*: the operations normalised so that both sides can be
   compared (`aten::_to_copy`, `aten::copy_` and Inductor's `_to_copy` are all `copy`; view-like
   ops that move no data are dropped; custom operators are read word by word: `fused_add_rms_norm`
   is `add` + `rms_norm`). A composite atom covers the primitives it decomposes into (`rms_norm`
   covers `pow`, `mean`, `add`, `rsqrt`, `mul`, `copy`; `attention` covers the batched GEMMs, the
   softmax, the scale and the mask).

2. **Groups inside an aligned layer** (`layer_groups`). The aligned pairs of a layer are cut at
   *anchors*: positions where both sides run the same kernel, or the same heavy work (a GEMM, an
   attention, MoE, SSM or communication kernel against one of its family, Inductor excluded).
   Between two anchors lies a region; a pair whose two kernels do the same operations (atoms equal)
   is a 1:1 match and leaves it. A region with kernels on one side only joins the neighbouring region
   (the layer is read cyclically: the residual add at the end of one layer meets the norm that
   starts the next) whose other side lists the same operations, when that makes a valid group. A
   region is a fusion group when one side runs fewer kernels than the other, its kernels cover at
   least two different operations of the other side, and at least one of them combines two. An
   attention kernel against batched GEMM + softmax (+ scale, mask, casts) is split off first, so
   a region holding both the rotary embedding and the attention gives two groups.

3. **Findings** (`find_op_fusions`). Groups with the same fused kernels (Inductor's kernel number
   ignored) in the same module are one finding, over every layer and every pass they were
   measured in (the passes that run the layer's most common kernel sequence). The measured saving
   is the component kernels' time minus the fused kernels' time, per pass × passes: it can never
   exceed the component time. The benefit model (`fusion_model.estimate`) prices launches and
   traffic and is capped by the component time.

Kernels a group claims are returned per side, so the category-level detectors of `fusion.py` run on
what no group explains and nothing is counted twice.
"""

from __future__ import annotations

import re
from dataclasses import field
from kerneldiff.core.lazy_dataclass import dataclass   # methods made on first use (lazy_dataclass.py)
from operator import attrgetter

import numpy as np

from kerneldiff.core.compare.result import FusionFinding, GroupKernel, KernelPair, LayerAlignment, PairGroup

# --- atoms: operations, normalised ----------------------------------------------------------------

# ops that move no data (a view, a reshape): not work a kernel does
VIEW_OPS = frozenset("""
view _unsafe_view reshape _reshape_alias permute transpose t unsqueeze squeeze slice select expand
expand_as as_strided alias view_as flatten unflatten unbind split split_with_sizes narrow diagonal
detach empty empty_like new_empty lift_fresh
""".split())

# aten (and Inductor) op names with the same meaning for a comparison
ALIASES = {
    "_to_copy": "copy", "to": "copy", "copy_": "copy", "copy": "copy", "clone": "copy", "contiguous": "copy",
    "_copy_from": "copy", "_copy_from_and_resize": "copy", "lift_fresh_copy": "copy", "type_as": "copy",
    "mm": "mm", "addmm": "mm", "linear": "mm", "matmul": "mm", "_scaled_mm": "mm", "_int_mm": "mm",
    "addmv": "mm", "mv": "mm", "dot": "mm", "_addmm_activation": "mm", "_weight_int4pack_mm": "mm",
    "_weight_int8pack_mm": "mm",
    "bmm": "bmm", "baddbmm": "bmm", "addbmm": "bmm", "_scaled_grouped_mm": "moe_gemm",
    "_softmax": "softmax", "softmax": "softmax", "_safe_softmax": "softmax", "log_softmax": "softmax",
    "_log_softmax": "softmax",
    "scaled_dot_product_attention": "attention", "flex_attention": "attention",
    "rms_norm": "rms_norm", "_fused_rms_norm": "rms_norm",
    "native_layer_norm": "layer_norm", "layer_norm": "layer_norm",
    "native_batch_norm": "batch_norm", "batch_norm": "batch_norm", "_native_batch_norm_legit": "batch_norm",
    "_native_batch_norm_legit_no_training": "batch_norm", "_native_batch_norm_legit_functional": "batch_norm",
    "native_group_norm": "group_norm",
    "convolution": "conv", "_convolution": "conv", "cudnn_convolution": "conv", "miopen_convolution": "conv",
    "conv1d": "conv", "conv2d": "conv", "conv3d": "conv",
    "true_divide": "div", "rsub": "sub", "fill": "fill", "zero": "fill", "zeros": "fill", "zeros_like": "fill",
    "ones": "fill", "ones_like": "fill", "full": "fill", "full_like": "fill", "new_zeros": "fill",
    "new_ones": "fill", "new_full": "fill", "_cat": "cat", "masked_fill": "where",
    "index_put": "index_put", "_index_put_impl": "index_put", "_unsafe_index_put": "index_put",
    "native_dropout": "dropout", "dropout": "dropout",
}
_ATTENTION_OP = re.compile(r"^_?(scaled_dot_product\w*|flash_attention\w*|efficient_attention\w*|cudnn_attention\w*|"
                           r"\w*_attention_forward|\w*flash_attn\w*)$")
MAX_OP_CHARS = 256   # no operator name is longer; the pattern above backtracks quadratically on long ones


def _is_attention_op(name: str) -> bool:
    return len(name) <= MAX_OP_CHARS and _ATTENTION_OP.match(name) is not None

# a custom operator's name, read word by word (vLLM `_C::`, SGLang `sgl_kernel::`, aiter, FlashInfer…)
_CUSTOM_WORDS: tuple[tuple[re.Pattern, tuple[str, ...]], ...] = tuple((re.compile(rx), atoms) for rx, atoms in (
    (r"rms_?norm", ("rms_norm",)),
    (r"layer_?norm", ("layer_norm",)),
    (r"swiglu", ("silu", "mul")),
    (r"silu", ("silu",)),
    (r"gelu", ("gelu",)),
    (r"(?<![a-z])relu", ("relu",)),
    (r"(^|_)(and_)?mul(_|$)", ("mul",)),
    (r"(^|_)add(_|$)|with_add|add_rms|add_layer", ("add",)),
    (r"quant", ("quant",)),
    (r"rotary|rope", ("rope",)),
    (r"cache", ("kv_cache",)),
    (r"atten|attn|fmha|(^|_)mha|flash|paged|(^|_)decode|(^|_)prefill|mla", ("attention",)),
    (r"moe|expert", ("moe",)),
    (r"gemm|(^|_)(scaled_|int_|bmm_)?mm(_|$)|matmul|bmm|linear|wvsplitk|llmm", ("mm",)),
    (r"all_?reduce", ("all_reduce",)),
    (r"all_?gather", ("all_gather",)),
    (r"topk", ("topk",)),
    (r"softmax", ("softmax",)),
    (r"sampl", ("sample",)),
))

# what a category says a kernel does, when its operator does not (vendor kernels, opaque ops)
CATEGORY_ATOMS: dict[str, tuple[str, ...]] = {
    "RMSNorm": ("rms_norm",), "LayerNorm": ("layer_norm",), "BatchNorm": ("batch_norm",),
    "Attention": ("attention",), "Attention (prefill)": ("attention",), "Attention (decode)": ("attention",),
    "Dense GEMM": ("mm",), "Conv": ("conv",), "MoE GEMM": ("moe_gemm",), "MoE Routing": ("moe_routing",),
    "MoE Finalize": ("moe_finalize",), "RoPE": ("rope",), "KV Cache": ("kv_cache",), "Quantize": ("quant",),
    "Softmax": ("softmax",), "SSM": ("ssm",), "All-Reduce": ("all_reduce",), "All-Gather": ("all_gather",),
    "Reduce-Scatter": ("reduce_scatter",), "Embedding": ("embedding",), "Sampling": ("sample",),
    "Sorting": ("sort",),
}
# a fused category's components that have no atom of their own
COMPONENT_ATOMS: dict[str, tuple[str, ...]] = {"Activation": ("silu", "gelu", "relu", "mul", "sigmoid")}

# composite atoms and the primitives they decompose into (eager PyTorch, Inductor's op lists)
DECOMPOSE: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in {
    "rms_norm": "pow mean add rsqrt mul copy sum sqrt div reciprocal var_mean square",
    "layer_norm": "mean var var_mean sub add rsqrt mul div copy pow sqrt sum",
    "batch_norm": "mean var var_mean sub add rsqrt mul div copy sqrt sum",
    "group_norm": "mean var var_mean sub add rsqrt mul div copy sqrt sum",
    "attention": "bmm softmax mul div add sub where copy dropout exp amax max sum scalar_tensor fill triu tril "
                 "logical_and logical_not le lt ge gt eq ne index arange expand",
    "softmax": "exp amax max sum sub div copy",
    "silu": "sigmoid mul",
    "gelu": "erf tanh mul add pow",
    "rope": "mul add neg cat cos sin sub copy index stack view_as_complex view_as_real",
    "quant": "div mul clamp clamp_min clamp_max round copy abs amax max reciprocal",
    "kv_cache": "copy cat index_put scatter index_copy slice_scatter",
    "moe": "moe_gemm moe_routing moe_finalize topk softmax sort silu mul mm bmm sum add copy",
    "moe_gemm": "mm bmm",
}.items()}
# atoms so common that sharing one says little about two kernels being the same work
GENERIC_ATOMS = frozenset("add mul sub div copy fill where".split())
GEMM_ATOMS = frozenset({"bmm", "mm"})
HEAVY_ROLES = frozenset({"gemm", "attention", "moe", "ssm", "comm"})
_INDUCTOR_COMPUTE = frozenset({"poi", "red", "per", "for"})   # these compute no GEMM or attention themselves
_INDUCTOR_SUFFIX = re.compile(r"_\d+$")


def gemm_op_keys(view, positions, cats: list[str], classifier) -> list[str]:
    """For the alignment: an operation key per kernel of a GEMM category (`mm`, `bmm`, `moe`…, from
    its launching operator), "" for any other kernel or an unknown operator."""
    out = []
    m = view.m
    for p, c in zip(positions.tolist() if hasattr(positions, "tolist") else positions, cats):
        if classifier.role(c) != "gemm":
            out.append("")
            continue
        op = m.cpu_op_name(int(view.rows[p])) or ""
        out.append(" ".join(sorted(op_atoms(op))) if "::" in op else "")
    return out


def expand(atoms) -> frozenset[str]:
    """The atoms with everything their composite atoms decompose into (memoised: the fusion
    detectors ask it of the same few atom sets thousands of times a comparison)."""
    if not isinstance(atoms, frozenset):
        atoms = frozenset(atoms)
    out = _EXPANDED.get(atoms)
    if out is None:
        found = set(atoms)
        for a in atoms:
            found |= DECOMPOSE.get(a, frozenset())
        out = _EXPANDED[atoms] = frozenset(found)
    return out


_EXPANDED: dict[frozenset[str], frozenset[str]] = {}


def op_atoms(op: str) -> frozenset[str]:
    """The atoms of one operator name (`aten::add_` -> {add}; `_C::fused_add_rms_norm` -> {add, rms_norm})."""
    ns, sep, name = op.rpartition("::")
    if not sep:
        return frozenset()
    if ns in ("aten", "prims", "inductor"):
        base = name[:-1] if name.endswith("_") and not name.endswith("__") else name   # in-place: add_ is add
        if base in VIEW_OPS:
            return frozenset()
        if _is_attention_op(base):
            return frozenset({"attention"})
        return frozenset({ALIASES.get(base, base)})
    low = name.lower()
    hits = {a for rx, atoms in _CUSTOM_WORDS if rx.search(low) for a in atoms}
    return frozenset(hits or {low})


def listed_atoms(kind: str, ops) -> frozenset[str]:
    """The atoms of the ops an Inductor kernel's name lists. A pointwise or reduction kernel lists
    the GEMM or attention that consumes its output; it does not compute it."""
    out = set()
    for o in ops:
        if o in VIEW_OPS:
            continue
        a = "attention" if _is_attention_op(o) else ALIASES.get(o, o)
        if kind in _INDUCTOR_COMPUTE and a in ("attention", "mm", "bmm", "conv", "moe_gemm"):
            continue
        out.add(a)
    return frozenset(out)


@dataclass(frozen=True)
class KernelOps:
    """The operations behind one kernel."""

    ops: tuple[str, ...]        # as recorded: the launching operator, or the ops an Inductor name lists
    atoms: frozenset[str]       # normalised, for comparing the two sides
    inductor: str = ""          # the Inductor kind (poi, red, per, tem, for), "" for other kernels
    launcher: str = ""          # the launching operator as recorded ("" when unknown)
    components: tuple[str, ...] = ()   # a fused category's registry components


def kernel_ops(model, row: int, classifier, category: str | None = None) -> KernelOps:
    """The operations behind kernel `row` of `model` (see the module docstring)."""
    name = model.kernel_name(row)
    op = model.cpu_op_name(row) or ""
    cat = classifier.group(category or model.category(row))
    return _kernel_ops(name, op, cat, classifier)


def _kernel_ops(name: str, op: str, cat: str, classifier) -> KernelOps:
    ind = classifier.parse_inductor(name)
    if ind is not None:
        return KernelOps(ops=tuple(ind.ops), atoms=listed_atoms(ind.kind, ind.ops), inductor=ind.kind,
                         launcher=op if op and op != name else "")
    atoms = set(op_atoms(op)) if op else set()
    comps = tuple(classifier.components(cat))
    # an aten operator says exactly what its kernels do; a custom operator (vllm::moe_forward runs
    # routing, GEMMs and a finalize) or an unknown one leaves that to the kernel's category
    if not atoms or not op.startswith("aten::"):
        if comps:
            for c in comps:
                atoms |= set(CATEGORY_ATOMS.get(classifier.group(c), COMPONENT_ATOMS.get(c, ())))
        else:
            atoms |= set(CATEGORY_ATOMS.get(cat, ()))
    ops = (op,) if op and "::" in op else ()
    return KernelOps(ops=ops, atoms=frozenset(atoms), launcher=op, components=comps)


def display_ops(k: KernelOps, keep_views: bool = False) -> list[str]:
    """What to show for a kernel: its launching operator, or the ops an Inductor name lists (without
    the view-like ones unless asked), or a fused category's components."""
    if k.inductor:
        return [o for o in k.ops if keep_views or o not in VIEW_OPS] or list(k.ops)
    out = list(k.ops)
    if k.components:
        out.append("= " + " + ".join(k.components))
    return out


# --- one layer --------------------------------------------------------------------------------------

@dataclass
class _K:
    """One kernel of a layer's most common pass on one side, at an aligned position."""

    side: str
    pos: int              # aligned position
    index: int            # index in the side's kernel sequence of the layer
    name: str
    category: str
    row: int
    mean_us: float        # per pass (mean over the passes the pair is measured over)
    total_us: float
    count: int
    ko: KernelOps


@dataclass
class _Region:
    a: list[_K] = field(default_factory=list)
    b: list[_K] = field(default_factory=list)

    def side(self, s: str) -> list[_K]:
        return self.a if s == "a" else self.b

    @property
    def one_sided(self) -> str | None:
        if self.a and not self.b:
            return "a"
        if self.b and not self.a:
            return "b"
        return None


@dataclass
class Group:
    """A fusion inside one layer: `fused` kernels on `fused_side` do the work of `components`."""

    fused_side: str
    fused: list[_K]
    components: list[_K]
    attention: bool = False


def _union(ks: list[_K]) -> frozenset[str]:
    out: set[str] = set()
    for k in ks:
        out |= k.ko.atoms
    return frozenset(out)


def _check(fused: list[_K], comps: list[_K], fused_side: str, attention: bool = False) -> Group | None:
    """The group these kernels make (keeping only the kernels that take part), or None."""
    if not fused or len(comps) < 2:
        return None
    covered = _covered(comps, expand(_union(fused)))
    if len(covered) < 2:
        return None
    used = [f for f in fused if any(_covers(f, c) for c in covered)]
    if not used or len(used) >= len(covered):
        return None
    # the same operation launched more often is a count difference, not a fusion
    if len({c.ko.atoms for c in covered}) < 2:
        return None
    # some kernel must combine two different operations of the other side
    if not any(len({c.ko.atoms for c in covered if _covers(f, c)}) >= 2 for f in used):
        return None
    return Group(fused_side, used, covered, attention)


def _covers(f: _K, c: _K) -> bool:
    """Is component `c`'s work part of what `f` does (its operations among f's, decomposed)?"""
    return bool(c.ko.atoms) and c.ko.atoms <= expand(f.ko.atoms)


def _covered(comps: list[_K], exp: frozenset[str]) -> list[_K]:
    """The components whose operations the fused side does: runs of consecutive covered kernels
    that hold at least one specific operation (a copy or an add on its own, next to nothing the
    fused kernels name specifically, is not evidence)."""
    cov = [bool(c.ko.atoms) and c.ko.atoms <= exp for c in comps]
    out: list[_K] = []
    i = 0
    while i < len(comps):
        if not cov[i]:
            i += 1
            continue
        j = i
        while j < len(comps) and cov[j]:
            j += 1
        if any(comps[x].ko.atoms - GENERIC_ATOMS for x in range(i, j)):
            out += comps[i:j]
        i = j
    return out


def _region_group(r: _Region) -> Group | None:
    for f, c in (("a", "b"), ("b", "a")):
        F, C = r.side(f), r.side(c)
        if len(F) < len(C):
            g = _check(F, C, f)
            if g is not None:
                return g
    return None


def _affinity(xs: list[_K], others: list[_K]) -> float:
    """How well one-sided kernels `xs` belong with the other side's kernels `others` (0: not at all):
    every one of them lists an operation the others list, or they share a specific operation."""
    ax, ao = _union(xs), _union(others)
    if not ax or not ao:
        return 0.0
    every = all(k.ko.atoms & ao for k in xs)
    specific = bool((ax & ao) - GENERIC_ATOMS)
    if not (every or specific):
        return 0.0
    return len(ax & ao) / len(ax | ao)


def _attention_split(r: _Region) -> list[Group]:
    """Split off an attention kernel against batched GEMM + softmax (+ scale, mask, casts) on the
    other side; the region keeps the rest."""
    out = []
    for f, c in (("a", "b"), ("b", "a")):
        F, C = r.side(f), r.side(c)
        att = [k for k in F if "attention" in k.ko.atoms and k.ko.inductor not in _INDUCTOR_COMPUTE]
        if not att or any("attention" in k.ko.atoms for k in C):
            continue
        soft = [i for i, k in enumerate(C) if "softmax" in k.ko.atoms]
        if not soft:
            continue
        gemm = [i for i, k in enumerate(C) if k.ko.atoms & GEMM_ATOMS]
        before = [i for i in gemm if i < soft[0]]
        after = [i for i in gemm if i > soft[-1]]
        if not before or not after:
            continue
        span = C[before[-1]: after[0] + 1]
        g = _check(att, span, f, attention=True)
        if g is None:
            continue
        out.append(g)
        taken = {id(k) for k in g.fused} | {id(k) for k in g.components}
        r.a = [k for k in r.a if id(k) not in taken]
        r.b = [k for k in r.b if id(k) not in taken]
    return out


def layer_groups(al: LayerAlignment, kops: dict[str, callable], classifier, modpath=None,
                 memo: dict | None = None) -> list[Group]:
    """The fusion groups of one aligned layer. `kops[side](pair, index)` gives the side's `_K` of a
    pair (None when the side has no kernel there); `modpath(side, row)` the module calls around a
    kernel's launch (outermost first, () unknown).

    `memo` (one dict per comparison side order, with one `kops`): the groups of a layer aligned as
    one before (the same kernels' operations at the same positions: all 16 layers of a Llama) are
    that layer's, taken at the same positions, when every module test the first layer's grouping
    asked gives the same answer on this one (the grouping reads nothing else of a kernel, so it
    would take the same steps)."""
    items = []
    idx = {"a": 0, "b": 0}
    for p in al.pairs:
        ks = {}
        for s in ("a", "b"):
            k = kops[s](p, idx[s])
            if k is not None:
                idx[s] += 1
            ks[s] = k
        items.append((p, ks["a"], ks["b"]))
    if memo is None:
        return _layer_groups(items, classifier, _module_test(items, modpath))
    # a kernel's operations are one KernelOps object per (name, operator, category) of `kops`
    key = tuple((id(ka.ko) if ka is not None else None, id(kb.ko) if kb is not None else None) for _, ka, kb in items)
    same = _module_test(items, modpath)

    def here(s: str, at) -> list[_K]:
        return [items[i][1 if s == "a" else 2] for i in at]

    for asked, groups in memo.get(key, ()):
        if all(same(s, here(s, at)) == answer for s, at, answer in asked):
            return [Group(fs, here(fs, fused), here("b" if fs == "a" else "a", comps), att)
                    for fs, fused, comps, att in groups]
    where = {id(k): i for i, it in enumerate(items) for k in it[1:] if k is not None}
    asked: list[tuple[str, tuple[int, ...], bool]] = []

    def recorded(s: str, ks: list[_K]) -> bool:
        answer = same(s, ks)
        asked.append((s, tuple(where[id(k)] for k in ks), answer))
        return answer

    groups = _layer_groups(items, classifier, recorded)
    memo.setdefault(key, []).append((asked, [(g.fused_side, [where[id(k)] for k in g.fused],
                                              [where[id(k)] for k in g.components], g.attention) for g in groups]))
    return groups


def _layer_groups(items: list[tuple], classifier, same_module) -> list[Group]:
    regions: list[_Region] = []
    cur: _Region | None = None
    for p, ka, kb in items:
        if _anchor(ka, kb, classifier):
            cur = None
            continue
        if cur is None:
            cur = _Region()
            regions.append(cur)
        if ka is not None and kb is not None and ka.ko.atoms and ka.ko.atoms == kb.ko.atoms:
            continue   # the same operations, 1:1
        if ka is not None:
            cur.a.append(ka)
        if kb is not None:
            cur.b.append(kb)
    for r in regions:
        _match_within(r)
    regions = [r for r in regions if r.a or r.b]
    groups: list[Group] = []
    for r in regions:
        groups += _attention_split(r)
    regions = [r for r in regions if r.a or r.b]
    _merge_one_sided(regions, same_module)
    for r in regions:
        g = _region_group(r)
        if g is not None:
            groups.append(g)
    return groups


def _match_within(r: _Region) -> None:
    """Take out of a region the kernels both sides run 1:1 that the alignment could not pair (it
    keeps the order; Inductor moves kernels): the same kernel, then the same operations in the same
    category, first come first paired."""
    for same in (lambda x, y: x.name == y.name,
                 lambda x, y: bool(x.ko.atoms) and x.ko.atoms == y.ko.atoms and x.category == y.category):
        for ka in list(r.a):
            kb = next((k for k in r.b if same(ka, k)), None)
            if kb is not None:
                r.a.remove(ka)
                r.b.remove(kb)


def _anchor(ka: _K | None, kb: _K | None, classifier) -> bool:
    """Both sides run the same kernel here, or the same heavy work (Inductor kernels excepted)."""
    if ka is None or kb is None:
        return False
    if ka.name == kb.name:
        return True
    if ka.ko.inductor or kb.ko.inductor:
        return False
    # eager attention's bmm and softmax are booked Attention, but they are not the fused kernel's work
    if ("attention" in ka.ko.atoms) != ("attention" in kb.ko.atoms):
        return False
    return ka.category == kb.category and classifier.role(ka.category) in HEAVY_ROLES


def _prefix(paths: list[tuple]) -> tuple:
    out: list = []
    for level in zip(*paths):
        if any(x != level[0] for x in level):
            break
        out.append(level[0])
    return tuple(out)


def _module_test(items, modpath):
    """same(side, kernels): do these kernels of one side run in one module below the layer's own
    (the residual add in the decoder layer does not join the RMSNorm after it; silu in the MLP's
    activation module joins the MLP's mul)? True when the trace has no module calls."""
    if modpath is None:
        return lambda s, ks: True
    layer: dict[str, tuple | None] = {}

    def layer_prefix(s: str) -> tuple | None:
        if s not in layer:
            ks = [x[1 if s == "a" else 2] for x in items if x[1 if s == "a" else 2] is not None]
            paths = [modpath(s, ks[0].row), modpath(s, ks[-1].row)] if ks else []
            base = _prefix(paths) if paths and all(paths) else None
            # no module below the layer's own (a compiled graph): nothing to tell kernels apart by
            layer[s] = base if base is not None and any(len(p) > len(base) for p in paths) else None
        return layer[s]

    def same(s: str, ks: list[_K]) -> bool:
        base = layer_prefix(s)
        if base is None:
            return True
        paths = [modpath(s, k.row) for k in ks]
        if not all(paths):
            return True
        return len(_prefix(paths)) > len(base)
    return same


def _merge_one_sided(regions: list[_Region], same_module=lambda s, ks: True) -> None:
    """Join each one-sided region to the neighbouring region (cyclically) whose other side lists the
    same operations, when the result is a valid group (and keeps its fused side) and the joining
    kernels run in the same module as that region's kernels on their side."""
    changed = True
    while changed and len(regions) > 1:
        changed = False
        for i, r in enumerate(regions):
            s = r.one_sided
            if s is None:
                continue
            o = "b" if s == "a" else "a"
            best = None
            for j, before in (((i - 1) % len(regions), True), ((i + 1) % len(regions), False)):
                n = regions[j]
                if n is r or not n.side(o):
                    continue
                score = _affinity(r.side(s), n.side(o))
                if score <= 0 or (n.side(s) and not same_module(s, r.side(s) + n.side(s))):
                    continue
                merged = _Region(a=(n.a + r.a) if before else (r.a + n.a), b=(n.b + r.b) if before else (r.b + n.b))
                g = _region_group(merged)
                if g is None:
                    continue
                old = _region_group(n)
                if old is not None and old.fused_side != g.fused_side:
                    continue
                if best is None or score > best[0]:
                    best = (score, j, merged)
            if best is not None:
                _, j, merged = best
                regions[i] = merged
                del regions[j]
                changed = True
                break


# --- findings ---------------------------------------------------------------------------------------

@dataclass
class _Instance:
    layer: int
    group: Group
    passes: dict[str, int]
    module: str = ""


def _module_of(labelled: list[tuple], weights: list[float]) -> str:
    """The innermost module that encloses at least two thirds of these kernels' time (class names,
    without instance numbers); "" without module events."""
    paths = [tuple(_INDUCTOR_SUFFIX.sub("", lab) for lab in p) for p in labelled]
    total = sum(weights) or 1.0
    best = ()
    for path in set(paths):
        for d in range(len(path), 0, -1):
            pre = path[:d]
            if len(pre) <= len(best):
                break
            share = sum(w for p, w in zip(paths, weights) if p[:d] == pre) / total
            if share >= 2 / 3:
                best = pre
                break
    return best[-1] if best else ""


def _kind(g: Group, cats_c: list[str], fused_side_counts, classifier) -> tuple[str, str]:
    """(kind, fused category) of a group, in the terms the category-level detectors use where they
    apply: one kernel of a registry fused category against its components is `fused_category`; one
    kernel of category C against C plus a category the fused side never runs, named in the fused
    kernel, is `sequence`; anything else is `op_fusion`."""
    main = max(g.fused, key=lambda k: k.mean_us)
    fcat = main.category
    if len(g.fused) == 1 and classifier.is_fused(fcat) and set(cats_c) <= set(classifier.components(fcat)) \
            and len(set(cats_c)) >= 2:
        return "fused_category", fcat
    if len(g.fused) == 1 and fcat in cats_c:
        extra = {c for c in cats_c if c != fcat}
        if len(extra) == 1:
            x = next(iter(extra))
            if not fused_side_counts.get(x) and classifier.matches(main.name, x):
                return "sequence", fcat
    return "op_fusion", fcat


def find_op_fusions(sides: dict, labels: dict[str, str], classifier, alignments: list[LayerAlignment],
                    counts: dict, params: dict, estimate) -> tuple[list[FusionFinding], dict[str, np.ndarray]]:
    """Op-level fusion findings over the aligned layers, and per side a mask (over the side view's
    positions) of the kernels they claim. `sides` maps "a"/"b" to the comparison's side views,
    `counts[side]` is its kernel count per category family, `params[side]` its fusion-model
    parameters and `estimate` the benefit model."""
    cache: dict[tuple, KernelOps] = {}

    def maker(s: str):
        v = sides[s]
        m = v.m

        fields = attrgetter(f"{s}_name", f"{s}_row", f"{s}_category", s)   # one call a pair

        def make(p: KernelPair, index: int) -> _K | None:
            name, row, cat, st = fields(p)
            if name is None:
                return None
            cat = cat or "Other"
            op = m.cpu_op_name(row) or "" if row >= 0 else ""
            key = (name, op, cat)
            ko = cache.get(key)
            if ko is None:
                ko = cache[key] = _kernel_ops(name, op, cat, classifier)
            return _K(s, p.position, index, name, cat, row, st.mean_us, st.total_us, st.count, ko)
        return make

    kops = {"a": maker("a"), "b": maker("b")}
    calls: dict[str, object] = {}
    mcache: dict[str, dict] = {"a": {}, "b": {}}

    def modpath(s: str, row: int) -> tuple:
        """The module calls around kernel `row`'s launch (labels with instance numbers)."""
        if s not in calls:
            from kerneldiff.core.analysis.modules import module_calls

            calls[s] = module_calls(sides[s].m)
        if row < 0 or not len(calls[s]):
            return ()
        hit = mcache[s].get(row)
        if hit is None:
            from kerneldiff.core.analysis.modules import module_path

            hit = mcache[s][row] = tuple(module_path(sides[s].m, row, calls[s]))
        return hit

    instances: list[_Instance] = []
    grouped: dict = {}   # layer_groups' memo: the layers aligned alike
    for al in alignments:
        if not al.pairs:
            continue
        for g in layer_groups(al, kops, classifier, modpath, grouped):
            instances.append(_Instance(al.layer, g, {"a": al.a_passes, "b": al.b_passes}))
    claimed = {s: np.zeros(len(sides[s].dur), dtype=bool) for s in ("a", "b")}
    if not instances:
        return [], claimed

    def module(s: str, ks: list[_K]) -> str:
        """The component side's (eager) module, else the fused side's."""
        return _module_of([modpath(s, k.row) for k in ks], [k.mean_us for k in ks])

    by_key: dict[tuple, list[_Instance]] = {}
    seen: dict[tuple, str] = {}   # layers with the same kernels run them in the same module classes
    for inst in instances:
        g = inst.group
        c = "b" if g.fused_side == "a" else "a"
        sig = (g.fused_side, tuple(k.name for k in g.components), tuple(k.name for k in g.fused))
        if sig not in seen:
            seen[sig] = module(c, g.components) or module(g.fused_side, g.fused)
        inst.module = seen[sig]
        main = max(g.fused, key=lambda k: k.mean_us)
        key = (g.fused_side, main.category, inst.module, g.attention)
        by_key.setdefault(key, []).append(inst)

    findings: list[FusionFinding] = []
    for key, insts in by_key.items():
        findings.append(_finding(key, insts, sides, labels, classifier, counts, params, estimate))
        _mark(insts, alignments, len(findings) - 1)
    _claim(sides, alignments, claimed)
    return findings, claimed


def _gk(k: _K, mean_us: float) -> GroupKernel:
    return GroupKernel(name=k.name, ops=display_ops(k.ko), category=k.category, mean_us=mean_us, row=k.row)


def _finding(key, insts: list[_Instance], sides, labels, classifier, counts, params, estimate) -> FusionFinding:
    fused_side, _, module, attention = key
    c = "b" if fused_side == "a" else "a"
    comp_cost = fused_cost = measured = 0.0
    occurrences = 0
    passes = max(i.passes[c] for i in insts)
    per_layer: dict[int, int] = {}
    for inst in insts:
        g = inst.group
        pc = max(inst.passes[c], 1)
        comp_total = sum(k.total_us for k in g.components)
        fused_total = sum(k.total_us for k in g.fused)
        fused_mean = sum(k.mean_us for k in g.fused)
        comp_cost += comp_total
        fused_cost += fused_total
        measured += comp_total - fused_mean * pc
        occurrences += pc
        per_layer[inst.layer] = per_layer.get(inst.layer, 0) + 1
    # the representative: the most common shape of the group (kernel counts), first layer first
    shapes: dict[tuple, list[_Instance]] = {}
    for inst in insts:
        shapes.setdefault((len(inst.group.fused), len(inst.group.components)), []).append(inst)
    rep_list = max(shapes.values(), key=len)
    rep = rep_list[0].group

    def mean_at(side_list: str, i: int) -> float:
        return float(np.mean([getattr(x.group, side_list)[i].mean_us for x in rep_list]))

    fused_group = [_gk(k, mean_at("fused", i)) for i, k in enumerate(rep.fused)]
    comp_group = [_gk(k, mean_at("components", i)) for i, k in enumerate(rep.components)]
    cats_c = list(dict.fromkeys(k.category for k in rep.components))
    kind, fcat = _kind(rep, cats_c, counts[fused_side], classifier)
    if attention:
        fcat = next((k.category for k in rep.fused if "attention" in k.ko.atoms), fcat)
    fused_each = sum(k.mean_us for k in fused_group)
    comp_each = sum(k.mean_us for k in comp_group)
    n_f = sorted({len(i.group.fused) for i in insts})
    n_c = sorted({len(i.group.components) for i in insts})
    per_pass = sum(per_layer.values())
    n_layers = len(per_layer)
    fused_names = _top_names([k for i in insts for k in i.group.fused])
    comp_names = _top_names([k for i in insts for k in i.group.components])
    fused_ops = list(dict.fromkeys(o for i in [rep_list[0]] + insts for k in i.group.fused for o in display_ops(k.ko)))
    comp_ops = [", ".join(display_ops(k.ko)) or k.category for k in rep.components]
    mb = sum(k.mean_us for k in rep.components if classifier.role(k.category) in
             ("norm", "elementwise", "memory", "activation", "reduce", "other"))
    est = estimate(params[c], kernels_before=len(rep.components), kernels_after=len(rep.fused),
                   occurrences=occurrences, memory_bound_us=mb,
                   device_bytes=_bytes_saved(sides, c, rep.components, fused_side, rep.fused))
    cap_saving(est, comp_cost, comp_cost / max(occurrences, 1))
    from kerneldiff.core.names.display import short_name

    def names(ks: list[GroupKernel], width: int = 48) -> str:
        return ", ".join(short_name(k.name, width) for k in ks[:3]) + (f" +{len(ks) - 3}" if len(ks) > 3 else "")

    where = f" in {module}" if module else ""
    layers_txt = f"{per_layer_txt(per_layer)} in {n_layers} layer{'s' if n_layers != 1 else ''}"
    evidence = (f"{labels[fused_side]} runs {names(fused_group)} ({_n_range(n_f, 'kernel')}, "
                f"{fused_each:.1f} µs) where {labels[c]} runs {_ops_text(rep.components)} "
                f"({_n_range(n_c, 'kernel')}, {comp_each:.1f} µs){where}: {layers_txt}, {per_pass} per pass "
                f"over {passes} pass{'es' if passes != 1 else ''}; measured saving {measured / max(passes, 1):.1f} µs "
                f"per pass, {measured:.1f} µs in all.")
    consistent = len(rep_list) / len(insts)
    conf = round(min(0.95, 0.6 + 0.25 * consistent + 0.1 * min(n_layers, 4) / 4), 2)
    return FusionFinding(
        kind=kind, fused_side=fused_side, fused_kernels=fused_names[:4], fused_category=fcat, component_side=c,
        component_kernels=comp_names[:8], component_categories=cats_c, occurrences=occurrences, evidence=evidence,
        confidence=conf, component_cost_us=comp_cost, fused_cost_us=fused_cost, estimated_saving=est,
        fused_ops=fused_ops, component_ops=comp_ops, module=module, measured_saving_us=measured, passes=passes,
        occurrences_per_pass=per_pass, layers=sorted(per_layer), fused_group=fused_group,
        component_group=comp_group)


def _bytes_saved(sides, c: str, components: list[_K], f: str, fused: list[_K]) -> float | None:
    """Device traffic a fusion removes per occurrence, from the recorded shapes: the bytes the
    component kernels must move minus those the fused kernels move (what the fused kernels keep in
    registers). None when a kernel's bytes are unknown (no shapes, an operator the byte model does
    not read): the estimate then prices the traffic from time and gives no byte count."""
    from kerneldiff.core.analysis.flops import kernels_bytes

    comp = kernels_bytes(sides[c].m, [k.row for k in components])
    fused = kernels_bytes(sides[f].m, [k.row for k in fused])
    return None if comp is None or fused is None else comp - fused


def _top_names(ks: list[_K]) -> list[str]:
    """Distinct kernel names, largest total time first."""
    t: dict[str, float] = {}
    for k in ks:
        t[k.name] = t.get(k.name, 0.0) + k.total_us
    return sorted(t, key=lambda n: -t[n])


def per_layer_txt(per_layer: dict[int, int]) -> str:
    n = sorted(set(per_layer.values()))
    return f"{n[0]} per layer" if len(n) == 1 else f"{n[0]}–{n[-1]} per layer"


def _n_range(ns: list[int], word: str) -> str:
    """"9 kernels", or "8–9 kernels" when the layers differ."""
    return _n(ns[0], word) if len(ns) == 1 else f"{ns[0]}–{ns[-1]} {word}s"


def _n(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _ops_text(ks: list[_K]) -> str:
    """`aten::add, _to_copy, pow, …`: the launching operators in order, the namespace said once."""
    out, last_ns = [], None
    for k in ks:
        ops = display_ops(k.ko)
        if not ops:
            out.append(k.category)
            continue
        for o in ops[:1] if not k.ko.inductor else [k.name]:
            ns, sep, nm = o.rpartition("::")
            if sep and ns == last_ns:
                out.append(nm)
            else:
                out.append(o)
                last_ns = ns if sep else None
    return ", ".join(out)


def cap_saving(est, cap_all_us: float, cap_each_us: float) -> None:
    """Cap a benefit-model estimate at the measured component time (in all, and per occurrence)."""
    if est is None:
        return
    if est.total_all_us > cap_all_us or est.total_us > cap_each_us:
        est.capped = True
    est.total_all_us = max(0.0, min(est.total_all_us, cap_all_us))
    est.total_us = max(0.0, min(est.total_us, cap_each_us))


def group_note(fused_side: str, fused: int, components: int) -> str:
    """'1 kernel on B for 9 on A': a group's note, in words, from its fused side and sizes."""
    other = "b" if fused_side == "a" else "a"
    return f"{_n(fused, 'kernel')} on {fused_side.upper()} for {components} on {other.upper()}"


def _mark(insts: list[_Instance], alignments: list[LayerAlignment], finding: int) -> None:
    """Record each group on its layer's alignment and on its pairs (for the pair views)."""
    by_layer = {al.layer: al for al in alignments}
    for inst in insts:
        al = by_layer[inst.layer]
        g = inst.group
        gid = len(al.groups)
        pos = sorted({k.pos for k in g.fused} | {k.pos for k in g.components})
        note = group_note(g.fused_side, len(g.fused), len(g.components))
        al.groups.append(PairGroup(id=gid, fused_side=g.fused_side, positions=pos,
                                   fused_positions=[k.pos for k in g.fused],
                                   component_positions=[k.pos for k in g.components], finding=finding, note=note,
                                   a_indices=[k.index for k in (g.fused if g.fused_side == "a" else g.components)],
                                   b_indices=[k.index for k in (g.fused if g.fused_side == "b" else g.components)]))
        for p in al.pairs:
            if p.position in pos:
                p.group = gid


def _claim(sides: dict, alignments: list[LayerAlignment], claimed: dict[str, np.ndarray]) -> None:
    """Mark, in every pass that runs a layer's most common kernel sequence, the kernels its groups hold."""
    for s, found in finding_of_kernels(sides, alignments).items():
        claimed[s] |= found >= 0


def finding_of_kernels(sides: dict, alignments: list[LayerAlignment]) -> dict[str, np.ndarray]:
    """Per side, over the side view's positions: the finding (`PairGroup.finding`) whose group holds
    each kernel, in every pass that runs its layer's most common kernel sequence (the passes the
    finding measured), −1 elsewhere."""
    out = {s: np.full(len(sides[s].dur), -1, dtype=np.int64) for s in ("a", "b")}
    want = {al.layer: al for al in alignments if al.groups}
    if not want:
        return out
    for s in ("a", "b"):
        v = sides[s]
        k = v.m.kernels
        lay = v._take(k.layer)
        step = v._take(k.step)
        sel = np.flatnonzero(np.isin(lay, np.fromiter(want, dtype=np.int64)))
        if not len(sel):
            continue
        order = sel[np.lexsort((sel, step[sel], lay[sel]))]
        bounds = np.flatnonzero(np.diff(lay[order])) + 1
        for seg in np.split(order, bounds):
            al = want[int(lay[seg[0]])]
            modal = np.asarray([getattr(p, f"{s}_row") for p in al.pairs if getattr(p, f"{s}_name") is not None],
                               dtype=np.int64)
            owner: dict[int, int] = {}
            for g in al.groups:
                for i in (g.a_indices if s == "a" else g.b_indices):
                    owner.setdefault(i, g.finding)
            idx = np.asarray(sorted(owner), dtype=np.int64)
            n = len(modal)
            if not n or not len(idx):
                continue
            # the passes of this layer that run its most common sequence: as many kernels, the same names
            steps, first, count = np.unique(step[seg], return_index=True, return_counts=True)
            full = first[count == n]
            if not len(full):
                continue
            cells = seg[full[:, None] + np.arange(n)]
            same = (v.name[cells] == k.name[modal][None, :]).all(axis=1)
            hit = cells[same][:, idx]
            out[s][hit] = np.broadcast_to(np.asarray([owner[i] for i in idx.tolist()], dtype=np.int64), hit.shape)
    return out
