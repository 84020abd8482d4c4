"""Layer blocks and the stacks they form, on small module-call trees (core.analysis.stacks)."""

from __future__ import annotations

import numpy as np

from kerneldiff.core.analysis.modules import ModuleCalls
from kerneldiff.core.analysis.stacks import block_classes, group, layer_label, parents


def _calls(tree):
    """ModuleCalls from [(label, ts, end, depth)] in start order; launches: 10 per µs inside leaves."""
    classes, cls_id, inst = [], [], []
    for label, *_ in tree:
        c, _, i = label.rpartition("_")
        if c not in classes:
            classes.append(c)
        cls_id.append(classes.index(c))
        inst.append(int(i))
    ts = np.array([t[1] for t in tree], float)
    end = np.array([t[2] for t in tree], float)
    depth = np.array([t[3] for t in tree], np.int64)
    return ModuleCalls(classes, np.array(cls_id, np.int32), np.array(inst, np.int64), ts, end,
                       np.zeros(len(tree), np.int64), depth)


def _vlm(vision: int, text: int):
    """Model > VisionTower > Encoder > `vision` blocks (each an Attention); TextModel > `text`
    DecoderLayers (each an Attention); then two Heads without attention."""
    tree = [("MyModelForDetection_0", 0, 1000, 0), ("MyModelVisionTower_0", 1, 400, 1), ("MyModelEncoder_0", 2, 399, 2)]
    x = 3.0
    for i in range(vision):
        tree += [(f"MyModelEncoderLayer_{i}", x, x + 10, 3), (f"MyModelAttention_{i}", x + 1, x + 5, 4)]
        x += 11
    tree += [("MyModelTextModel_0", 401, 800, 1)]
    x = 402.0
    for i in range(text):
        tree += [(f"MyModelDecoderLayer_{i}", x, x + 20, 2), (f"MyModelSelfAttention_{i}", x + 1, x + 9, 3)]
        x += 21
    tree += [("MyModelHead_0", 801, 850, 1), ("MyModelHead_1", 851, 900, 1)]
    calls = _calls(tree)
    # kernels launched inside the blocks and the heads (the heads launch more than a block)
    launch = np.concatenate([np.arange(a + 0.5, b, 1.0) for (n, a, b, d) in tree if "Layer" in n or "Head" in n])
    return calls, launch


def test_two_towers_are_two_stacks_in_order():
    calls, t = _vlm(4, 3)
    classes = block_classes(calls, t)
    assert set(classes) == {"MyModelEncoderLayer", "MyModelDecoderLayer"}    # not the heads: no attention
    rows = np.sort(np.concatenate([calls.of_class(c) for c in classes]))
    sid, stacks = group(calls, rows, parents(calls))
    assert [s["name"] for s in stacks] == ["vision", "text"]
    assert np.bincount(sid).tolist() == [4, 3]
    for s, n, first in zip(stacks, (4, 3), (0, 4)):
        s["layers"], s["first_layer"] = n, first
    assert [layer_label(stacks, i) for i in (0, 3, 4, 6)] == ["vision 0", "vision 3", "text 0", "text 2"]


def test_a_container_of_blocks_is_not_the_layer():
    """Two encoders (2 instances, both launching every kernel of their blocks) against their blocks:
    the blocks are the layers."""
    tree = [("NetModel_0", 0, 500, 0), ("NetEncoder_0", 1, 200, 1)]
    x = 2.0
    for i in range(3):
        tree += [(f"NetEncoderLayer_{i}", x, x + 50, 2), (f"NetAttention_{i}", x + 1, x + 20, 3)]
        x += 60
    tree += [("NetEncoder_1", 201, 400, 1)]
    x = 202.0
    for i in range(3, 5):
        tree += [(f"NetEncoderLayer_{i}", x, x + 50, 2), (f"NetAttention_{i}", x + 1, x + 20, 3)]
        x += 60
    calls = _calls(tree)
    launch = np.concatenate([np.arange(a + 0.5, b, 1.0) for (n, a, b, d) in tree if "Layer" in n])
    assert block_classes(calls, launch) == ["NetEncoderLayer"]


def test_one_stack_labels_keep_bare_numbers():
    stacks = [{"name": "decoder", "module": "LlamaDecoderLayer", "layers": 16, "first_layer": 0}]
    assert layer_label(stacks, 7) == "7"
