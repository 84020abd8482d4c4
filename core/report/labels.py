"""The words and cells every report writes about a comparison (text, Markdown, HTML): a shape's
label, a side's TFLOP/s with its % of peak, the roof it sits under, what a fusion finding fuses.
One place, so the reports say the same thing in the same digits. Plain strings, no markup: each
report escapes them its own way."""

from __future__ import annotations

from kerneldiff.core.names.display import short_name
from kerneldiff.core.report import format as fmt


def divisors(cmp) -> tuple[int, int]:
    """What each side's totals are divided by on the comparison's basis (its passes when per pass)."""
    if cmp.basis == "per_pass":
        return max(cmp.a.passes, 1), max(cmp.b.passes, 1)
    return 1, 1


def share(x: float) -> str:
    """A share of a gap: whole percents from 10%, one decimal below."""
    return fmt.pct(x, 0 if x >= 0.095 else 1)


def rate_cell(side, pct: str = "pct_peak") -> str:
    """`611 62%`: TFLOP/s and % of the dtype's peak."""
    if side.tflops is None:
        return fmt.ABSENT
    p = getattr(side, pct)
    return fmt.rate(side.tflops) + (f" {fmt.percent(p)}" if p is not None else "")


def roof_cell(side) -> str:
    """`mem 54%`: the roof a shape sits under on that GPU and how close it gets."""
    if side.bound is None:
        return fmt.ABSENT
    return f"{'mem' if side.bound == 'memory' else 'comp'} {fmt.percent(side.pct_roofline)}"


def shape_times(cmp, row) -> tuple[float | None, float | None]:
    """A shape's time on each side, on the comparison's basis (None where the side runs none)."""
    na, nb = divisors(cmp)
    return (row.a.total_us / na if row.a.calls else None, row.b.total_us / nb if row.b.calls else None)


def gemm_shape(r) -> tuple[str, str]:
    """(operator, `[batch × ]m×n×k`)."""
    return r.op.removeprefix("aten::"), (f"{r.batch} × " if r.batch > 1 else "") + f"{r.m}×{r.n}×{r.k}"


def attention_shape(r) -> tuple[str, str]:
    """("", `B4 H32/8 S256×256 D64 causal*`)."""
    d = f"D{r.head_dim}" + (f"/{r.head_dim_v}" if r.head_dim_v != r.head_dim else "")
    shape = (("bwd " if r.op.endswith("backward") else "") + batch_heads(r) +
             f" S{r.seq_q}×{r.seq_k} {d}" + causal_mark(r)
             + (f" dropout {r.dropout:g}" if getattr(r, "dropout", None) else ""))
    return "", shape


def causal_mark(r) -> str:
    """` causal` (its recorded is_causal), ` causal*` (assumed: no mask, Sq = Sk), or nothing."""
    if not r.causal:
        return ""
    return " causal" if getattr(r, "causal_read", False) else " causal*"


def assumed_causal(rows) -> bool:
    """Whether any shape's causality was assumed (the footnote's `*`)."""
    return any(r.causal and not getattr(r, "causal_read", False) for r in rows)


def batch_heads(r) -> str:
    """`B4 H32/8`; `BH16` when only their product is known (eager attention's 3-D bmm folds them)."""
    if r.batch is None or r.heads is None:
        return f"BH{r.batch_heads}" if getattr(r, "batch_heads", None) else "B? H?"
    return f"B{r.batch} H{r.heads}/{r.kv_heads}"


def operation_label(o) -> str:
    return o.category + (f" (only {o.only_in.upper()})" if o.only_in else "")


def operation_times(cmp, o) -> tuple[float | None, float | None]:
    """An operation's time on each side, on the comparison's basis (None where the side runs none)."""
    na, nb = divisors(cmp)
    return (o.a.total_us / na if o.a.count else None, o.b.total_us / nb if o.b.count else None)


NOT_FUSIONS = ("launch_count",)   # findings the fusion detectors make that fuse nothing: extra memsets


def fusions_and_launch_counts(fusions) -> tuple[list, list]:
    """The findings that are fusions, and the launch-count differences (shown apart)."""
    return ([f for f in fusions if f.kind not in NOT_FUSIONS], [f for f in fusions if f.kind in NOT_FUSIONS])


def fusion_what(f) -> str:
    """What a fusion finding fuses, in one line (led by its phase where phase `all` spans several)."""
    return (f"{f.phase}: " if getattr(f, "phase", "") else "") + _what(f)


def _what(f) -> str:
    if f.fused_group:
        return (f"{f.fused_category}{' in ' + f.module if f.module else ''}: {len(f.fused_group)} kernel"
                f"{'s' if len(f.fused_group) != 1 else ''} for {len(f.component_group)} "
                f"({', '.join(o.split('::')[-1] for o in f.component_ops)})")
    if f.kind == "launch_count":
        return f"{f.fused_category}: {f.occurrences} memsets the other side does not launch"
    if f.kind == "count_imbalance":
        return f"{f.fused_category}: {f.occurrences} extra launches on the other side"
    if f.kind == "missing_kernel":
        return f"{short_name(f.component_kernels[0], 40)} ({f.fused_category}) missing"
    return f"{f.fused_category} = {' + '.join(f.component_categories)}"


def estimated_saving(f) -> str:
    return fmt.us(f.estimated_saving.total_all_us) if f.estimated_saving else fmt.ABSENT


def group_kernel(k, short: dict[str, str] | None = None) -> str:
    """One kernel of an op-level fusion group: its operations (or short name) and mean time;
    `short`: the group's names as `distinct_short_names` gives them (kernels alike read apart)."""
    if k.ops and all("::" in o for o in k.ops):
        return f"{', '.join(k.ops)} {fmt.us(k.mean_us)}"
    name = short.get(k.name) if short else None
    return f"{name or short_name(k.name, 44)} [{', '.join(k.ops) or k.category}] {fmt.us(k.mean_us)}"


def layer_name(l) -> str:
    """`7`, or `vision 7` in a model of several stacks."""
    if l.layer < 0:
        return "outside"
    return f"{l.stack} {l.stack_layer}" if getattr(l, "stack", "") else str(l.layer)


def plural(n: int, word: str, many: str = "") -> str:
    """`1 pass`, `48 passes`, `1,024 kernels`."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def layer_test_note(n_layers: int) -> str:
    """What a layer row's ± and t values mean (`core.compare.layer_significance`)."""
    from kerneldiff.core.compare.layer_significance import critical

    return (f"± passes: the gap's spread over the passes; t: the per-pass gap over its standard error "
            f"√(σA²/nA + σB²/nB) of the steady passes; t vs typical: against the typical layer's gap, "
            f"* where |t| > {critical(n_layers):.2f} (5 %, corrected for {n_layers} layers)")


def gemm_coverage(cmp) -> str:
    """What share of each side's GEMM time the GEMM shapes cover (kernels whose operator recorded
    no input shapes are not in them): `shapes cover 100% of A's GEMM time, 11% of B's (23.5 of
    208.5 ms)`; "" without GEMM time."""
    from kerneldiff.core.compare.comparability import gemm_coverage as cover

    cov = cover(cmp)
    parts = []
    for s in ("a", "b"):
        shaped, total = cov[s]
        if total <= 0:
            continue
        part = f"{shaped / total:.0%} of {s.upper()}'s"
        if shaped < 0.995 * total:
            part += f" ({shaped / 1000:,.1f} of {total / 1000:,.1f} ms)"
        parts.append(part)
    return f"shapes cover {', '.join(parts)} GEMM time" if parts else ""

