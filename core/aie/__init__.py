"""AMD AIE (NPU) Perfetto traces: analysis and a synthetic generator."""
