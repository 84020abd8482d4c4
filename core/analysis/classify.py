"""Kernel -> (category, reason), driven by the data in `registry.toml`.

Three kinds of rules, all data (see the registry's header for the precedence):
* `[[rules]]` — kernel-name rules, ordered, first match wins. Rules marked `generic` are family
  guesses ("cudnn", "gemm", "reduce") that the launching operator may overrule.
* `[[inductor_rules]]` — Inductor kernels (`triton_{poi,red,per,tem,for}_fused_<ops>_<n>`) are
  classified by their kind and the ops their name lists (`parse_inductor`), never by kernel-name
  rules, so one word of a long op list (`_scaled_dot_product_cudnn_attention`) decides nothing.
* `[[op_rules]]` — the operator that launched a kernel (its cpu_op: `aten::mm`,
  `aten::_cudnn_attention_forward`, `vllm::unified_attention_with_output`, ...) decides a kernel
  that no name rule or only a generic one matched (`Classifier.assign`).

A user registry file has the same format; its rules of each kind are tried first (same id
replaces the shipped rule) and its `[categories]` entries add or override metadata.

Each name is lowercased once (see `match_text`); `contains` entries and metacharacter-free
regexes are tested as plain substrings, the rest as precompiled regexes (they should start with
a literal so `re` can use its fast prefix search). Results are cached per name and per op name.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import ahocorasick

from kerneldiff.core.analysis.linear_regex import UnsafeRegex, compile_linear
from kerneldiff.core.errors import TraceError
from kerneldiff.core.names.parts import qualified_prefix, strip_args
from kerneldiff.core.numbers import small_unique

OTHER = "Other"
ROLES = ("attention", "norm", "gemm", "moe", "ssm", "comm", "elementwise", "memory", "other")
VENDORS = ("AMD", "NVIDIA", "any")
INDUCTOR_KINDS = ("poi", "red", "per", "tem", "for")   # pointwise, reduction, persistent reduction, template, foreach
GENERIC = "generic"                      # `over` entry: kernels only a generic name rule (or none) matched
_RULE_KEYS = {"id", "category", "contains", "regex", "vendor", "examples", "generic"}
_OP_RULE_KEYS = {"id", "category", "ops", "regex", "over", "examples"}
_INDUCTOR_RULE_KEYS = {"id", "category", "kinds", "all", "any", "only", "none", "examples"}
_CATEGORY_KEYS = {"role", "components", "group"}
_TOP_KEYS = {"rules", "categories", "op_rules", "inductor_rules", "inductor_groups"}
SHIPPED = "core/registry.toml"           # how the shipped file is named in error messages


@dataclass(frozen=True)
class Rule:
    id: str
    category: str
    contains: tuple[str, ...]    # lowercase substrings
    regex: tuple[str, ...]       # Python regex sources
    vendor: str = "any"
    examples: tuple[str, ...] = ()
    generic: bool = False        # a family guess the launching operator may overrule
    user: bool = False           # from a user's registry: its regexes run on RE2 (linear_regex)


@dataclass(frozen=True)
class OpRule:
    """Launching operator -> category, for kernels whose name decides nothing better."""
    id: str
    category: str
    ops: tuple[str, ...]         # exact operator names
    regex: tuple[str, ...]       # Python regexes matched against the WHOLE operator name
    over: tuple[str, ...] = (GENERIC,)   # what it may overrule: "generic" and/or name categories
    examples: tuple[str, ...] = ()       # operator names that must resolve to this rule
    user: bool = False                   # from a user's registry: its regexes run on RE2


@dataclass(frozen=True)
class InductorRule:
    """Inductor kernel (kind + listed ops) -> category. Every condition given must hold."""
    id: str
    category: str
    kinds: tuple[str, ...] = ()  # empty: any kind
    all: tuple[str, ...] = ()    # every one of these ops is listed
    any: tuple[str, ...] = ()    # at least one of these is listed
    only: tuple[str, ...] = ()   # at least one op is listed and every listed op is one of these
    none: tuple[str, ...] = ()   # none of these is listed
    examples: tuple[str, ...] = ()   # kernel names that must resolve to this rule


@dataclass(frozen=True)
class InductorKernel:
    """What an Inductor kernel's name says: `triton_<kind>_fused_<op>_<op>..._<n>`."""
    kind: str                    # one of INDUCTOR_KINDS
    ops: tuple[str, ...]         # the listed ops (aten overload-packet names), as listed
    index: int | None            # the trailing kernel number


# --- names ----------------------------------------------------------------------------------

# Rules see at most this many characters of a name (real kernel names, mangled ones included, stay
# under ~3,000). A user's regex may backtrack quadratically, so its cost must be bounded by a length
# the trace cannot choose; longer names are cut for matching only (and counted, see `assign`).
MAX_MATCH_CHARS = 4096


def is_cut_for_matching(name: str) -> bool:
    """Does `match_text` see only the start of `name`?"""
    return len(name) > MAX_MATCH_CHARS


def match_text(name: str) -> str:
    """The lowercase text rules are matched against (see registry.toml header): a name's first
    MAX_MATCH_CHARS characters (its parameter list, which would come last, is not looked for)."""
    if len(name) > MAX_MATCH_CHARS:
        name = name[:MAX_MATCH_CHARS]
    elif not name.startswith("_Z"):
        return strip_args(name).lower()
    if name.startswith("_Z"):
        # readable and mangled forms: CK hides the op (Rmsnorm2dFwd) in mangled template args
        return f"{qualified_prefix(name)[:MAX_MATCH_CHARS]} {name}".lower()
    return name.lower()


