"""A kernel name's parts, read without the demangler: a demangled C++ signature cut down to its
name (no return type, no parameter list). The demangler (`readable`), the display names and the
classifier's match text all cut names here."""

from __future__ import annotations


def _strip_args(s: str) -> str:
    """Drop the trailing parameter list `(...)` of a demangled signature (a name that does not end
    in one, such as `k<(Enum)0>` or `k<…>::Kargs`, is left alone; so is a ` const` after it)."""
    s = s.rstrip()
    if s.endswith(" const"):
        s = s[:-6].rstrip()
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        ch = s[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                head = s[:i].rstrip()
                return head if head else s
    return s


def _drop_return_type(s: str) -> str:
    """`std::enable_if<…>::type vllm::kernel<…>` -> `vllm::kernel<…>`: the name is the last
    space-separated token outside template brackets and parentheses (`(anonymous namespace)` and
    `{lambda(float)#1}` hold spaces that separate nothing)."""
    depth, cut = 0, -1
    for i, ch in enumerate(s):
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth = max(depth - 1, 0)
        elif ch == " " and depth == 0 and i + 1 < len(s) and s[i + 1] not in "<>(&*":
            cut = i
    return s[cut + 1:] if cut >= 0 and cut + 1 < len(s) else s


def strip_signature(s: str) -> str:
    """A demangled function without its return type and parameter list:
    `void aiter::k<float, 256>(float*, int)` -> `aiter::k<float, 256>`."""
    return _drop_return_type(_strip_args(s.strip()))
