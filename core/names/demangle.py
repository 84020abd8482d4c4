"""An Itanium C++ ABI demangler for kernel names, in pure Python and bounded.

AMD traces often record kernels by their mangled symbol (`_ZN5aiter32fused_rmsnorm_gemm_a16w16_kernel
IDF16bLi256ELi64ELb1EEEvPT_PKS1_S4_S4_fiiii`); `demangle` turns one into what `c++filt` prints
(`void aiter::fused_rmsnorm_gemm_a16w16_kernel<std::bfloat16_t, 256, 64, true>(std::bfloat16_t*, …)`),
covering what kernels use: nested and template names, substitutions, template parameters and packs,
literals and enum values, function, pointer, array and member types, lambdas, local and
anonymous-namespace names, ABI tags and the newer template-parameter declarations (`Tn`, `Ty`).

A trace is data: the parser never recurses deeper than `MAX_DEPTH`, stops at `MAX_OUTPUT` characters of
output (substitutions can otherwise grow a name exponentially) and never raises. A name it cannot
read whole is given as its qualified name (`aiter::fused_rmsnorm_gemm_a16w16_kernel<…>`), and a name
that is not mangled comes back unchanged.
"""

from __future__ import annotations

from functools import lru_cache

from kerneldiff.core.names.parts import qualified_prefix, strip_signature


MAX_DEPTH = 256          # nesting levels (each a few Python frames)
MAX_OUTPUT = 8_192       # characters of any part of the output (CK's longest kernels: ~2,700)
MAX_INPUT = 16_384       # longer mangled names: their qualified name only

_BUILTIN = {
    "v": "void", "w": "wchar_t", "b": "bool", "c": "char", "a": "signed char", "h": "unsigned char",
    "s": "short", "t": "unsigned short", "i": "int", "j": "unsigned int", "l": "long", "m": "unsigned long",
    "x": "long long", "y": "unsigned long long", "n": "__int128", "o": "unsigned __int128", "f": "float",
    "d": "double", "e": "long double", "g": "__float128", "z": "...",
}
_BUILTIN_D = {
    "d": "decimal64", "e": "decimal128", "f": "decimal32", "h": "half", "i": "char32_t", "s": "char16_t",
    "u": "char8_t", "a": "auto", "c": "decltype(auto)", "n": "decltype(nullptr)",
}
# literal suffixes / casts as c++filt writes them
_LIT_SUFFIX = {"i": "", "j": "u", "l": "l", "m": "ul", "x": "ll", "y": "ull"}
_OPERATORS = {
    "nw": "new", "na": "new[]", "dl": "delete", "da": "delete[]", "ps": "+", "ng": "-", "ad": "&", "de": "*",
    "co": "~", "pl": "+", "mi": "-", "ml": "*", "dv": "/", "rm": "%", "an": "&", "or": "|", "eo": "^",
    "aS": "=", "pL": "+=", "mI": "-=", "mL": "*=", "dV": "/=", "rM": "%=", "aN": "&=", "oR": "|=", "eO": "^=",
    "ls": "<<", "rs": ">>", "lS": "<<=", "rS": ">>=", "eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=",
    "ge": ">=", "ss": "<=>", "nt": "!", "aa": "&&", "oo": "||", "pp": "++", "mm": "--", "cm": ",", "pm": "->*",
    "pt": "->", "cl": "()", "ix": "[]", "qu": "?",
}
_UNARY = {"ps", "ng", "ad", "de", "co", "nt", "pp", "mm"}
_STD_SUBS = {"a": "std::allocator", "b": "std::basic_string", "s": "std::string", "i": "std::istream",
             "o": "std::ostream", "d": "std::iostream"}
# the same as the prefix of a nested name (a member or a constructor of it): written out
_STD_EXPANDED = {
    "std::string": "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
    "std::istream": "std::basic_istream<char, std::char_traits<char> >",
    "std::ostream": "std::basic_ostream<char, std::char_traits<char> >",
    "std::iostream": "std::basic_iostream<char, std::char_traits<char> >",
}