# --- Inductor kernel names -----------------------------------------------------------------
#
# Inductor names a fused kernel "triton_" + kind + "_fused_" + the ops it was made from, joined
# by "_", + "_" + a kernel number (torch/_inductor: get_fused_kernel_name + next_kernel_suffix).
# The ops are aten overload-packet names (`original_aten`), de-duplicated and SORTED, at most
# `kernel_name_max_ops` of them. Op names contain "_" themselves (`_to_copy`, `bitwise_and`,
# `_scaled_dot_product_cudnn_attention`), so the text splits ambiguously; the split chosen is the
# cheapest one (known op names are cheap, unknown words dear) that keeps the ops in sorted order.
# Known names: the list below plus every op the registry's Inductor rules mention.

_INDUCTOR_NAME = re.compile(r"^triton_(poi|red|per|tem|for)(?:_fused(?:_(.*?))??(?:_([0-9]+))?|_([0-9]+))$", re.S)
_INDUCTOR_PREFIX = re.compile(r"triton_(poi|red|per|tem|for)_")
_MAX_SPAN = 10                      # tokens in one op name (`_scaled_dot_product_flash_attention_for_cpu`: 8)
_MAX_TOKENS = 400                   # longer op lists are not split (cost); Inductor lists ~10 ops

KNOWN_OPS = frozenset("""
_adaptive_avg_pool2d _adaptive_avg_pool2d_backward _cdist_forward _cudnn_attention_forward
_efficient_attention_forward _embedding_bag _flash_attention_forward _foreach_add _foreach_mul
_fused_rms_norm _int_mm _log_softmax _log_softmax_backward_data _native_batch_norm_legit
_native_batch_norm_legit_functional _native_batch_norm_legit_no_training _reshape_alias
_safe_softmax _scaled_dot_product_attention_math _scaled_dot_product_cudnn_attention
_scaled_dot_product_efficient_attention _scaled_dot_product_flash_attention
_scaled_dot_product_flash_attention_for_cpu _scaled_dot_product_fused_attention_overrideable
_scaled_grouped_mm _scaled_mm _softmax _softmax_backward_data _to_copy _unsafe_index
_unsafe_index_put _unsafe_masked_index _unsafe_view _weight_int4pack_mm _weight_int8pack_mm
abs acos acosh adaptive_avg_pool2d add addcdiv addcmul addmm addmv alias all amax amin any
arange argmax argmin as_strided as_strided_scatter asin atan atan2 avg_pool2d
avg_pool2d_backward baddbmm batch_norm bernoulli bitwise_and bitwise_left_shift bitwise_not
bitwise_or bitwise_right_shift bitwise_xor bmm bucketize cat ceil clamp clamp_max clamp_min
clone constant_pad_nd contiguous convert_element_type convolution convolution_backward copy
cos cosh cumprod cumsum diagonal diagonal_scatter div elu embedding embedding_dense_backward
empty empty_like eq erf erfinv exp exp2 expand expand_as expm1 fill flatten flex_attention
flex_attention_backward flip floor fmod full full_like gather ge gelu gelu_backward glu gt
hardsigmoid hardswish hardtanh index index_add index_copy index_put index_select isinf isnan
layer_norm le leaky_relu lerp lift_fresh_copy linear log log10 log1p log2 log_softmax
logical_and logical_not logical_or logical_xor logsumexp lt masked_fill max max_pool2d_with_indices
max_pool2d_with_indices_backward maximum mean min minimum mish mm mse_loss mul mv nan_to_num
narrow native_batch_norm native_batch_norm_backward native_dropout native_group_norm
native_group_norm_backward native_layer_norm native_layer_norm_backward ne neg new_empty
new_full new_ones new_zeros nll_loss_backward nll_loss_forward norm ones ones_like permute pow
prod rand rand_like randn randn_like reciprocal reflection_pad2d relu remainder repeat
replication_pad2d reshape rms_norm round rsqrt rsub scalar_tensor scatter scatter_add
scatter_reduce select select_scatter sigmoid sigmoid_backward sign silu silu_backward sin sinh
slice slice_scatter softmax softplus sort split split_with_sizes sqrt square squeeze stack std
sub sum t tanh tanh_backward threshold_backward topk transpose tril triu trunc unbind unfold
unsqueeze upsample_bilinear2d upsample_nearest2d var var_mean view view_as view_as_complex
view_as_real where zeros zeros_like
""".split())


