"""A module's kernel pairs: the aligned kernel positions of the comparison's layers
(`Comparison.alignments`) whose kernels a module of the aligned module tree launched
(`kerneldiff.core.compare.module_compare`), as a slow layer drills to its pairs.

A pair stands for one position over the passes; it is the module's when the kernel it is shown by
on either side (its representative row) was launched inside the module, so a module's pairs are the
positions of its kernels on both sides (a fusion that moved a kernel across modules shows on the
side it ran). Kernels outside every layer are in no alignment: a module made only of them has no
pairs, and its kernels are counted instead (`ModulePairs.a_kernels`, `b_kernels`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kerneldiff.core.compare.module_compare import node_rows


@dataclass
class ModulePairs:
    path: str
    pairs: list = field(default_factory=list)   # (layer, KernelPair), in layer then position order
    a_kernels: int = 0                          # the module's compared kernels on each side
    b_kernels: int = 0
    outside_a: int = 0                          # of those, kernels outside every layer (in no pair)
    outside_b: int = 0


def module_pairs(comparison, a, b, path: str, phase: str = "all") -> ModulePairs:
    ra, rb = node_rows(a, b, path, phase)
    ina = np.zeros(len(a.kernels), bool)
    inb = np.zeros(len(b.kernels), bool)
    ina[ra], inb[rb] = True, True
    out = ModulePairs(path, a_kernels=int(len(ra)), b_kernels=int(len(rb)),
                      outside_a=int(np.count_nonzero(a.kernels.layer[ra] < 0)),
                      outside_b=int(np.count_nonzero(b.kernels.layer[rb] < 0)))
    for al in sorted(comparison.alignments, key=lambda al: al.layer):
        for p in al.pairs:
            if (0 <= p.a_row < len(ina) and ina[p.a_row]) or (0 <= p.b_row < len(inb) and inb[p.b_row]):
                out.pairs.append((al.layer, p))
    return out
