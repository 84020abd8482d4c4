"""Reading a trace: the instant probe, bytes and gzip, event decoding (msgspec and the compiled
scanner), the parallel load into columns, and the on-disk cache of loaded models."""