def _segment(tokens: list[str], known: frozenset[str], ordered: bool) -> list[str] | None:
    """Cheapest split of `tokens` into op names (each "_".join of a run of tokens): a known name
    costs 1, an unknown one 3 per word; with `ordered`, the ops must be strictly increasing.
    None if no split qualifies."""
    n = len(tokens)
    # every candidate op tokens[i:j]: its text and cost (None: no word in it)
    span: dict[tuple[int, int], tuple[str, float]] = {}
    for i in range(n):
        words = 0
        for j in range(i + 1, min(n, i + _MAX_SPAN) + 1):
            words += bool(tokens[j - 1])
            if words:
                text = "_".join(tokens[i:j])
                span[(i, j)] = (text, 1.0 if text in known else 3.0 * words)
    # best[(i, j)]: (cost, previous start) of the cheapest split of tokens[:j] ending with op tokens[i:j]
    best: dict[tuple[int, int], tuple[float, int]] = {}
    for j in range(1, min(n, _MAX_SPAN) + 1):
        if (0, j) in span:
            best[(0, j)] = (span[(0, j)][1], -1)
    for j in range(1, n):
        for i in range(max(0, j - _MAX_SPAN), j):
            cur = best.get((i, j))
            if cur is None:
                continue
            last = span[(i, j)][0]
            for k in range(j + 1, min(n, j + _MAX_SPAN) + 1):
                nxt = span.get((j, k))
                if nxt is None or (ordered and not last < nxt[0]):
                    continue
                total = cur[0] + nxt[1]
                old = best.get((j, k))
                if old is None or total < old[0]:
                    best[(j, k)] = (total, i)
    ends = [(v[0], i) for (i, j), v in best.items() if j == n]
    if not ends:
        return None
    _, i = min(ends)
    out, j = [], n
    while i >= 0:
        out.append(span[(i, j)][0])
        i, j = best[(i, j)][1], i
    return out[::-1]


def parse_inductor(name: str, known: frozenset[str] | None = None) -> InductorKernel | None:
    """The kind and listed ops of an Inductor kernel name; None if `name` is not one.

    >>> parse_inductor("triton_poi_fused__to_copy__unsafe_view_mul_silu_9").ops
    ('_to_copy', '_unsafe_view', 'mul', 'silu')
    """
    if len(name) > MAX_MATCH_CHARS:              # no Inductor name is this long: its start as words
        m = _INDUCTOR_PREFIX.match(name)
        if m is None:
            return None
        words = name[m.end():MAX_MATCH_CHARS].split("_")[:-1]    # the last word may be cut
        return InductorKernel(m.group(1), tuple(w for w in words[1:] if w) if words[0] == "fused" else (), None)
    m = _INDUCTOR_NAME.match(name)
    if m is None:
        return None
    kind, body, digits = m.group(1), m.group(2) or "", m.group(3) or m.group(4)
    index = int(digits) if digits is not None and len(digits) <= 18 else None   # int() limits digits
    ops: tuple[str, ...] = ()
    if body:
        tokens = body.split("_")
        if len(tokens) > _MAX_TOKENS:           # not Inductor's (it lists a handful of ops): words as ops
            return InductorKernel(kind, tuple(t for t in tokens if t), index)
        known = KNOWN_OPS if known is None else known
        seg = _segment(tokens, known, ordered=True) or _segment(tokens, known, ordered=False) or [body]
        ops = tuple(seg)
    return InductorKernel(kind, ops, index)


def inductor_ops(name: str) -> tuple[str, ...]:
    """The ops an Inductor kernel's name lists (as the shipped registry parses them); () for any
    other kernel. E.g. "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0" ->
    ('_to_copy', 'add', 'mean', 'mul', 'pow', 'rsqrt')."""
    return _default_classifier().inductor_ops(name)


# --- registry parsing ----------------------------------------------------------------------

