"""The classifier's rules as data: the registry schema (`Rule`, `OpRule`, `InductorRule`, category
metadata), its parsing and checking (shipped `registry.toml` or a user's `--registry FILE`, one
line per problem), and the shipped registry parsed once and kept in the cache dir."""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from kerneldiff.core.analysis import rule_matcher
from kerneldiff.core.analysis.inductor_names import INDUCTOR_KINDS
from kerneldiff.core.analysis.linear_regex import UnsafeRegex
from kerneldiff.core.analysis.rule_matcher import GATES, compiler, required_literal, rule_flags
from kerneldiff.core.errors import TraceError

if TYPE_CHECKING:
    from pathlib import Path

OTHER = "Other"
ROLES = ("attention", "norm", "gemm", "moe", "ssm", "comm", "elementwise", "memory", "other")
VENDORS = ("AMD", "NVIDIA", "any")
GENERIC = "generic"                      # `over` entry: kernels only a generic name rule (or none) matched
_RULE_KEYS = {"id", "category", "contains", "regex", "vendor", "examples", "generic"}
_OP_RULE_KEYS = {"id", "category", "ops", "regex", "over", "examples"}
_INDUCTOR_RULE_KEYS = {"id", "category", "kinds", "all", "any", "only", "none", "examples"}
_CATEGORY_KEYS = {"role", "components", "group"}
_TOP_KEYS = {"rules", "categories", "op_rules", "inductor_rules", "inductor_groups"}
SHIPPED = "core/registry.toml"           # how the shipped file is named in error messages

# The records are NamedTuples, not frozen dataclasses: building those cost ~0.8 ms each at every
# start (NamedTuple ~0.1 ms); the repr, which the model cache's key hashes, reads the same.


class Rule(NamedTuple):
    id: str
    category: str
    contains: tuple[str, ...]    # lowercase substrings
    regex: tuple[str, ...]       # Python regex sources
    vendor: str = "any"
    examples: tuple[str, ...] = ()
    generic: bool = False        # a family guess the launching operator may overrule
    user: bool = False           # from a user's registry: its regexes run on RE2 (linear_regex)


class OpRule(NamedTuple):
    """Launching operator -> category, for kernels whose name decides nothing better."""
    id: str
    category: str
    ops: tuple[str, ...]         # exact operator names
    regex: tuple[str, ...]       # Python regexes matched against the WHOLE operator name
    over: tuple[str, ...] = (GENERIC,)   # what it may overrule: "generic" and/or name categories
    examples: tuple[str, ...] = ()       # operator names that must resolve to this rule
    user: bool = False                   # from a user's registry: its regexes run on RE2


class InductorRule(NamedTuple):
    """Inductor kernel (kind + listed ops) -> category. Every condition given must hold."""
    id: str
    category: str
    kinds: tuple[str, ...] = ()  # empty: any kind
    all: tuple[str, ...] = ()    # every one of these ops is listed
    any: tuple[str, ...] = ()    # at least one of these is listed
    only: tuple[str, ...] = ()   # at least one op is listed and every listed op is one of these
    none: tuple[str, ...] = ()   # none of these is listed
    examples: tuple[str, ...] = ()   # kernel names that must resolve to this rule


