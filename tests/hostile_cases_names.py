"""Hostile corpus, round two: names the analysis reads: demangler, classifier, argument stripping, step annotations, AIE tiles.

Cases use the builders of hostile_corpus; the corpus's harness (test_hostile.py) runs each through
`kerneldiff info` and `kerneldiff compare`. Every case loads: a name is data, whatever it holds
(Unicode digits, numbers beyond int()'s 4,300-digit limit, text that makes a backtracking regex
or a bracket scan quadratic), so it is shown and counted, never a crash or a hang."""

from __future__ import annotations

import json
from pathlib import Path

from hostile_corpus import GOOD_KERNELS, Case, _aie_bytes, dumps, good_doc, good_events, metadata

N = GOOD_KERNELS
PER_LAYER = N // 8          # good_doc(extra_kernel=...) adds one kernel per layer
CUT = r"first 4,096 were matched"      # the classifier's warning for names it matched only in part
DIGITS = "9" * 5000                     # beyond int()'s 4,300-digit limit


def _with_kernel(name: str) -> bytes:
    return dumps(good_doc(extra_kernel=name))


def _with_annotations(*names: str) -> bytes:
    """The good trace with extra step-like annotations (CPU and GPU copies) in its first step."""
    ev = good_events()
    for i, name in enumerate(names):
        ev.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1, "ts": 2.0 + i,
                   "dur": 1.0})
        ev.append({"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": 0, "tid": 7, "ts": 52.0 + i,
                   "dur": 1.0})
    return dumps({**metadata(), "traceEvents": ev})


def _with_op(op: str) -> bytes:
    """Every kernel's launching operator renamed to `op` in the last step."""
    ev = good_events()
    last = max(e["ts"] for e in ev if e.get("cat") == "cpu_op") - 9_000
    for e in ev:
        if e.get("cat") == "cpu_op" and e["ts"] > last:
            e["name"] = op
    return dumps({**metadata(), "traceEvents": ev})


def _aie_with_tiles(*tiles: str) -> bytes:
    """The synthetic AIE trace with its tiles renamed, in turn, to `tiles`."""
    events = json.loads(_aie_bytes())
    k = 0
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name" and isinstance(e.get("args"), dict):
            name = e["args"].get("name", "")
            if " for " in name:
                e["args"]["name"] = name.split(" for ", 1)[0] + " for " + tiles[k % len(tiles)]
                k += 1
    return json.dumps(events, ensure_ascii=False).encode()


def _args_close_parens(path: Path) -> None:
    """`k(` and 3 million `)`: stripping the parameter list must stay linear."""
    path.write_bytes(_with_kernel("k(" + ")" * 3_000_000))


def cases() -> list[Case]:
    return [
        # --- the demanglers: ASCII digits only, bounded numbers ---
        Case("names_mangled_superscript_digit", "a mangled name `_ZN²foo` ('²'.isdigit() is True, int('²') fails)",
             "load", _with_kernel("_ZN²foo"), kernels=N + PER_LAYER),
        Case("names_mangled_5000_digits", "`_Z` and 5,000 digits (beyond int()'s digit limit)", "load",
             _with_kernel("_Z" + DIGITS), kernels=N + PER_LAYER),
        Case("names_mangled_arabic_digits", "a mangled length in Arabic-Indic digits, then a real name", "load",
             _with_kernel("_ZN٣fooE3barv"), kernels=N + PER_LAYER),
        # --- step annotations ---
        Case("names_step_5000_digits", "vLLM step annotations holding 5,000-digit numbers", "load",
             _with_annotations(f"execute_context_1({DIGITS})_generation_0(0)",
                               f"execute_1_context_0(sq{DIGITS}sk0)_generation_{DIGITS}(sq1sk1)",
                               f"step[DECODE bs={DIGITS}]"), kernels=N),
        Case("names_step_unicode_digits", "step annotations with superscript and full-width digits", "load",
             _with_annotations("execute_context_²(1)_generation_0(0)", "execute_context_1(²)_generation_0(0)",
                               "step[DECODE bs=² toks=１２]", "ProfilerStep#²"), kernels=N),
        Case("names_step_many_contexts", "an annotation repeating `context_1` 400 times and no generation",
             "load", _with_annotations("execute_" + "context_1" * 400), kernels=N),
        # --- the classifier: bounded matching ---
        Case("names_fmoe_repeated", "a kernel named 'fmoe' x 60,000 (backtracks `fmoe\\w*(silu|…)`)", "load",
             _with_kernel("fmoe" * 60_000), warn=CUT, kernels=N + PER_LAYER),
        Case("names_rmsnorm_repeated", "a kernel named 'rmsnorm' x 40,000 (backtracks `rms_?norm\\w*gemm`)", "load",
             _with_kernel("rmsnorm" * 40_000), warn=CUT, kernels=N + PER_LAYER),
        Case("names_inductor_16k", "a 16 KB Inductor name listing mean_pow again and again", "load",
             _with_kernel("triton_red_fused_" + "_".join(["mean_pow_rsqrt"] * 1200) + "_0"), warn=CUT,
             kernels=N + PER_LAYER),
        Case("names_inductor_long_rules", "a 4 KB name made of the registry's fused-kernel words", "load",
             _with_kernel(("gemm_" * 400 + "matmul_" * 280)[:4000]), kernels=N + PER_LAYER),
        Case("names_inductor_superscript_index", "an Inductor kernel numbered '²' and one numbered with "
             "5,000 digits", "load",
             dumps({**metadata(), "traceEvents": good_events(extra_kernel="triton_poi_fused_add_²")
                    + good_events(steps=1, extra_kernel="triton_poi_fused_add_" + DIGITS)}),
             warn=CUT, kernels=N + PER_LAYER + N // 3 + 2),   # one more step of 2 layers
        Case("names_args_close_parens", "`k(` and 3 million `)` (a quadratic parameter-list scan)", "load",
             make=_args_close_parens, warn=CUT, kernels=N + PER_LAYER, big=True),
        Case("names_long_operator", "kernels launched by a 100 KB operator name of `flash_attn` words", "load",
             _with_op("aten::" + "flash_attn" * 10_000 + "!"), kernels=N),
        Case("names_module_superscript", "module instances numbered '²' and with 5,000 digits", "load",
             dumps({**metadata(), "traceEvents": good_events() + [
                 {"ph": "X", "cat": "python_function", "name": f"nn.Module: Linear_{n}", "pid": 1, "tid": 1,
                  "ts": 20.0, "dur": 100.0, "args": {"Python id": 9_000 + i, "Python parent id": 1}}
                 for i, n in enumerate(("²", DIGITS))]}), kernels=N),
        # --- AIE tiles ---
        Case("names_aie_tile_superscript", "an AIE trace whose tiles are named '²' and 5,000 digits", "error",
             _aie_with_tiles("²", DIGITS, "tile²,1"), problem="AIE", info="load"),
    ]