def _str_list(value, what: str, path: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise TraceError(path, f"{what} must be a string or a list of strings")


@dataclass
class _Registry:
    rules: list[Rule]
    meta: dict[str, dict]
    op_rules: list[OpRule]
    inductor_rules: list[InductorRule]
    groups: dict[str, tuple[str, ...]]


def _compiler(user: bool):
    """A user's patterns compile for RE2 (linear time whatever they are); the shipped ones for re."""
    return compile_linear if user else re.compile


def _check_regex(rx: str, flags: int, where: str, path: str, user: bool) -> None:
    try:
        _compiler(user)(rx, flags)
    except re.error as e:
        raise TraceError(path, f"{where}: bad regex {rx!r}: {e}") from None
    except UnsafeRegex as e:
        raise TraceError(path, f"{where}: {e}") from None


def _parse(doc: dict, path: str, user: bool = True, checked: bool = False) -> _Registry:
    """The registry in `doc`; `checked`: its regexes compiled before (a cached shipped registry),
    so they are not compiled again here."""
    extra = set(doc) - _TOP_KEYS
    if extra:
        raise TraceError(path, f"unknown top-level key(s) {sorted(extra)}; expected [[rules]], [[op_rules]], "
                               "[[inductor_rules]], [inductor_groups] and [categories]")
    cats = doc.get("categories", {})
    if not isinstance(cats, dict):
        raise TraceError(path, "[categories] must be a table of tables")
    meta: dict[str, dict] = {}
    for cname, m in cats.items():
        if not isinstance(m, dict):
            raise TraceError(path, f"category {cname!r} must be a table (role = ...)")
        bad = set(m) - _CATEGORY_KEYS
        if bad:
            raise TraceError(path, f"category {cname!r}: unknown key(s) {sorted(bad)}")
        if "role" in m and m["role"] not in ROLES:
            raise TraceError(path, f"category {cname!r}: role {m['role']!r} is not one of {', '.join(ROLES)}")
        if "components" in m:
            m = {**m, "components": _str_list(m["components"], f"category {cname!r} components", path)}
        if "group" in m and not isinstance(m["group"], str):
            raise TraceError(path, f"category {cname!r}: group must be a string")
        meta[cname] = dict(m)

    raw_rules = doc.get("rules", [])
    if not isinstance(raw_rules, list):
        raise TraceError(path, "rules must be an array of tables ([[rules]])")
    rules: list[Rule] = []
    seen: set[str] = set()
    for k, r in enumerate(raw_rules, 1):
        if not isinstance(r, dict):
            raise TraceError(path, f"rule #{k} must be a table")
        rid = r.get("id")
        if not isinstance(rid, str) or not rid:
            raise TraceError(path, f"rule #{k} has no id")
        where = f"rule {rid!r}"
        bad = set(r) - _RULE_KEYS
        if bad:
            raise TraceError(path, f"{where}: unknown key(s) {sorted(bad)}")
        if rid in seen:
            raise TraceError(path, f"{where} is defined twice")
        seen.add(rid)
        cat = r.get("category")
        if not isinstance(cat, str) or not cat:
            raise TraceError(path, f"{where} has no category")
        vendor = r.get("vendor", "any")
        if vendor not in VENDORS:
            raise TraceError(path, f"{where}: vendor {vendor!r} is not one of {', '.join(VENDORS)}")
        contains = _str_list(r.get("contains", []), f"{where} contains", path)
        regexes = _str_list(r.get("regex", []), f"{where} regex", path)
        if not contains and not regexes:
            raise TraceError(path, f"{where} needs `contains` or `regex`")
        for rx in regexes:
            if not rx:
                raise TraceError(path, f"{where}: empty regex would match every kernel")
            # with the flags the classifier compiles it with (`_compile`): that compile then comes
            # from re's (or compile_linear's) cache instead of compiling each pattern twice
            if not checked:
                _check_regex(rx, _rule_flags(rx), where, path, user)
        if not any(contains) and not regexes:
            raise TraceError(path, f"{where}: empty `contains`")
        examples = tuple(_str_list(r.get("examples", []), f"{where} examples", path))
        generic = r.get("generic", False)
        if not isinstance(generic, bool):
            raise TraceError(path, f"{where}: generic must be true or false")
        rules.append(Rule(rid, cat, tuple(c.lower() for c in contains if c), tuple(regexes), vendor, examples,
                          generic, user))
    return _Registry(rules, meta, _parse_op_rules(doc, path, user, checked), _parse_inductor_rules(doc, path),
                     _parse_groups(doc, path))


def _tables(doc: dict, key: str, path: str) -> list[dict]:
    raw = doc.get(key, [])
    if not isinstance(raw, list):
        raise TraceError(path, f"{key} must be an array of tables ([[{key}]])")
    ids: set[str] = set()
    for k, r in enumerate(raw, 1):
        if not isinstance(r, dict):
            raise TraceError(path, f"{key} #{k} must be a table")
        rid = r.get("id")
        if not isinstance(rid, str) or not rid:
            raise TraceError(path, f"{key} #{k} has no id")
        if rid in ids:
            raise TraceError(path, f"{key} {rid!r} is defined twice")
        ids.add(rid)
        cat = r.get("category")
        if not isinstance(cat, str) or not cat:
            raise TraceError(path, f"{key} {rid!r} has no category")
    return raw


def _parse_op_rules(doc: dict, path: str, user: bool, checked: bool = False) -> list[OpRule]:
    out = []
    for r in _tables(doc, "op_rules", path):
        where = f"op rule {r['id']!r}"
        bad = set(r) - _OP_RULE_KEYS
        if bad:
            raise TraceError(path, f"{where}: unknown key(s) {sorted(bad)}")
        ops = _str_list(r.get("ops", []), f"{where} ops", path)
        regexes = _str_list(r.get("regex", []), f"{where} regex", path)
        if not any(ops) and not any(regexes):
            raise TraceError(path, f"{where} needs `ops` or `regex`")
        for rx in regexes:
            if not checked:
                _check_regex(rx, 0, where, path, user)
        over = _str_list(r.get("over", [GENERIC]), f"{where} over", path)
        if not over:
            raise TraceError(path, f"{where}: empty `over` would never apply")
        examples = _str_list(r.get("examples", []), f"{where} examples", path)
        out.append(OpRule(r["id"], r["category"], tuple(o for o in ops if o), tuple(x for x in regexes if x),
                          tuple(over), tuple(examples), user))
    return out


def _parse_inductor_rules(doc: dict, path: str) -> list[InductorRule]:
    out = []
    for r in _tables(doc, "inductor_rules", path):
        where = f"inductor rule {r['id']!r}"
        bad = set(r) - _INDUCTOR_RULE_KEYS
        if bad:
            raise TraceError(path, f"{where}: unknown key(s) {sorted(bad)}")
        kinds = _str_list(r.get("kinds", []), f"{where} kinds", path)
        for k in kinds:
            if k not in INDUCTOR_KINDS:
                raise TraceError(path, f"{where}: kind {k!r} is not one of {', '.join(INDUCTOR_KINDS)}")
        conds = {c: tuple(_str_list(r.get(c, []), f"{where} {c}", path)) for c in ("all", "any", "only", "none")}
        examples = _str_list(r.get("examples", []), f"{where} examples", path)
        out.append(InductorRule(r["id"], r["category"], tuple(kinds), examples=tuple(examples), **conds))
    return out


def _parse_groups(doc: dict, path: str) -> dict[str, tuple[str, ...]]:
    raw = doc.get("inductor_groups", {})
    if not isinstance(raw, dict):
        raise TraceError(path, "[inductor_groups] must be a table of op lists")
    return {g: tuple(_str_list(v, f"inductor group {g!r}", path)) for g, v in raw.items()}


def _read_toml(path: str, text: str) -> dict:
    import tomllib   # here: a process with the shipped registry cached never imports it

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TraceError(path, f"invalid TOML: {e}") from None


# --- the shipped registry, compiled once ------------------------------------------------------
# Reading registry.toml (TOML parse, every regex compiled to check it, each regex's required
# literal parsed out of it) cost ~10 ms of CPU in every process, more on a busy machine. The
# result is kept in the user's cache dir as JSON (no pickle), keyed by the registry's text and
# this module's code; a process that finds it reads it in ~0.2 ms and compiles a shipped regex
# only when a name first needs it (_LazyPattern).

_GATES: dict[tuple[str, int], str | None] = {}   # (pattern, flags) -> required literal, from the cache


def registry_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kerneldiff" / "registry"


def _registry_key(text: str) -> str:
    h = hashlib.sha256(text.encode("utf-8"))
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:32]