def _str_list(value, what: str, path: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise TraceError(path, f"{what} must be a string or a list of strings")


class Registry(NamedTuple):
    """One registry file, parsed and checked."""
    rules: list[Rule]
    meta: dict[str, dict]
    op_rules: list[OpRule]
    inductor_rules: list[InductorRule]
    groups: dict[str, tuple[str, ...]]


def _check_regex(rx: str, flags: int, where: str, path: str, user: bool) -> None:
    try:
        compiler(user)(rx, flags)
    except re.error as e:
        raise TraceError(path, f"{where}: bad regex {rx!r}: {e}") from None
    except UnsafeRegex as e:
        raise TraceError(path, f"{where}: {e}") from None


def parse_registry(doc: dict, path: str, user: bool = True, checked: bool = False) -> Registry:
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
                _check_regex(rx, rule_flags(rx), where, path, user)
        if not any(contains) and not regexes:
            raise TraceError(path, f"{where}: empty `contains`")
        examples = tuple(_str_list(r.get("examples", []), f"{where} examples", path))
        generic = r.get("generic", False)
        if not isinstance(generic, bool):
            raise TraceError(path, f"{where}: generic must be true or false")
        rules.append(Rule(rid, cat, tuple(c.lower() for c in contains if c), tuple(regexes), vendor, examples,
                          generic, user))
    return Registry(rules, meta, _parse_op_rules(doc, path, user, checked), _parse_inductor_rules(doc, path),
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


def read_toml(path: str, text: str) -> dict:
    import tomllib   # here: a process with the shipped registry cached never imports it

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TraceError(path, f"invalid TOML: {e}") from None


# --- the shipped registry, compiled once ------------------------------------------------------
# Reading registry.toml (TOML parse, every regex compiled to check it, each regex's required
# literal parsed out of it) cost ~10 ms of CPU in every process, more on a busy machine. The
# result is kept in the user's cache dir as JSON (no pickle), keyed by the registry's text and
# the code of this module and the matcher; a process that finds it reads it in ~0.2 ms and compiles a shipped regex
# only when a name first needs it (rule_matcher.LazyPattern).

def registry_cache_dir() -> Path:
    from pathlib import Path

    return Path(_cache_dir())


def _cache_dir() -> str:
    # os.path, not pathlib: a process that finds the cached registry never imports pathlib (~5 ms)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kerneldiff", "registry")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


try:   # CPython's own SHA-256, without hashlib's OpenSSL start (~3 ms of every `info`): same digest
    from _sha256 import sha256
except ImportError:   # other interpreters, later CPythons (_sha2)
    from hashlib import sha256


def _registry_key(text: str) -> str:
    """The registry's text and the code that reads it and its gates (this module, the matcher)."""
    h = sha256(text.encode("utf-8"))
    h.update(_read(__file__))
    h.update(_read(rule_matcher.__file__))
    return h.hexdigest()[:32]


def _cached_doc(file: str | Path) -> dict | None:
    """The cached shipped registry, its gates loaded into rule_matcher.GATES; None when absent or unreadable."""
    try:
        blob = json.loads(_read(file))
        doc, gates = blob["doc"], blob["gates"]
        if not isinstance(doc, dict) or not isinstance(gates, list):
            return None
        for pattern, flags, lit in gates:
            if not (isinstance(pattern, str) and isinstance(flags, int) and (lit is None or isinstance(lit, str))):
                return None
        GATES.update(((pattern, flags), lit) for pattern, flags, lit in gates)
        return doc
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store_doc(file: str | Path, doc: dict, reg: Registry) -> None:
    """Keep the parsed registry and each regex's required literal for the next process (best
    effort: a read-only or full cache dir only costs the next process the parse)."""
    from pathlib import Path

    file = Path(file)
    gates = []
    sources = [(rx, rule_flags(rx)) for r in reg.rules for rx in r.regex if re.escape(rx) != rx]
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
    except (OSError, TypeError, ValueError):   # TypeError: a TOML value JSON has no form for
        return
    _drop_old_versions(file.parent)


# Files of this many versions are kept: two installs (or worktrees) sharing one cache dir each
# keep theirs. With only the newest kept, they would evict each other and every process would
# parse the registry again (~25 ms instead of ~3 ms per process).
KEEP_VERSIONS = 8


def _drop_old_versions(folder: Path) -> None:
    dated = []
    for f in folder.glob("shipped-*.json"):
        try:
            dated.append((f.stat().st_mtime_ns, f))
        except OSError:          # removed by another process meanwhile
            continue
    for _, old in sorted(dated, reverse=True)[KEEP_VERSIONS:]:
        try:
            old.unlink(missing_ok=True)
        except OSError:
            pass


@lru_cache(maxsize=1)
def shipped_registry() -> Registry:
    # beside this module: importlib.resources and its zip readers cost ~4 ms of every start
    with open(os.path.join(os.path.dirname(__file__), "registry.toml"), encoding="utf-8") as f:
        text = f.read()
    file = os.path.join(_cache_dir(), f"shipped-{_registry_key(text)}.json")
    doc = _cached_doc(file)
    if doc is not None:
        try:
            return parse_registry(doc, SHIPPED, user=False, checked=True)
        except TraceError:   # a cache file that is not what this code wrote: parse the registry
            GATES.clear()
    doc = read_toml(SHIPPED, text)
    reg = parse_registry(doc, SHIPPED, user=False)
    _store_doc(file, doc, reg)
    return reg


def merge_by_id(user: list, shipped: list) -> list:
    """User rules first; a shipped rule the user redefines (same id) is dropped."""
    ids = {r.id for r in user}
    return list(user) + [r for r in shipped if r.id not in ids]
