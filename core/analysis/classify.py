"""Kernel name -> (category, rule id), driven by the data in `registry.toml`.

The shipped registry is an ordered rule list (first match wins) plus per-category metadata
(role for layer segmentation, components for fused categories). A user registry file has the
same format; its rules are tried first and its `[categories]` entries add or override metadata.

Each name is lowercased once (see `match_text`); `contains` entries and metacharacter-free
regexes are tested as plain substrings, the rest as precompiled regexes (they should start with
a literal so `re` can use its fast prefix search). Results are cached per name.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from kerneldiff.core.errors import TraceError

OTHER = "Other"
ROLES = ("attention", "norm", "gemm", "moe", "ssm", "comm", "elementwise", "memory", "other")
VENDORS = ("AMD", "NVIDIA", "any")
_RULE_KEYS = {"id", "category", "contains", "regex", "vendor", "examples"}
_CATEGORY_KEYS = {"role", "components", "group"}
SHIPPED = "core/registry.toml"           # how the shipped file is named in error messages


@dataclass(frozen=True)
class Rule:
    id: str
    category: str
    contains: tuple[str, ...]    # lowercase substrings
    regex: tuple[str, ...]       # Python regex sources
    vendor: str = "any"
    examples: tuple[str, ...] = ()


# --- names ---------------------------------------------------------------------------------

def demangle(name: str) -> str:
    """Qualified name of an Itanium-mangled symbol ("_ZN5aiter3fooIiEEvv" -> "aiter::foo<...>").

    Only the leading (nested) name is decoded — enough to read and match kernel names without
    c++filt. Template arguments are shown as "<...>"; anything unparseable is returned as is.
    """
    if not name.startswith("_Z"):
        return name
    s, i, n = name, 2, len(name)
    if s.startswith("L", i):                 # internal linkage
        i += 1
    nested = s.startswith("N", i)
    if nested:
        i += 1
        while i < n and s[i] in "rVKRO":     # cv / ref qualifiers of a member function
            i += 1
    parts: list[str] = []
    template = False
    while i < n:
        if s[i].isdigit():
            j = i
            while j < n and s[j].isdigit():
                j += 1
            length = int(s[i:j])
            ident = s[j:j + length]
            if len(ident) < length:
                break
            parts.append("(anonymous namespace)" if ident.startswith("_GLOBAL__N") else ident)
            i = j + length
        elif s.startswith("St", i):
            parts.append("std")
            i += 2
            continue
        else:
            break
        if i < n and s[i] == "I":
            template = True
            break
        if not nested:
            break
    if not parts:
        return name
    return "::".join(parts) + ("<...>" if template else "")


def strip_args(name: str) -> str:
    """Drop a trailing argument list: "void f<T>(int, T*)" -> "void f<T>".

    Argument types name unrelated libraries (a quantize kernel taking a
    `flashinfer::QuantizationSFLayout`); template arguments stay because PyTorch names the op
    only there. Unbalanced (truncated) names are returned unchanged.
    """
    s = name.rstrip()
    if not s.endswith(")"):
        return name
    depth, end = 0, len(s)
    while True:
        j = max(s.rfind("(", 0, end), s.rfind(")", 0, end))
        if j < 0:
            return name
        if s[j] == ")":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return s[:j] if j > 0 else name
        end = j


def match_text(name: str) -> str:
    """The lowercase text rules are matched against (see registry.toml header)."""
    if name.startswith("_Z"):
        # readable and mangled forms: CK hides the op (Rmsnorm2dFwd) in mangled template args
        return f"{demangle(name)} {name}".lower()
    return strip_args(name).lower()


# --- registry parsing ----------------------------------------------------------------------

def _str_list(value, what: str, path: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise TraceError(path, f"{what} must be a string or a list of strings")


def _parse(doc: dict, path: str) -> tuple[list[Rule], dict[str, dict]]:
    extra = set(doc) - {"rules", "categories"}
    if extra:
        raise TraceError(path, f"unknown top-level key(s) {sorted(extra)}; expected [[rules]] and [categories]")
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
            try:
                re.compile(rx, re.IGNORECASE)
            except re.error as e:
                raise TraceError(path, f"{where}: bad regex {rx!r}: {e}") from None
        if not any(contains) and not regexes:
            raise TraceError(path, f"{where}: empty `contains`")
        examples = tuple(_str_list(r.get("examples", []), f"{where} examples", path))
        rules.append(Rule(rid, cat, tuple(c.lower() for c in contains if c), tuple(regexes), vendor, examples))
    return rules, meta


def _read_toml(path: str, text: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TraceError(path, f"invalid TOML: {e}") from None


@lru_cache(maxsize=1)
def _shipped() -> tuple[tuple[Rule, ...], tuple[tuple[str, dict], ...]]:
    text = resources.files("kerneldiff.core.analysis").joinpath("registry.toml").read_text(encoding="utf-8")
    rules, meta = _parse(_read_toml(SHIPPED, text), SHIPPED)
    return tuple(rules), tuple(meta.items())


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
        else:
            regexes.append(re.compile(rx, re.S | (re.I if rx != rx.lower() else 0)))
    return rule, tuple(literals), tuple(regexes)


# --- classifier ----------------------------------------------------------------------------

class Classifier:
    """Ordered, first-match-wins kernel classifier. Build with `Classifier.load()`."""

    def __init__(self, rules: list[Rule], meta: dict[str, dict], source: str = SHIPPED) -> None:
        meta = dict(meta)
        meta.setdefault(OTHER, {"role": "other"})
        for r in rules:
            if r.category not in meta:
                raise TraceError(source, f"rule {r.id!r}: category {r.category!r} is not declared in [categories]")
        for cname, m in meta.items():
            for comp in m.get("components", []):
                if comp not in meta:
                    raise TraceError(source, f"category {cname!r}: component {comp!r} is not a category")
            group = m.get("group")
            if group is not None and group not in meta:
                raise TraceError(source, f"category {cname!r}: group {group!r} is not a category")
        self.rules: list[Rule] = list(rules)
        self.rule_ids: list[str] = [r.id for r in rules]
        self.categories: list[str] = [c for c in meta if c != OTHER] + [OTHER]
        self._meta = meta
        self._cache: dict[str, tuple[str, str]] = {}
        self._compiled = [_compile(r) for r in rules]

    # -- construction --
    @classmethod
    def load(cls, extra: str | Path | None = None) -> "Classifier":
        """The shipped registry, optionally preceded/overridden by the user registry `extra`."""
        if extra is None:
            return _default_classifier()
        rules, meta = list(_shipped()[0]), dict(_shipped()[1])
        path = str(extra)
        try:
            text = Path(extra).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise TraceError(path, "registry file not found") from None
        except (OSError, UnicodeDecodeError) as e:
            raise TraceError(path, f"cannot read registry: {e}") from None
        user_rules, user_meta = _parse(_read_toml(path, text), path)
        for cname, m in user_meta.items():       # key-wise override of shipped metadata
            meta[cname] = {**meta.get(cname, {}), **m}
        # user rules first; a shipped rule the user redefines (same id) is dropped
        user_ids = {r.id for r in user_rules}
        rules = user_rules + [r for r in rules if r.id not in user_ids]
        return cls(rules, meta, source=path)

    # -- classification --
    def classify(self, name: str) -> tuple[str, str]:
        """(category, rule id) of one kernel name; ("Other", "") when no rule matches."""
        hit = self._cache.get(name)
        if hit is None:
            hit = self._cache[name] = self._classify(name)
        return hit

    def _classify(self, name: str) -> tuple[str, str]:
        text = match_text(name)
        for rule, literals, regexes in self._compiled:
            for lit in literals:
                if lit in text:
                    return rule.category, rule.id
            for rx in regexes:
                if rx.search(text):
                    return rule.category, rule.id
        return OTHER, ""

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
        return False

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
    rules, meta = _shipped()
    return Classifier(list(rules), dict(meta))
