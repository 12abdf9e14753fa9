"""Datasets, splits, partitions, runs, sweeps and the ldpgraph CLI (the simulation side)."""
