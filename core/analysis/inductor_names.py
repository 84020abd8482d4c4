"""What an Inductor (torch.compile) kernel's name says: `triton_<kind>_fused_<op>_<op>..._<n>`
read into its kind and the ops it was fused from (`parse_inductor`). The classifier's
[[inductor_rules]] decide such kernels by these, never by kernel-name rules."""

from __future__ import annotations

import re
from typing import NamedTuple

from kerneldiff.core.analysis.rule_matcher import MAX_MATCH_CHARS
from kerneldiff.core.lazy_pattern import LazyPattern

INDUCTOR_KINDS = ("poi", "red", "per", "tem", "for")   # pointwise, reduction, persistent reduction, template, foreach


class InductorKernel(NamedTuple):
    """What an Inductor kernel's name says: `triton_<kind>_fused_<op>_<op>..._<n>`."""
    kind: str                    # one of INDUCTOR_KINDS
    ops: tuple[str, ...]         # the listed ops (aten overload-packet names), as listed
    index: int | None            # the trailing kernel number


# Inductor names a fused kernel "triton_" + kind + "_fused_" + the ops it was made from, joined
# by "_", + "_" + a kernel number (torch/_inductor: get_fused_kernel_name + next_kernel_suffix).
# The ops are aten overload-packet names (`original_aten`), de-duplicated and SORTED, at most
# `kernel_name_max_ops` of them. Op names contain "_" themselves (`_to_copy`, `bitwise_and`,
# `_scaled_dot_product_cudnn_attention`), so the text splits ambiguously; the split chosen is the
# cheapest one (known op names are cheap, unknown words dear) that keeps the ops in sorted order.
# Known names: the list below plus every op the registry's Inductor rules mention.

_INDUCTOR_NAME = re.compile(r"^triton_(poi|red|per|tem|for)(?:_fused(?:_(.*?))??(?:_([0-9]+))?|_([0-9]+))$", re.S)
_INDUCTOR_PREFIX = LazyPattern(r"triton_(poi|red|per|tem|for)_")
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