def _cached_doc(file: Path) -> dict | None:
    """The cached shipped registry, its gates loaded into _GATES; None when absent or unreadable."""
    try:
        blob = json.loads(file.read_bytes())
        doc, gates = blob["doc"], blob["gates"]
        if not isinstance(doc, dict) or not isinstance(gates, list):
            return None
        for pattern, flags, lit in gates:
            if not (isinstance(pattern, str) and isinstance(flags, int) and (lit is None or isinstance(lit, str))):
                return None
        _GATES.update(((pattern, flags), lit) for pattern, flags, lit in gates)
        return doc
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store_doc(file: Path, doc: dict, reg: _Registry) -> None:
    """Keep the parsed registry and each regex's required literal for the next process (best
    effort: a read-only or full cache dir only costs the next process the parse)."""
    gates = []
    sources = [(rx, _rule_flags(rx)) for r in reg.rules for rx in r.regex if re.escape(rx) != rx]
    sources += [(rx, 0) for r in reg.op_rules for rx in r.regex]
    for rx, flags in sources:
        compiled = re.compile(rx, flags)
        gates.append([rx, compiled.flags, required_literal(compiled)])
    try:
        blob = json.dumps({"doc": doc, "gates": gates}).encode()
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f"{file.name}.{os.getpid()}.tmp")
        tmp.write_bytes(blob)
        os.replace(tmp, file)
        for old in file.parent.glob("shipped-*.json"):   # other versions' files: one is kept
            if old != file:
                old.unlink(missing_ok=True)
    except (OSError, TypeError, ValueError):   # TypeError: a TOML value JSON has no form for
        pass


@lru_cache(maxsize=1)
def _shipped() -> _Registry:
    # beside this module: importlib.resources and its zip readers cost ~4 ms of every start
    text = Path(__file__).with_name("registry.toml").read_text(encoding="utf-8")
    file = registry_cache_dir() / f"shipped-{_registry_key(text)}.json"
    doc = _cached_doc(file)
    if doc is not None:
        try:
            return _parse(doc, SHIPPED, user=False, checked=True)
        except TraceError:   # a cache file that is not what this code wrote: parse the registry
            _GATES.clear()
    doc = _read_toml(SHIPPED, text)
    reg = _parse(doc, SHIPPED, user=False)
    _store_doc(file, doc, reg)
    return reg


class _LazyPattern:
    """A shipped regex, compiled on its first search: most never run (FirstRule runs a regex
    only when its required literal occurs in a name)."""

    __slots__ = ("pattern", "flags", "_rx")

    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern, self.flags, self._rx = pattern, flags, None

    def _compiled(self) -> re.Pattern:
        if self._rx is None:
            self._rx = re.compile(self.pattern, self.flags)
        return self._rx

    def search(self, text: str):
        return self._compiled().search(text)

    def fullmatch(self, text: str):
        return self._compiled().fullmatch(text)


def _merge_by_id(user: list, shipped: list) -> list:
    """User rules first; a shipped rule the user redefines (same id) is dropped."""
    ids = {r.id for r in user}
    return list(user) + [r for r in shipped if r.id not in ids]


