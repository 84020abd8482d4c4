"""PyTorch's generic kernels by what they compute: `vectorized_elementwise_kernel<4,
rsqrt_kernel_cuda(TensorIteratorBase&)::{lambda()#2}::…{lambda(float)#1}, std::array<char*, 2>>`
is an rsqrt, so in a narrow cell it reads `rsqrt vec_ew<4>` rather than `vec_ew<4, rsqrt…` or
`unro…#7}::opera…`. The op is the functor or the function the kernel's template arguments name;
the template (elementwise, vectorised and its width, reduce…) and the element type follow it."""

from __future__ import annotations

from typing import NamedTuple

from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.names.parts import drop_return_type, strip_args

# the generic templates, as their unqualified name starts, and how the gist names them
_TEMPLATES = (("vectorized_elementwise_kernel<", "vec_ew"), ("unrolled_elementwise_kernel<", "unrolled_ew"),
              ("elementwise_kernel_with_index<", "ew_with_index"), ("index_elementwise_kernel<", "index_ew"),
              ("elementwise_kernel<", "ew"), ("reduce_kernel<", "reduce"),
              ("multi_tensor_apply_kernel<", "multi_tensor_apply"))
_QUALIFIED = LazyPattern(r"^(?:[\w]+::|\(anonymous namespace\)::)+")
_VEC = LazyPattern(r"\s*(\d+)\s*,")
_VOID = LazyPattern(r"^void\s+")
# functors that only wrap the one that says what is computed (BinaryFunctor<…, MulFunctor<float>>)
_WRAPPERS = frozenset({"Binary", "AUnary", "BUnary", "Unary", "Reduce", "func_wrapper"})
_CUDA_FUNCTOR = LazyPattern(r"\bCUDAFunctor(OnSelf|OnOther)?_(\w+)")
_FUNCTOR = LazyPattern(r"\b([A-Za-z]\w*?)(?:Functor|Ops|_functor)\b")
_FUNCTION = LazyPattern(r"\b([A-Za-z_]\w*)(?:<[^<>()]*>)?\(")
_NOT_OPS = frozenset({"lambda", "operator", "gpu_kernel_impl", "gpu_kernel_impl_nocast", "launch_kernel"})
_OP_SUFFIX = LazyPattern(r"(?:_cuda_kernel|_kernel_cuda|_kernel_impl|CUDAKernelImpl|_kernel|_impl|_cuda_out)$")
_LAMBDA_ARGS = LazyPattern(r"\{lambda\(([^(){}]+)\)#\d+\}")
_SCALAR = LazyPattern(r"\b(?:c10::)?(BFloat16|Half|Float8_\w+|float|double|long|int|short|bool|"
                     r"unsigned char|signed char|complex<\w+>)\b")


# a template argument's type as the Shapes tab names dtypes (analysis.flops.DTYPES, which names
# below analysis cannot import): `Mul(bf16) ew` and `Mul(fp32) ew` are short enough to keep apart
_SHORT_TYPE = {"BFloat16": "bf16", "Half": "fp16", "float": "fp32", "double": "fp64", "long": "int64",
               "int": "int32", "short": "int16", "unsigned char": "uint8", "signed char": "int8"}


class Gist(NamedTuple):
    op: str          # what is computed: rsqrt, Mul, add, direct_copy, sum…
    template: str    # vec_ew<4>, ew, unrolled_ew, reduce…
    dtype: str       # the element type where the name says it (float, BFloat16…), else ""

    def text(self, with_dtype: bool = False) -> str:
        op = f"{self.op}({self.dtype})" if with_dtype and self.dtype else self.op
        return f"{op} {self.template}"


def may_name_a_template(name: str) -> bool:
    """Does `name` hold one of the generic templates' names? What `gist` reads is a part of the
    name: without one, it names none."""
    return "elementwise_kernel" in name or "reduce_kernel<" in name or "multi_tensor_apply_kernel<" in name


def gist(name: str) -> Gist | None:
    """The gist of a readable (demangled) name of one of PyTorch's generic kernels; None for any
    other kernel, or one whose template arguments name no op."""
    if not may_name_a_template(name):
        return None
    return gist_of_signature(drop_return_type(strip_args(name.strip())))


def gist_of_signature(signature: str) -> Gist | None:
    """`gist` of a name already without its parameter list and return type (`strip_signature`)."""
    if not may_name_a_template(signature):
        return None
    # `void (anonymous namespace)::k<…>`: drop_return_type keeps a return type before a parenthesis
    s = _QUALIFIED.sub("", _VOID.sub("", signature))
    for prefix, short in _TEMPLATES:
        if s.startswith(prefix):
            break
    else:
        return None
    args = s[len(prefix):]
    if short == "vec_ew":
        vec = _VEC.match(args)
        short = f"vec_ew<{vec.group(1)}>" if vec else short
    found: list[tuple[int, str]] = []
    for m in _CUDA_FUNCTOR.finditer(args):
        found.append((m.start(), f"{m.group(1)}_{m.group(2)}" if m.group(1) else m.group(2)))
    for m in _FUNCTOR.finditer(args):
        if m.group(1) not in _WRAPPERS and not m.group(1).startswith("CUDA"):
            found.append((m.start(), m.group(1)))
    for m in _FUNCTION.finditer(args):
        if m.group(1) not in _NOT_OPS:
            found.append((m.start(), _OP_SUFFIX.sub("", m.group(1)) or m.group(1)))
    if not found:
        return None
    at, op = min(found)
    # the element type: the innermost lambda's argument (`{lambda(c10::BFloat16)#1}`; not the
    # `{lambda(int)#1}` over indices every gpu_kernel_impl wraps), else the first type named
    # (BinaryFunctor<c10::BFloat16, …, MulFunctor<float>> works on BFloat16)
    lambdas = [a for a in _LAMBDA_ARGS.findall(args) if a.strip() and a.strip() != "int"]
    typed = _SCALAR.search(lambdas[-1]) if lambdas else None
    typed = typed or _SCALAR.search(args)
    dtype = typed.group(1) if typed else ""
    return Gist(op, short, _SHORT_TYPE.get(dtype, dtype))
