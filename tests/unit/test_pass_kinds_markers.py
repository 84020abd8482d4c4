"""The pass kinds' markers are searched only in names holding one of their literals
(core/analysis/pass_kinds.py): that gate must never drop a name its pattern finds. Names are built
from the patterns' own pieces (every branch, in any case), fragments of real runtime and Python
frame names, and noise, and the gated search is held to the plain one."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kerneldiff.core.analysis.pass_kinds import MARKERS, marker_hits

PIECES = ["compile_inner", "entire_frame_compile", "backend_compile", "fx_codegen_and_compile",
          "inductor_compile", "OutputGraph.call_user_compiler", "create_aot_dispatcher_function",
          "_dynamo/convert_frame.py(123): _compile", "_inductor/compile_fx.py(9): compile_fx",
          "cudaStreamBeginCapture", "hipStreamBeginCapture", "cuGraphInstantiate", "hipGraphInstantiate",
          "CUDAGraphNode.record", "cudagraph_trees.py(77): record_function", "CUDAWarmupNode",
          "cudagraph_trees.py(5): _run_cuda_warmup", "warmup", "warm up", "Warm_Up", "WARM-UP",
          "cudaLaunchKernel", "aten::mm", "ProfilerStep#3", "execute_model", " ", "_", "(", "): ", "x"]
NAMES = st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join).flatmap(
    lambda s: st.sampled_from([s, s.lower(), s.upper(), s.swapcase()]))


@settings(max_examples=500, deadline=None)
@given(names=st.lists(NAMES, min_size=1, max_size=30))
@example(names=["WARMUP of the cache", "CUDAWARMUPNODE", "Compile_Inner"])
def test_the_literals_never_drop_a_match(names):
    texts = list(enumerate(names))
    for _, literals, fold, pattern in MARKERS:
        plain = [i for i, t in texts if re.search(pattern._text, t, pattern._flags)]
        assert marker_hits(texts, literals, fold, pattern) == plain
        assert fold == bool(pattern._flags & re.I)
