"""A model that never generates runs `forward` passes, not prefill or decode.

Prefill and decode are the two halves of generation: a prompt's pass, then one pass per new token
over a KV cache. A detector, a classifier or a retriever (OWLv2, BERT, ViT) runs whole forwards; its
passes read "prefill" only because each takes many tokens at once. The passes are `forward` when the
trace says the model does not generate: its forward calls are a model class that is not a generative
head (`*ForCausalLM`, `*LMHeadModel`, `*ForConditionalGeneration`, ...), no `generate` frame runs,
and no pass is a decode. Without module calls (and without a generate frame) nothing says what the
model is: a pass of many tokens may be a prompt's or a whole forward, so such passes read `unknown`
rather than a confident prefill.
"""

from __future__ import annotations

import re

import numpy as np

from kerneldiff.core.analysis.attribution import launch_time
from kerneldiff.core.analysis.modules import module_calls, top_level_model
from kerneldiff.core.lazy_pattern import LazyPattern
from kerneldiff.core.model import TraceModel
from kerneldiff.core.numbers import distinct

# the heads of models that generate (HF transformers' naming; vLLM and SGLang annotate their steps)
GENERATIVE = LazyPattern(r"CausalLM|LMHead|ConditionalGeneration|Seq2Seq|Generation|ForSpeech|GPT|Decoder(?!Layer)"
                        r"|Llama|Mistral|Qwen|Gemma|Phi|Falcon|Mixtral|DeepSeek|Mamba|Jamba|Olmo|Bloom",
                        re.IGNORECASE)
_GENERATE_FRAME = LazyPattern(r"\): (generate|_sample|_greedy_search|_beam_search|_assisted_decoding)$")


def _generate_frame(model: TraceModel) -> bool:
    p = model.python
    if not len(p):
        return False
    ids = distinct(p.name[p.name >= 0])
    return any(_GENERATE_FRAME.search(model.strings[int(i)]) for i in ids.tolist())


def never_generates(model: TraceModel) -> str | None:
    """Why the model does not generate (its forward class), or None when it may or nothing says."""
    if any(s.phase == "decode" for s in model.steps):
        return None
    calls = module_calls(model)
    if not len(calls):
        return None
    top = top_level_model(calls, launch_time(model))
    if top is None or GENERATIVE.search(top) or _generate_frame(model):
        return None
    return top


def _nothing_says(model: TraceModel) -> bool:
    """No pass is a decode, no module call names the model and no generate frame runs: whether the
    model generates is not in the trace."""
    return not any(s.phase == "decode" for s in model.steps) and not len(module_calls(model)) \
        and not _generate_frame(model)


def mark_forward(model: TraceModel) -> None:
    """Passes of a model that never generates: `forward` (they read prefill from their token count)."""
    from kerneldiff.core.model import PHASE_ID

    if not model.steps or not all(s.phase in ("prefill", "unknown") for s in model.steps):
        return
    if not any(s.phase == "prefill" for s in model.steps):
        return
    top = never_generates(model)
    if top is not None:
        phase, why = "forward", f"forward: {top} does not generate"
    elif _nothing_says(model):
        # a prompt's pass and a detector's forward both take many tokens at once
        phase, why = "unknown", "unknown: prefill or a whole forward (no module call or generate frame says " \
                                "whether the model generates)"
    else:
        return
    for s in model.steps:
        if s.phase == "prefill":
            s.phase = phase
    k = model.kernels
    k.phase = np.where(k.phase == PHASE_ID["prefill"], PHASE_ID[phase], k.phase).astype(np.int8)
    model.phase_source += f"; {why}"
