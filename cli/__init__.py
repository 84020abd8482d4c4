"""Command line: `kerneldiff [A [B]]`, `kerneldiff info`, `compare`, `synth`, `aie`."""
