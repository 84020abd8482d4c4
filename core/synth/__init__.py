"""The synthetic Kineto trace generator with planted, known differences (see `pair`)."""
