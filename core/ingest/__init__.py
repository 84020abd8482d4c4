"""Reading a trace: the instant probe, bytes (gzip through core/gzip_stream.py), event decoding
(msgspec and the compiled scanner), the parallel load into columns, and the on-disk cache of
loaded models."""
