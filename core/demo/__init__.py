"""The bundled demo pair: a synthetic AMD MI300X vs NVIDIA H100 trace of the same vLLM-like model
with planted differences, and the ground truth describing them (schema in `kerneldiff.core.synth.pair`).

Regenerate after changing the generator: `python -c "from kerneldiff.core.synth.pair import write_demo; write_demo('core/demo')"`
(tests/test_synth.py fails while the shipped files differ from what the generator writes).
"""

from __future__ import annotations

from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent
DEMO_A = DEMO_DIR / "demo_a.json.gz"
DEMO_B = DEMO_DIR / "demo_b.json.gz"
DEMO_TRUTH = DEMO_DIR / "demo_truth.json"

__all__ = ["DEMO_DIR", "DEMO_A", "DEMO_B", "DEMO_TRUTH"]