class FirstRule:
    """The first rule, in registry order, that a text matches: rule i matches when one of its
    literals occurs in the text or one of its regexes is found there.

    Trying each rule in turn costs one substring search per literal (176 of them), ~100 µs on a
    1 KB name: a trace of a million distinct names spent two minutes here. Instead one
    Aho-Corasick pass finds every literal at once (time linear in the text, whatever the number of
    rules), and a regex is run only when the literal it cannot match without (its longest
    required run of plain characters, read from the parsed pattern) occurs, and only while it
    could still beat the earliest literal hit. Same answer as the rule-by-rule loop (tested)."""

    def __init__(self, rules: list[tuple[tuple[str, ...], tuple[re.Pattern, ...]]]) -> None:
        self._always_best = len(rules)          # a rule with an empty literal matches any text
        self._regexes: list[tuple[int, re.Pattern]] = []      # (rule index, pattern) in rule order
        always: list[int] = []                   # regexes with no required literal: always tried
        keys: dict[str, tuple[int, list[int]]] = {}   # literal -> (earliest rule it decides, gated regexes)
        for i, (literals, regexes) in enumerate(rules):
            for lit in literals:
                if not lit:
                    self._always_best = min(self._always_best, i)
                    continue
                best, gated = keys.get(lit, (len(rules), []))
                keys[lit] = (min(best, i), gated)
            for rx in regexes:
                k = len(self._regexes)
                self._regexes.append((i, rx))
                gate = required_literal(rx)
                if gate is None:
                    always.append(k)
                else:
                    best, gated = keys.get(gate, (len(rules), []))
                    keys[gate] = (best, gated + [k])
        self._always = frozenset(always)
        self._automaton = ahocorasick.Automaton()
        for key, (best, gated) in keys.items():
            self._automaton.add_word(key, (best, tuple(gated)))
        self._automaton.make_automaton()
        self._searchable = bool(keys)             # an automaton with no words cannot iterate
        self._none = len(rules)

    def first_rule(self, text: str) -> int | None:
        best = self._always_best
        candidates = set(self._always)
        if self._searchable:
            for _, (rule, gated) in self._automaton.iter(text):
                if rule < best:
                    best = rule
                candidates.update(gated)
        for k in sorted(candidates):
            rule, rx = self._regexes[k]
            if rule >= best:
                break
            if rx.search(text):
                return rule
        return best if best < self._none else None


def required_literal(rx: re.Pattern) -> str | None:
    """The longest run of plain characters that every match of `rx` contains (None if there is
    none, or if the pattern ignores case: under IGNORECASE a literal also matches other letters,
    such as 'ſ' for 's'). Only the pattern's top-level sequence is read, which always matches whole."""
    if isinstance(rx, _LazyPattern):
        lit = _GATES.get((rx.pattern, rx.flags), False)
        if lit is not False:
            return lit
        rx = rx._compiled()
    if rx.flags & re.IGNORECASE:
        return None
    try:
        from re import _constants as C, _parser as P
        items = P.parse(rx.pattern, rx.flags & ~re.UNICODE)
    except Exception:         # a Python whose re internals differ: no gate, the regex always runs
        return None
    runs, run = [], []
    for op, av in items:
        if op is C.LITERAL:
            run.append(chr(av))
        else:
            runs.append("".join(run))
            run = []
    runs.append("".join(run))
    best = max(runs, key=len)
    return best or None


def _rule_flags(rx: str) -> int:
    return re.S | (re.I if rx != rx.lower() else 0)


def _compile(rule: Rule) -> tuple[Rule, tuple[str, ...], tuple[re.Pattern, ...]]:
    """Literals are tested with `in` (C substring search, ~0.1 µs); only real regexes go to `re`.

    The text is already lowercase, so a regex needs IGNORECASE only if it spells an uppercase
    letter — IGNORECASE also disables re's literal-prefix search and costs ~3x.
    """
    literals = list(rule.contains)
    regexes = []
    for rx in rule.regex:
        if re.escape(rx) == rx:                       # no metacharacters: a plain substring
            literals.append(rx.lower())
        elif rule.user:
            regexes.append(_compiler(True)(rx, _rule_flags(rx)))
        else:
            regexes.append(_lazy(rx, _rule_flags(rx)))
    return rule, tuple(literals), tuple(regexes)


def _lazy(rx: str, flags: int) -> _LazyPattern:
    # the flags re.compile would report (a str pattern adds UNICODE): the gate cache's key
    return _LazyPattern(rx, flags | (0 if flags & re.ASCII else re.UNICODE))


# --- classifier ----------------------------------------------------------------------------

def op_reason(rule_id: str, op: str) -> str:
    """How a kernel's rule reads when its launching operator decided: the operator rule's id and
    the operator ("aten.attention (launched by aten::_cudnn_attention_forward)")."""
    return f"{rule_id} (launched by {op})"