class _Fail(Exception):
    pass


def _digit(c: str) -> bool:
    """An ASCII digit: the ABI's numbers are ASCII (str.isdigit also takes '²' and '٣')."""
    return "0" <= c <= "9"


MAX_NUMBER_DIGITS = 9    # a longer length or value is no real symbol's (and int() limits digits)


class _T:
    """A type as text around its declarator: `left + right`, kind "s" simple, "f" function,
    "a" array, "p" a pointer/reference into a function or array (its declarator is open); `ref`
    the reference it ends in ("&", "&&" or ""); `pack` the elements of a template parameter pack."""

    __slots__ = ("left", "right", "kind", "pack", "ref")

    def __init__(self, left: str, right: str = "", kind: str = "s", pack: list | None = None, ref: str = "") -> None:
        if len(left) + len(right) > MAX_OUTPUT:
            raise _Fail("too long")
        self.left, self.right, self.kind, self.pack, self.ref = left, right, kind, pack, ref

    def __str__(self) -> str:
        if self.pack is not None:
            return _join(self.pack)
        return self.left + self.right


def _pointer(t: _T, sym: str) -> _T:
    if t.pack is not None:   # a declarator on a pack applies to each element
        return _T("", pack=[_pointer(e, sym) if isinstance(e, _T) else e for e in t.pack])
    ref = sym if sym in ("&", "&&") else ""
    if ref and t.ref:        # reference collapsing: & wins
        if t.ref == "&" or ref == "&":
            if t.ref == "&":
                return t
            return _T(t.left[:-2] + "&", t.right, t.kind, ref="&") if t.left.endswith("&&") else t
        return t
    if t.kind == "f":
        return _T(t.left + "(" + sym, ")" + t.right, "p", ref=ref)
    if t.kind == "a":
        return _T(t.left + " (" + sym, ")" + t.right, "p", ref=ref)
    return _T(t.left + sym, t.right, t.kind, ref=ref)


def _qualify(t: _T, quals: str) -> _T:
    if not quals:
        return t
    if t.pack is not None:
        return _T("", pack=[_qualify(e, quals) if isinstance(e, _T) else e for e in t.pack])
    if t.kind == "f":
        return _T(t.left, t.right + " " + quals, "f")
    have = t.left.rsplit("*", 1)[-1].rsplit("&", 1)[-1].split() if not t.ref else []
    quals = " ".join(q for q in quals.split() if q not in have)   # const of a const T stays one const
    if not quals:
        return t
    return _T(t.left + " " + quals, t.right, t.kind)


def _with_targs(name: str, args: list) -> str:
    """`name<args>`, with a space after an operator ending in '<' or '>' (`operator<< <char>`)."""
    return name + (" " if name.endswith("<") and "operator" in name else "") + _targs(args)


def _join(parts, sep: str = ", ") -> str:
    """`sep.join` of the non-empty parts, refusing to build more than MAX_OUTPUT characters."""
    out, size = [], 0
    for p in parts:
        text = str(p)
        if text:
            size += len(text) + len(sep)
            if size > MAX_OUTPUT:
                raise _Fail("too long")
            out.append(text)
    return sep.join(out)


def _targs(args: list) -> str:
    text = _join(args)
    return "<" + text + (" >" if text.endswith(">") else ">")


class _Name:
    """A (possibly qualified) name; `template` holds the last component's template args text."""

    __slots__ = ("text", "template", "base", "cv")

    def __init__(self, text: str, template: bool = False, base: str = "", cv: str = "") -> None:
        if len(text) > MAX_OUTPUT:
            raise _Fail("too long")
        self.text, self.template, self.base, self.cv = text, template, base or text, cv

    def __str__(self) -> str:
        return self.text


