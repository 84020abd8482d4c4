"""Runs of many GPUs: a run is a set of rank traces, each reduced to a compact rank summary by a
pure function of its file, then compared rank by rank and collective by collective."""
