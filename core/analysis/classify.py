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

Beside it: the registry's schema, parsing and cache (`registry.py`), Inductor kernel names
(`inductor_names.py`), the match text and the rule matcher (`rule_matcher.py`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from kerneldiff.core.analysis.inductor_names import KNOWN_OPS, InductorKernel, parse_inductor
from kerneldiff.core.analysis.registry import (GENERIC, OTHER, SHIPPED, InductorRule, OpRule, Rule, merge_by_id,
                                               parse_registry, read_toml, shipped_registry)
from kerneldiff.core.analysis.rule_matcher import (MAX_MATCH_CHARS, FirstRule, compile_rule, compiler,
                                                   is_cut_for_matching, lazy_pattern, match_text, required_literal)
from kerneldiff.core.errors import TraceError
from kerneldiff.core.numbers import small_unique

if TYPE_CHECKING:   # pathlib (and the urllib and ipaddress it imports) is not needed to classify: ~5 ms
    from pathlib import Path


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
        self._compiled = [compile_rule(r) for r in rules]
        self._matcher = FirstRule([(lits, rxs) for _, lits, rxs in self._compiled])
        self._generic = {r.id for r in rules if r.generic}
        # each regex with the literal a whole-name match must contain (None: no gate): an operator
        # name without it is not run through the regex (nor a shipped one compiled for it)
        self._op_compiled = [(r, frozenset(r.ops), tuple((required_literal(rx), rx) for rx in
                                                         (compiler(True)(x) if r.user else lazy_pattern(x, 0) for x in r.regex)))
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
        shipped = shipped_registry()
        meta = dict(shipped.meta)
        path = str(extra)
        from kerneldiff.core.fileio import read_config

        text = read_config(path, "registry file")
        user = parse_registry(read_toml(path, text), path)
        for cname, m in user.meta.items():       # key-wise override of shipped metadata
            meta[cname] = {**meta.get(cname, {}), **m}
        # user rules first; a shipped rule the user redefines (same id) is dropped
        return cls(merge_by_id(user.rules, shipped.rules), meta, source=path,
                   op_rules=merge_by_id(user.op_rules, shipped.op_rules),
                   inductor_rules=merge_by_id(user.inductor_rules, shipped.inductor_rules),
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
    r = shipped_registry()
    return Classifier(list(r.rules), dict(r.meta), op_rules=r.op_rules, inductor_rules=r.inductor_rules,
                      inductor_groups=r.groups)


def inductor_ops(name: str) -> tuple[str, ...]:
    """The ops an Inductor kernel's name lists (as the shipped registry parses them); () for any
    other kernel. E.g. "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0" ->
    ('_to_copy', 'add', 'mean', 'mul', 'pow', 'rsqrt')."""
    return _default_classifier().inductor_ops(name)
