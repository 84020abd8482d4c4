"""A kernel name's parts, read without the demangler: a demangled C++ signature cut down to its
name (no return type, no parameter list). The demangler (`readable`), the display names and the
classifier's match text all cut names here."""

from __future__ import annotations

from kerneldiff.core.lazy_pattern import LazyPattern


def strip_args(s: str) -> str:
    """Drop the trailing parameter list `(...)` of a demangled signature, and a ` const` after it:
    "void f<T>(int, T*) const" -> "void f<T>". Argument types name unrelated libraries (a quantize
    kernel taking a `flashinfer::QuantizationSFLayout`); template arguments stay, since PyTorch
    names the op only there. A name that does not end in a list (`k<(Enum)0>`, `k<…>::Kargs`), an
    unbalanced (truncated) one and a list alone (`(x)`) come back as they are, stripped."""
    s = s.rstrip()
    if s.endswith(" const"):
        s = s[:-6].rstrip()
    if not s.endswith(")"):
        return s
    # Walk the brackets from the right. Each kind's next position is searched once from where the
    # last one was found, so the scan is linear and in C (`k(` + a million `)` must not be quadratic).
    depth = 0
    close_at, open_at = len(s) - 1, s.rfind("(")
    while True:
        if close_at > open_at:
            depth += 1
            close_at = s.rfind(")", 0, close_at)
        elif open_at < 0:
            return s
        else:
            depth -= 1
            if depth == 0:
                return s[:open_at].rstrip() or s
            open_at = s.rfind("(", 0, open_at)


# what the walk of `drop_return_type` reads: brackets (it steps over the rest in C, and looks for
# spaces only where the depth is 0: a name's spaces are mostly inside its template arguments)
_BRACKET = LazyPattern(r"[<({\[>)}\]]")


def drop_return_type(s: str) -> str:
    """`std::enable_if<…>::type vllm::kernel<…>` -> `vllm::kernel<…>`: the name is the last
    space-separated token outside template brackets and parentheses (`(anonymous namespace)` and
    `{lambda(float)#1}` hold spaces that separate nothing)."""
    if " " not in s:
        return s
    n, depth, start = len(s), 0, 0
    outside: list[tuple[int, int]] = []   # the stretches at depth 0
    for m in _BRACKET.finditer(s):
        if m.group() in "<({[":
            if depth == 0:
                outside.append((start, m.start()))
            depth += 1
        elif depth > 0:   # a closer at depth 0 closes nothing
            depth -= 1
            if depth == 0:
                start = m.end()
    if depth == 0:
        outside.append((start, n))
    for a, b in reversed(outside):   # the last space there that a name follows
        i = s.rfind(" ", a, b)
        while i >= 0:
            if i + 1 < n and s[i + 1] not in "<>(&*":
                return s[i + 1:]
            i = s.rfind(" ", a, i)
    return s


def strip_signature(s: str) -> str:
    """A demangled function without its return type and parameter list:
    `void aiter::k<float, 256>(float*, int)` -> `aiter::k<float, 256>`."""
    return drop_return_type(strip_args(s.strip()))


# A mangled symbol's leading name is read without the demangler (the classifier's match text, the
# demangler's answer for a symbol it cannot read whole): at most this many characters of it.
MAX_PREFIX = 8_192


def qualified_prefix(name: str) -> str:
    """The leading qualified name of an Itanium-mangled symbol, its template arguments (if any) as
    `<…>`: "_ZN5aiter3fooIiEEvv" -> "aiter::foo<…>". A name it cannot read comes back unchanged."""
    s, i, n = name, 2, len(name)
    if s.startswith("L", i):                 # internal linkage
        i += 1
    nested = s.startswith("N", i)
    if nested:
        i += 1
        while i < n and s[i] in "rVKRO":     # cv / ref qualifiers of a member function
            i += 1
    parts: list[str] = []
    size = 0
    template = False
    while i < n:
        if "0" <= s[i] <= "9":               # ASCII only: '²'.isdigit() is True, int('²') fails
            j = i
            while j < n and "0" <= s[j] <= "9" and j - i < 7:   # no real identifier is 10 MB long
                j += 1
            length = int(s[i:j])
            ident = s[j:j + length]
            if len(ident) < length or length == 0:
                break
            parts.append("(anonymous namespace)" if ident.startswith("_GLOBAL__N") else ident)
            size += len(parts[-1]) + 2
            i = j + length
        elif s.startswith("St", i):
            parts.append("std")
            size += 5
            i += 2
            continue
        else:
            break
        if i < n and s[i] == "I":
            template = True
            break
        if not nested or size > MAX_PREFIX:
            break
    if not parts:
        return name
    return "::".join(parts) + ("<…>" if template else "")
