"""Which rule a kernel name matches: the text rules see (`match_text`), a rule's literals and
regexes (`compile_rule`), and the first matching rule of many in one pass (`FirstRule`), gated by
the literal each regex cannot match without (`required_literal`)."""

from __future__ import annotations

import re

import ahocorasick

from kerneldiff.core.analysis.linear_regex import compile_linear
from kerneldiff.core.names.parts import qualified_prefix, strip_args

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


# (pattern, flags) -> required literal, as the registry cache recorded them (see registry.py)
GATES: dict[tuple[str, int], str | None] = {}


def compiler(user: bool):
    """A user's patterns compile for RE2 (linear time whatever they are); the shipped ones for re."""
    return compile_linear if user else re.compile


def rule_flags(rx: str) -> int:
    """The flags a kernel-name regex is compiled with (see `compile_rule`)."""
    return re.S | (re.I if rx != rx.lower() else 0)


def compile_rule(rule) -> tuple[object, tuple[str, ...], tuple[re.Pattern, ...]]:
    """A registry `Rule` as (rule, literals, regexes). Literals are tested with `in` (C substring search, ~0.1 µs); only real regexes go to `re`.

    The text is already lowercase, so a regex needs IGNORECASE only if it spells an uppercase
    letter — IGNORECASE also disables re's literal-prefix search and costs ~3x.
    """
    literals = list(rule.contains)
    regexes = []
    for rx in rule.regex:
        if re.escape(rx) == rx:                       # no metacharacters: a plain substring
            literals.append(rx.lower())
        elif rule.user:
            regexes.append(compiler(True)(rx, rule_flags(rx)))
        else:
            regexes.append(lazy_pattern(rx, rule_flags(rx)))
    return rule, tuple(literals), tuple(regexes)


def lazy_pattern(rx: str, flags: int) -> LazyPattern:
    # the flags re.compile would report (a str pattern adds UNICODE): the gate cache's key
    return LazyPattern(rx, flags | (0 if flags & re.ASCII else re.UNICODE))


class LazyPattern:
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


class FirstRule:
    """The first rule, in registry order, that a text matches: rule i matches when one of its
    literals occurs in the text or one of its regexes is found there.

    Trying each rule in turn costs one substring search per literal (176 of them), ~100 µs on a
    1 KB name: a trace of a million distinct names spent two minutes here. Instead one
    Aho-Corasick pass finds every literal at once (time linear in the text, whatever the number of
    rules), and a regex is run only when the literal it cannot match without (its longest
    required run of plain characters, read from the pattern) occurs, and only while it
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
    if isinstance(rx, LazyPattern):
        lit = GATES.get((rx.pattern, rx.flags), False)
        if lit is not False:
            return lit
        rx = rx._compiled()
    if rx.flags & (re.IGNORECASE | re.VERBOSE):   # VERBOSE: spaces in the text would not be literal
        return None
    runs = _literal_runs(rx.pattern)
    if runs is None:
        return None
    best = max(runs, key=len)
    return best or None


_NOT_LITERAL = frozenset(".^$")
_QUANTIFIERS = frozenset("*+?{")
_REPEAT = r"\{[0-9]*(?:,[0-9]*)?\}"       # compiled (and cached by re) when a gate is first read
_ESCAPE_WIDTH = {"x": 2, "u": 4, "U": 8}


def _literal_runs(pattern: str) -> list[str] | None:
    """The runs of plain characters in the top-level sequence of a pattern that compiles, in order
    (None when it is a top-level alternation). Read from the pattern's text with the documented
    syntax (re's own parser, `re._parser`, is private and changes between Pythons); where that
    reading is unsure it ends a run rather than extends it, so a run is only ever too short,
    never wrong: a group, a class, an escape of a letter or digit, `.^$` and a repeated character
    end one; an escaped punctuation character (`\\.`) is plain."""
    runs: list[str] = []
    run: list[str] = []
    i, n = 0, len(pattern)

    def end() -> None:
        nonlocal run
        runs.append("".join(run))
        run = []

    while i < n:
        ch = pattern[i]
        if ch == "|":
            return None
        if ch == "\\":
            nxt = pattern[i + 1:i + 2]
            if nxt and not (nxt.isascii() and nxt.isalnum()):
                run.append(nxt)                       # an escaped punctuation character: itself
                i += 2
                continue
            i = _after_escape(pattern, i)
            end()
            continue
        if ch == "[":
            i = _after_class(pattern, i)
            end()
        elif ch == "(":
            i = _after_group(pattern, i)
            end()
        elif ch in _QUANTIFIERS:
            if run:                                   # the character before repeats: not required
                run.pop()
            end()
            m = re.compile(_REPEAT).match(pattern, i) if ch == "{" else None
            i = m.end() if m else i + 1
            if i < n and pattern[i] in "?+":          # lazy or possessive
                i += 1
        elif ch in _NOT_LITERAL:
            end()
            i += 1
        else:
            run.append(ch)
            i += 1
    end()
    return runs


def _after_escape(pattern: str, i: int) -> int:
    """Where the escape of a letter or digit at pattern[i] ends (`\\d`, `\\x41`, `\\N{...}`, `\\12`)."""
    c = pattern[i + 1:i + 2]
    if c in _ESCAPE_WIDTH:
        return i + 2 + _ESCAPE_WIDTH[c]
    if c == "N" and pattern.startswith("{", i + 2):
        close = pattern.find("}", i + 3)
        return close + 1 if close >= 0 else len(pattern)
    if c.isdigit():                                   # a group reference or an octal escape: all its digits
        j = i + 1
        while j < len(pattern) and pattern[j].isdigit():
            j += 1
        return j
    return i + 2


def _after_class(pattern: str, i: int) -> int:
    """Where the character class opening at pattern[i] ends: after its `]` (a `]` first in the
    class, after `[` or `[^`, is a member)."""
    j = i + 1
    if pattern.startswith("^", j):
        j += 1
    if pattern.startswith("]", j):
        j += 1
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j += 2
        elif c == "]":
            return j + 1
        else:
            j += 1
    return len(pattern)


def _after_group(pattern: str, i: int) -> int:
    """Where the group opening at pattern[i] ends: after its `)` (escapes and classes inside skipped)."""
    depth, j = 0, i
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            j = _after_class(pattern, j)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return len(pattern)