class Classifier:
    """Ordered, first-match-wins kernel classifier. Build with `Classifier.load()`."""

    def __init__(self, rules: list[Rule], meta: dict[str, dict], source: str = SHIPPED, *,
                 op_rules: list[OpRule] = (), inductor_rules: list[InductorRule] = (),
                 inductor_groups: dict[str, tuple[str, ...]] | None = None) -> None:
        meta = dict(meta)
        meta.setdefault(OTHER, {"role": "other"})
        for kind, rs in (("rule", rules), ("op rule", op_rules), ("inductor rule", inductor_rules)):
            for r in rs:
                if r.category not in meta:
                    raise TraceError(source, f"{kind} {r.id!r}: category {r.category!r} is not declared in [categories]")
        for r in op_rules:
            for o in r.over:
                if o != GENERIC and o not in meta:
                    raise TraceError(source, f"op rule {r.id!r}: over {o!r} is neither {GENERIC!r} nor a category")
        for cname, m in meta.items():
            for comp in m.get("components", []):
                if comp not in meta:
                    raise TraceError(source, f"category {cname!r}: component {comp!r} is not a category")
            group = m.get("group")
            if group is not None and group not in meta:
                raise TraceError(source, f"category {cname!r}: group {group!r} is not a category")
        self.rules: list[Rule] = list(rules)
        self.rule_ids: list[str] = [r.id for r in rules]
        self.op_rules: list[OpRule] = list(op_rules)
        self.inductor_rules: list[InductorRule] = list(inductor_rules)
        self.inductor_groups: dict[str, tuple[str, ...]] = dict(inductor_groups or {})
        self.categories: list[str] = [c for c in meta if c != OTHER] + [OTHER]
        self._meta = meta
        self._cache: dict[str, tuple[str, str]] = {}
        self._op_cache: dict[str, OpRule | None] = {}
        self._compiled = [_compile(r) for r in rules]
        self._matcher = FirstRule([(lits, rxs) for _, lits, rxs in self._compiled])
        self._generic = {r.id for r in rules if r.generic}
        # each regex with the literal a whole-name match must contain (None: no gate): an operator
        # name without it is not run through the regex (nor a shipped one compiled for it)
        self._op_compiled = [(r, frozenset(r.ops), tuple((required_literal(rx), rx) for rx in
                                                         (_compiler(True)(x) if r.user else _lazy(x, 0) for x in r.regex)))
                             for r in self.op_rules]
        self._inductor_compiled = [self._compile_inductor(r, source) for r in self.inductor_rules]
        # every op an Inductor rule or group names helps split kernel names (see parse_inductor)
        named = {op for r in self.inductor_rules for c in (r.all, r.any, r.only, r.none) for op in c
                 if not op.startswith("@")}
        named |= {op for g in self.inductor_groups.values() for op in g}
        self._known_ops = KNOWN_OPS | frozenset(named)

    # -- construction --
    @classmethod
    def load(cls, extra: str | Path | None = None) -> "Classifier":
        """The shipped registry, optionally preceded/overridden by the user registry `extra`."""
        if extra is None:
            return _default_classifier()
        shipped = _shipped()
        meta = dict(shipped.meta)
        path = str(extra)
        from kerneldiff.core.fileio import read_config

        text = read_config(path, "registry file")
        user = _parse(_read_toml(path, text), path)
        for cname, m in user.meta.items():       # key-wise override of shipped metadata
            meta[cname] = {**meta.get(cname, {}), **m}
        # user rules first; a shipped rule the user redefines (same id) is dropped
        return cls(_merge_by_id(user.rules, shipped.rules), meta, source=path,
                   op_rules=_merge_by_id(user.op_rules, shipped.op_rules),
                   inductor_rules=_merge_by_id(user.inductor_rules, shipped.inductor_rules),
                   inductor_groups={**shipped.groups, **user.groups})

    # -- classification --
    def classify(self, name: str) -> tuple[str, str]:
        """(category, rule id) of one kernel name; ("Other", "") when no rule matches.

        By the name alone: an Inductor kernel by its kind and listed ops ([[inductor_rules]]),
        any other by the kernel-name rules. `assign` adds what the launching operator says."""
        hit = self._cache.get(name)
        if hit is None:
            hit = self._cache[name] = self._classify(name)
        return hit

    def _classify(self, name: str) -> tuple[str, str]:
        kernel = parse_inductor(name, self._known_ops)
        if kernel is not None:
            return self._classify_inductor(kernel)
        i = self._matcher.first_rule(match_text(name))
        if i is None:
            return OTHER, ""
        rule = self.rules[i]
        return rule.category, rule.id

    def classify_names(self, names: list[str]) -> tuple[list[str], list[str]]:
        """Category and rule id per name (call once per unique name)."""
        cats: list[str] = []
        rules: list[str] = []
        for name in names:
            c, r = self.classify(name)
            cats.append(c)
            rules.append(r)
        return cats, rules

    def matches(self, name: str, category: str) -> bool:
        """Would any rule of `category` match `name` (ignoring rule order)? Fusion evidence: a fused
        kernel's name often still names the work it absorbed (e.g. `add_rmsnorm_quant`)."""
        text = match_text(name)
        for rule, literals, regexes in self._compiled:
            if rule.category != category:
                continue
            if any(lit in text for lit in literals) or any(rx.search(text) for rx in regexes):
                return True
        kernel = parse_inductor(name, self._known_ops)
        if kernel is not None:
            return any(c[0].category == category and self._inductor_hit(c, kernel, conditions=True)
                       for c in self._inductor_compiled)
        return False

    # -- Inductor kernels --
    def inductor_ops(self, name: str) -> tuple[str, ...]:
        """The ops an Inductor kernel's name lists, in the order listed; () for other kernels."""
        kernel = parse_inductor(name, self._known_ops)
        return kernel.ops if kernel is not None else ()

    def parse_inductor(self, name: str) -> InductorKernel | None:
        return parse_inductor(name, self._known_ops)

    def _compile_inductor(self, r: InductorRule, source: str):
        def expand(ops: tuple[str, ...], what: str) -> frozenset[str]:
            out: set[str] = set()
            for op in ops:
                if op.startswith("@"):
                    group = self.inductor_groups.get(op[1:])
                    if group is None:
                        raise TraceError(source, f"inductor rule {r.id!r} {what}: no group {op[1:]!r} in [inductor_groups]")
                    out |= set(group)
                else:
                    out.add(op)
            return frozenset(out)

        return (r, frozenset(r.kinds), expand(r.all, "all"), expand(r.any, "any"), expand(r.only, "only"),
                expand(r.none, "none"))

    @staticmethod
    def _inductor_hit(compiled, kernel: InductorKernel, conditions: bool = False) -> bool:
        """Does an Inductor rule hold for `kernel`? With `conditions`, only its any/all op
        conditions are asked (fusion evidence: does the name list that work at all)."""
        r, kinds, all_, any_, only, none = compiled
        ops = set(kernel.ops)
        if conditions:
            return bool(all_ or any_) and all_ <= ops and (not any_ or bool(ops & any_))
        if kinds and kernel.kind not in kinds:
            return False
        if not all_ <= ops or (any_ and not ops & any_) or ops & none:
            return False
        return not only or (bool(ops) and ops <= only)

    def _classify_inductor(self, kernel: InductorKernel) -> tuple[str, str]:
        for compiled in self._inductor_compiled:
            if self._inductor_hit(compiled, kernel):
                return compiled[0].category, compiled[0].id
        return OTHER, ""

    # -- launching operators --
    def op_rule(self, op: str) -> OpRule | None:
        """The first operator rule matching operator name `op` (exact name or whole-name regex)."""
        if op in self._op_cache:
            return self._op_cache[op]
        hit = None
        regex_ok = len(op) <= MAX_MATCH_CHARS   # no operator is this long: exact names only (bounded time)
        for rule, names, regexes in self._op_compiled:
            if op in names or (regex_ok and any((gate is None or gate in op) and rx.fullmatch(op)
                                                for gate, rx in regexes)):
                hit = rule
                break
        self._op_cache[op] = hit
        return hit

    def is_generic(self, rule_id: str) -> bool:
        """No name rule matched (""), or only a family guess (`generic = true`)."""
        return rule_id == "" or rule_id in self._generic

    def decide(self, category: str, rule_id: str, op: str) -> tuple[str, str] | None:
        """What launching operator `op` changes about a kernel the name rules gave (category,
        rule_id): (category, reason) when an operator rule overrules them, else None.

        An operator rule overrules a kernel no name rule or only a generic one matched (`over`
        holds "generic"), or one whose name category it lists in `over`. Agreeing with the name
        rule changes nothing (the name rule stays the reason)."""
        rule = self.op_rule(op)
        if rule is None or rule.category == category:
            return None
        if (GENERIC in rule.over and self.is_generic(rule_id)) or category in rule.over:
            return rule.category, op_reason(rule.id, op)
        return None

    def assign(self, model) -> None:
        """Set `model.kernels.cat` / `.rule` from each kernel's name and launching operator
        (`kernels.cpu_op`, so after attribution.link). Each distinct name is classified once,
        each distinct (name, operator) pair an operator rule applies to decided once."""
        import numpy as np

        k = model.kernels
        if len(k) == 0:
            return
        uniq, inverse = small_unique(k.name, len(model.strings))
        labels = [self.classify(model.strings[int(i)]) for i in uniq]
        cut = sum(is_cut_for_matching(model.strings[int(i)]) for i in uniq)
        if cut:
            model.warnings.append(f"{cut} kernel name(s) longer than {MAX_MATCH_CHARS:,} characters: only their "
                                  f"first {MAX_MATCH_CHARS:,} were matched against the category rules "
                                  "(names are shown in full)")
        which = inverse                       # label index per kernel
        if self.op_rules and len(model.cpu_ops):
            op = np.full(len(k), -1, dtype=np.int64)
            has = k.cpu_op >= 0
            op[has] = model.cpu_ops.name[k.cpu_op[has]]
            ruled = [o for o in small_unique(op[has], len(model.strings))[0].tolist()
                     if self.op_rule(model.strings[o]) is not None]
            if ruled:
                rows = np.nonzero(np.isin(op, np.asarray(ruled, dtype=np.int64)))[0]
                span = int(op.max()) + 1
                pairs, pinv = small_unique(inverse[rows] * span + op[rows], len(uniq) * span)
                to = np.empty(len(pairs), dtype=np.int64)
                for p_i, key in enumerate(pairs.tolist()):
                    j, o = divmod(key, span)
                    hit = self.decide(*labels[j], model.strings[o])
                    if hit is None:
                        to[p_i] = j
                    else:
                        to[p_i] = len(labels)
                        labels.append(hit)
                which = inverse.copy()
                which[rows] = to[pinv]
        cat_index = {c: i for i, c in enumerate(model.categories)}
        rule_index = {r: i for i, r in enumerate(model.rules)}
        cat_ids = np.empty(len(labels), dtype=np.int16)
        rule_ids = np.empty(len(labels), dtype=np.int32)
        for j, (c, r) in enumerate(labels):
            if c not in cat_index:
                cat_index[c] = len(model.categories)
                model.categories.append(c)
            if r not in rule_index:
                rule_index[r] = len(model.rules)
                model.rules.append(r)
            cat_ids[j], rule_ids[j] = cat_index[c], rule_index[r]
        k.cat = cat_ids[which]
        k.rule = rule_ids[which]

    # -- category metadata --
    def role(self, category: str) -> str:
        return self._meta.get(category, {}).get("role", "other")

    def components(self, category: str) -> list[str]:
        return list(self._meta.get(category, {}).get("components", []))

    def is_fused(self, category: str) -> bool:
        return bool(self._meta.get(category, {}).get("components"))

    def group(self, category: str) -> str:
        """Family a category belongs to ("Attention (decode)" -> "Attention"); itself otherwise."""
        return self._meta.get(category, {}).get("group", category)


@lru_cache(maxsize=1)
def _default_classifier() -> Classifier:
    r = _shipped()
    return Classifier(list(r.rules), dict(r.meta), op_rules=r.op_rules, inductor_rules=r.inductor_rules,
                      inductor_groups=r.groups)