class _Parser:
    def __init__(self, s: str) -> None:
        self.s = s
        self.i = 0
        self.subs: list = []
        self.tparams: list | None = None     # the encoding's template arguments (for T_)
        self.depth = 0

    # --- plumbing ---------------------------------------------------------------------------
    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def take(self, prefix: str) -> bool:
        if self.s.startswith(prefix, self.i):
            self.i += len(prefix)
            return True
        return False

    def expect(self, prefix: str) -> None:
        if not self.take(prefix):
            raise _Fail(f"expected {prefix!r} at {self.i}")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Fail("too deep")

    def number(self) -> int:
        neg = self.take("n")
        j = self.i
        while _digit(self.peek()):
            self.i += 1
        if j == self.i or self.i - j > MAX_NUMBER_DIGITS:
            raise _Fail("number")
        v = int(self.s[j:self.i])
        return -v if neg else v

    def seq_id(self) -> int:
        """Base-36 sequence id up to '_' (none: 0, else value + 1)."""
        j = self.i
        while self.peek() and self.peek() != "_":
            c = self.peek()
            if not (_digit(c) or "A" <= c <= "Z"):
                raise _Fail("seq-id")
            self.i += 1
        text = self.s[j:self.i]
        if len(text) > MAX_NUMBER_DIGITS:
            raise _Fail("seq-id")
        self.expect("_")
        return 0 if not text else int(text, 36) + 1

    # --- encodings --------------------------------------------------------------------------
    def mangled(self) -> str:
        self.expect("_Z")
        out = self.encoding()
        if self.i < len(self.s):
            rest = self.s[self.i:]
            if rest.startswith("."):  # vendor suffixes: .cold, .isra.0, .kd (AMD kernel descriptor)
                clones = [c for c in rest[1:].split(".") if c and c != "kd"]
                if clones:
                    out += " [clone ." + ".".join(clones) + "]"
            else:
                raise _Fail("trailing")
        return out

    def encoding(self, name_only: bool = False) -> str:
        self.enter()
        try:
            if self.peek() in ("T", "G") and self.peek(1) not in ("", "_") and not _digit(self.peek(1)):
                return self.special()
            saved, saved_ctor = self.tparams, self._ctor
            self.tparams, self._ctor = None, False
            try:
                name = self.name(top=True)
                if self.peek() in ("", "E", ".") or (self.peek() == "_" and self.peek(1) == "Z"):
                    return str(name)
                ret = ""
                if name.template and not name.base.startswith(("~", "operator ")) and not self._ctor:
                    ret = str(self.type_()) + " "
                params = self.bare_params()
                if name_only:
                    return str(name)
                return f"{ret}{name}{params}" + (" " + name.cv if name.cv else "")
            finally:
                self.tparams, self._ctor = saved, saved_ctor
        finally:
            self.depth -= 1

    _ctor = False

    def bare_params(self) -> str:
        types = []
        while self.peek() not in ("", "E", "."):
            types.append(self.type_())
        if len(types) == 1 and str(types[0]) == "void":
            return "()"
        return "(" + _join(types) + ")"

    def special(self) -> str:
        for code, words in (("TV", "vtable for "), ("TT", "VTT for "), ("TI", "typeinfo for "),
                            ("TS", "typeinfo name for ")):
            if self.take(code):
                return words + str(self.type_())
        if self.take("Th"):
            self.call_offset("h")
            return "non-virtual thunk to " + self.encoding()
        if self.take("Tv"):
            self.call_offset("v")
            return "virtual thunk to " + self.encoding()
        if self.take("Tc"):
            for _ in range(2):
                kind = self.peek()
                if kind not in ("h", "v"):
                    raise _Fail("call offset")
                self.i += 1
                self.call_offset(kind)
            return "covariant return thunk to " + self.encoding()
        if self.take("TW"):
            return "TLS wrapper function for " + str(self.name())
        if self.take("TH"):
            return "TLS init function for " + str(self.name())
        if self.take("GV"):
            return "guard variable for " + str(self.name())
        if self.take("GTt") or self.take("GTn"):
            return "transaction clone for " + self.encoding()
        raise _Fail("special name")

    def call_offset(self, kind: str) -> None:
        """h <offset> _ | v <offset> _ <virtual offset> _ (the kind letter already read for Th/Tv)."""
        self.number()
        self.expect("_")
        if kind == "v":
            self.number()
            self.expect("_")

    # --- names ------------------------------------------------------------------------------
    def name(self, top: bool = False) -> _Name:
        self.enter()
        try:
            c = self.peek()
            if c == "N":
                return self.nested(top)
            if c == "Z":
                return self.local(top)
            if c == "S" and self.peek(1) != "t":
                sub = self.substitution()
                if self.peek() != "I":
                    raise _Fail("substitution as a name")
                args = self.template_args(top)
                return _Name(_with_targs(str(sub), args), True, str(sub))
            std = self.take("St")
            un = self.unqualified()
            text = ("std::" if std else "") + un.text
            if self.peek() == "I":
                self.subs.append(_T(text))
                args = self.template_args(top)
                return _Name(_with_targs(text, args), True, un.base)
            return _Name(text, False, un.base)
        finally:
            self.depth -= 1

    def nested(self, top: bool) -> _Name:
        self.expect("N")
        cv = self.cv_qualifiers()
        if self.take("R"):
            cv = (cv + " &").strip()
        elif self.take("O"):
            cv = (cv + " &&").strip()
        so_far = ""
        base = ""
        template = False
        pushed = 0
        while not self.take("E"):
            self.enter()
            try:
                c = self.peek()
                template = False
                if c == "I":
                    if not so_far:
                        raise _Fail("template args first")
                    args = self.template_args(top)
                    so_far = _with_targs(so_far, args)
                    template = True
                elif c == "T":
                    so_far = str(self.template_param())
                    base = so_far
                elif c == "S" and self.peek(1) != "t":
                    so_far = str(self.substitution())
                    so_far = _STD_EXPANDED.get(so_far, so_far)
                    base = so_far.split("<", 1)[0].rsplit("::", 1)[-1]
                    continue   # already in the table
                elif c == "D" and self.peek(1) in "tT":
                    so_far = self.decltype()
                    base = so_far
                elif c in ("C", "D") and so_far:
                    self.ctor_dtor()
                    name = base.split("<", 1)[0]
                    base = ("~" if c == "D" else "") + name
                    so_far += "::" + base
                    self._ctor = True
                elif c == "":
                    raise _Fail("end in nested name")
                else:
                    if self.take("St"):
                        so_far = "std"
                    un = self.unqualified()
                    base = un.base
                    so_far = (so_far + "::" if so_far else "") + un.text
                if len(so_far) > MAX_OUTPUT:
                    raise _Fail("too long")
                self.subs.append(_T(so_far))
                pushed += 1
            finally:
                self.depth -= 1
        if pushed:
            self.subs.pop()   # the whole name is no prefix
        if not so_far:
            raise _Fail("empty nested name")
        return _Name(so_far, template, base, cv)

    def local(self, top: bool) -> _Name:
        self.expect("Z")
        outer = self.encoding()
        self.expect("E")
        if self.take("s"):
            self.discriminator()
            return _Name(outer + "::string literal")
        if self.take("d"):
            if self.peek() != "_":
                self.number()
            self.expect("_")
        inner = self.name()
        self.discriminator()
        return _Name(outer + "::" + inner.text, inner.template, inner.base, inner.cv)

    def discriminator(self) -> None:
        if self.peek() == "_":
            if self.peek(1) == "_":
                self.i += 2
                self.number()
                self.expect("_")
            elif _digit(self.peek(1)):
                self.i += 2

    def unqualified(self) -> _Name:
        c = self.peek()
        if _digit(c):
            text = self.source_name()
        elif c == "U":
            if self.take("Ul"):
                params = self.lambda_params()
                n = self.optional_number()
                text = "{lambda(" + params + ")#" + str(n + 1) + "}"
            elif self.take("Ut"):
                n = self.optional_number()
                text = "{unnamed type#" + str(n + 1) + "}"
            else:
                raise _Fail("unqualified U")
        elif c == "L":   # internal linkage marker before a source name
            self.i += 1
            return self.unqualified()
        elif c == "D" and self.peek(1) == "C":
            self.i += 2
            parts = []
            while not self.take("E"):
                parts.append(self.source_name())
            text = "[" + ", ".join(parts) + "]"
        elif c.islower():
            text = self.operator_name()
        else:
            raise _Fail(f"unqualified {c!r}")
        base = text
        while self.take("B"):
            text += "[abi:" + self.source_name() + "]"
        return _Name(text, False, base)

    def optional_number(self) -> int:
        if self.take("_"):
            return 0
        n = self.number()
        self.expect("_")
        return n + 1

    def lambda_params(self) -> str:
        types = []
        while not self.take("E"):
            if self.peek() == "T" and self.peek(1) in "ynt":   # template param declarations
                self.template_param_decl()
                continue
            types.append(self.type_())
        if len(types) == 1 and str(types[0]) == "void":
            return ""
        return _join(types)

    def source_name(self) -> str:
        n = self.number()
        if n <= 0 or self.i + n > len(self.s):
            raise _Fail("source name")
        ident = self.s[self.i:self.i + n]
        self.i += n
        if ident.startswith("_GLOBAL__N"):
            return "(anonymous namespace)"
        return ident

    def operator_name(self) -> str:
        code = self.s[self.i:self.i + 2]
        if code == "cv":
            self.i += 2
            return "operator " + str(self.type_())
        if code == "li":
            self.i += 2
            return 'operator"" ' + self.source_name()
        if code in _OPERATORS:
            self.i += 2
            op = _OPERATORS[code]
            return "operator" + (" " if op[0].isalpha() else "") + op
        if self.peek() == "v" and _digit(self.peek(1)):   # vendor extended operator
            self.i += 2
            return "operator " + self.source_name()
        raise _Fail(f"operator {code!r}")

    def ctor_dtor(self) -> None:
        if self.take("CI"):
            self.peek()
            self.i += 1
            self.type_()
            return
        if self.peek() in "CD" and self.peek(1) in "012345":
            self.i += 2
            return
        raise _Fail("ctor/dtor")

    def decltype(self) -> str:
        self.i += 2
        e = self.expression()
        self.expect("E")
        return f"decltype ({e})"

    # --- substitutions and template parameters ----------------------------------------------
    def substitution(self):
        self.expect("S")
        c = self.peek()
        if c in _STD_SUBS:
            self.i += 1
            return _T(_STD_SUBS[c])
        n = self.seq_id()
        if n >= len(self.subs):
            raise _Fail("substitution out of range")
        return self.subs[n]

    def template_param(self):
        self.expect("T")
        if self.peek() == "L":   # lambda-scope template params: TL<level>__
            self.i += 1
            self.number() if self.peek() != "_" else None
            self.expect("_")
        n = self.seq_id()
        if self.tparams is None or n >= len(self.tparams):
            # a parameter of something we are inside of: name it as the ABI does
            return _T("auto" if self.tparams is None else f"T{n}")
        return self.tparams[n]

    def template_param_decl(self) -> None:
        """Ty / Tn <type> / Tt <decls> E / Tp <decl>: declarations only, nothing printed."""
        self.i += 1
        k = self.peek()
        self.i += 1
        if k == "y":
            return
        if k == "n":
            self.type_()
            return
        if k == "t":
            while not self.take("E"):
                if self.peek() != "T":
                    raise _Fail("template template decl")
                self.template_param_decl()
            return
        if k == "p":
            if self.peek() != "T":
                raise _Fail("pack decl")
            self.template_param_decl()
            return
        if k == "k":
            self.name()
            return
        raise _Fail("template param decl")

    def template_args(self, top: bool = False) -> list:
        self.expect("I")
        args: list = []
        saved = self.tparams
        if top:
            self.tparams = args   # T_ inside the args refers to those already read
        try:
            while not self.take("E"):
                if self.peek() == "":
                    raise _Fail("end in template args")
                args.append(self.template_arg())
        finally:
            if not top:
                self.tparams = saved
        if self.take("Q"):   # requires-clause
            self.expression()
        return args

    def template_arg(self):
        self.enter()
        try:
            c = self.peek()
            if c == "T" and self.peek(1) in "yntpk":
                self.template_param_decl()
                return self.template_arg()
            if c == "X":
                self.i += 1
                e = self.expression()
                self.expect("E")
                return _T(e)
            if c == "L":
                return _T(self.literal())
            if c == "J":
                self.i += 1
                items = []
                while not self.take("E"):
                    items.append(self.template_arg())
                return _T("", pack=items)
            return self.type_()
        finally:
            self.depth -= 1

    def literal(self) -> str:
        self.expect("L")
        if self.take("_Z") or self.take("Z"):
            # an entity as a template argument (`&silu<float>`): its name, not its signature
            text = self.encoding(name_only=True)
            self.expect("E")
            return text
        t = self.type_()
        ts = str(t)
        j = self.i
        while self.peek() and self.peek() != "E":
            self.i += 1
        value = self.s[j:self.i]
        self.expect("E")
        if value.startswith("n"):
            value = "-" + value[1:]
        if ts == "bool":
            return {"0": "false", "1": "true"}.get(value, f"(bool){value}")
        code = None
        for k, v in _BUILTIN.items():
            if v == ts:
                code = k
        if code in _LIT_SUFFIX:
            return value + _LIT_SUFFIX[code]
        if ts == "decltype(nullptr)":
            return "nullptr"
        return f"({ts}){value}"

    def expression(self) -> str:
        self.enter()
        try:
            c, code = self.peek(), self.s[self.i:self.i + 2]
            if c == "L":
                return self.literal()
            if c == "T":
                return str(self.template_param())
            if code == "fp":   # function parameter
                self.i += 2
                self.cv_qualifiers()
                n = self.seq_id()
                return f"{{parm#{n + 1}}}"
            if code in ("sr", "gs") or _digit(c) or code in ("on", "dn"):
                return self.unresolved_name()
            if code in ("sZ", "sP"):
                self.i += 2
                inner = self.template_param() if self.peek() == "T" else self.expression()
                return f"sizeof...({inner})"
            if code in ("st", "at"):
                self.i += 2
                return f"{'sizeof' if code == 'st' else 'alignof'} ({self.type_()})"
            if code in ("sz", "az"):
                self.i += 2
                return f"{'sizeof' if code == 'sz' else 'alignof'} ({self.expression()})"
            if code == "cv":
                self.i += 2
                t = self.type_()
                if self.take("_"):
                    items = []
                    while not self.take("E"):
                        items.append(self.expression())
                    return f"({t})({', '.join(items)})"
                return f"({t})({self.expression()})"
            if code in _OPERATORS and code not in ("cl", "cv", "qu"):
                self.i += 2
                op = _OPERATORS[code]
                if code in _UNARY:
                    return f"{op}{self.expression()}"
                lhs = self.expression()
                rhs = self.expression()
                return f"({lhs}){op}({rhs})"
            if code == "qu":
                self.i += 2
                a, b, d = self.expression(), self.expression(), self.expression()
                return f"({a})?({b}):({d})"
            if code == "cl":
                self.i += 2
                items = []
                while not self.take("E"):
                    items.append(self.expression())
                return f"{items[0]}({', '.join(items[1:])})" if items else "()"
            if c in "NSZ":
                return str(self.name())
            raise _Fail(f"expression {code!r}")
        finally:
            self.depth -= 1

    def simple_id(self) -> str:
        text = self.source_name()
        if self.peek() == "I":
            text = _with_targs(text, self.template_args())
        return text

    def base_unresolved_name(self) -> str:
        if self.take("on"):
            text = self.operator_name()
            if self.peek() == "I":
                text = _with_targs(text, self.template_args())
            return text
        if self.take("dn"):
            if _digit(self.peek()):
                return "~" + self.simple_id()
            return "~" + str(self.type_())
        return self.simple_id()

    def unresolved_name(self) -> str:
        """[gs] sr <qualifier>+ E <base> | sr <unresolved type> [<args>] <base> | srN … E <base> | [gs] <base>."""
        glob = "::" if self.take("gs") else ""
        if not self.take("sr"):
            return glob + self.base_unresolved_name()
        if self.take("N"):
            parts = [self.unresolved_type()]
            if self.peek() == "I":
                parts[0] = _with_targs(parts[0], self.template_args())
            while not self.take("E"):
                parts.append(self.simple_id())
            return glob + "::".join(parts + [self.base_unresolved_name()])
        if _digit(self.peek()):
            parts = []
            while True:
                parts.append(self.simple_id())
                if self.take("E"):
                    break
            return glob + "::".join(parts + [self.base_unresolved_name()])
        first = self.unresolved_type()
        if self.peek() == "I":
            first = _with_targs(first, self.template_args())
        return glob + first + "::" + self.base_unresolved_name()

    def unresolved_type(self) -> str:
        c = self.peek()
        if c == "T":
            t = self.template_param()
            self.subs.append(t)
            return str(t)
        if c == "D":
            t = _T(self.decltype())
            self.subs.append(t)
            return str(t)
        if c == "S":
            return str(self.substitution())
        raise _Fail("unresolved type")

    # --- types ------------------------------------------------------------------------------
    def cv_qualifiers(self) -> str:
        quals = []
        while self.peek() in ("r", "V", "K") and self.peek():
            quals.append({"r": "restrict", "V": "volatile", "K": "const"}[self.peek()])
            self.i += 1
        # c++filt order: const volatile restrict
        order = {"const": 0, "volatile": 1, "restrict": 2}
        return " ".join(sorted(quals, key=order.get))

    def type_(self) -> _T:
        self.enter()
        try:
            return self._type()
        finally:
            self.depth -= 1

    def _type(self) -> _T:
        c = self.peek()
        if c in _BUILTIN:
            self.i += 1
            return _T(_BUILTIN[c])
        if c == "u":
            self.i += 1
            t = _T(self.source_name())
            self.subs.append(t)
            return t
        if c == "D":
            d = self.peek(1)
            if d == "F":
                self.i += 2
                if self.take("16b"):
                    return _T("std::bfloat16_t")
                n = self.number()
                x = "x" if self.take("x") else ""
                self.expect("_")
                return _T(f"_Float{n}{x}")
            if d in ("B", "U"):
                self.i += 2
                n = self.number() if self.peek() != "_" else 0
                self.expect("_")
                return _T(f"{'unsigned ' if d == 'U' else ''}_BitInt({n})")
            if d in _BUILTIN_D:
                self.i += 2
                return _T(_BUILTIN_D[d])
            if d == "p":
                self.i += 2
                inner = self.type_()
                t = _T("", pack=list(inner.pack)) if inner.pack is not None else _T(f"{inner}...")
                self.subs.append(t)
                return t
            if d in ("t", "T"):
                t = _T(self.decltype())
                self.subs.append(t)
                return t
            if d == "v":
                self.i += 2
                if self.peek() == "_":
                    self.i += 1
                    n = self.expression()
                else:
                    n = str(self.number())
                self.expect("_")
                elem = self.type_()
                t = _T(f"{elem} __vector({n})")
                self.subs.append(t)
                return t
            if d in ("x", "o", "O", "w"):
                return self.function_type()
            raise _Fail(f"type D{d}")
        if c in ("r", "V", "K"):
            quals = self.cv_qualifiers()
            if self.peek() == "F":
                t = self.function_type()
                t = _qualify(t, quals)
            else:
                t = _qualify(self.type_(), quals)
            self.subs.append(t)
            return t
        if c == "U":   # vendor extended qualifier (address spaces)
            self.i += 1
            q = self.source_name()
            if self.peek() == "I":
                q += _targs(self.template_args())
            t = self.type_()
            t = _T(f"{t} {q}")
            self.subs.append(t)
            return t
        if c in ("P", "R", "O"):
            self.i += 1
            inner = self.type_()
            t = _pointer(inner, {"P": "*", "R": "&", "O": "&&"}[c])
            self.subs.append(t)
            return t
        if c in ("C", "G"):
            self.i += 1
            inner = self.type_()
            t = _T(f"{inner} {'_Complex' if c == 'C' else '_Imaginary'}")
            self.subs.append(t)
            return t
        if c == "F":
            t = self.function_type()
            return t
        if c == "A":
            self.i += 1
            if self.peek() == "_":
                dim = ""
            elif _digit(self.peek()):
                dim = str(self.number())
            else:
                dim = self.expression()
            self.expect("_")
            elem = self.type_()
            if elem.kind == "a":
                t = _T(elem.left, f" [{dim}]" + elem.right.lstrip(), "a")
            else:
                t = _T(str(elem), f" [{dim}]", "a")
            self.subs.append(t)
            return t
        if c == "M":
            self.i += 1
            cls = self.type_()
            member = self.type_()
            if member.kind == "f":
                t = _T(member.left + "(" + str(cls) + "::*", ")" + member.right, "p")
            else:
                t = _T(f"{member} {cls}::*")
            self.subs.append(t)
            return t
        if c == "T":
            t = self.template_param()
            self.subs.append(t)
            if self.peek() == "I":
                args = self.template_args()
                t = _T(str(t) + _targs(args))
                self.subs.append(t)
            return t
        if c == "S":
            if self.peek(1) == "t":
                name = self.name()
                t = _T(str(name))
                self.subs.append(t)
                return t
            sub = self.substitution()
            if self.peek() == "I":
                args = self.template_args()
                t = _T(str(sub) + _targs(args))
                self.subs.append(t)
                return t
            return sub
        if _digit(c) or c in ("N", "Z"):
            name = self.name()
            t = _T(str(name))
            self.subs.append(t)
            return t
        raise _Fail(f"type {c!r}")

    def function_type(self) -> _T:
        cv = self.cv_qualifiers()
        while self.peek() == "D" and self.peek(1) in ("x", "o", "O", "w"):
            k = self.peek(1)
            self.i += 2
            if k == "O":
                self.expression()
                self.expect("E")
            elif k == "w":
                while not self.take("E"):
                    self.type_()
        self.expect("F")
        self.take("Y")
        ret = self.type_()
        types = []
        ref = ""
        while not self.take("E"):
            if self.take("RE"):
                ref = "&"
                break
            if self.take("OE"):
                ref = "&&"
                break
            if self.peek() == "":
                raise _Fail("end in function type")
            types.append(self.type_())
        params = "" if len(types) == 1 and str(types[0]) == "void" else _join(types)
        right = f"({params})" + (" " + cv if cv else "") + (" " + ref if ref else "")
        t = _T(str(ret) + " ", right, "f")
        self.subs.append(t)
        return t


def is_mangled(name: str) -> bool:
    return name.startswith("_Z") and len(name) > 2


@lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    """What c++filt prints for an Itanium-mangled `name` (the name unchanged when it is not mangled;
    its qualified name with `<…>` when only its start can be read)."""
    if not is_mangled(name):
        return name
    if len(name) > MAX_INPUT:
        return qualified_prefix(name)
    try:
        return _Parser(name).mangled()
    except (_Fail, ValueError, IndexError, KeyError, TypeError, RecursionError):
        return qualified_prefix(name)


def readable(name: str) -> str:
    """The name to show people: demangled when mangled, without the parameter list of a demangled
    function (it repeats the template arguments' types) — the explorer's and reports' form."""
    if not is_mangled(name):
        return name
    full = demangle(name)
    if full == name:
        return name
    return strip_signature(full)
