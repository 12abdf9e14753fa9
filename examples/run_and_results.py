"""Runs from Python (the CLI's settings), recorded in a results store, read back as a table."""

import tempfile
from pathlib import Path

import ldpgraph

with tempfile.TemporaryDirectory() as folder:
    store = Path(folder) / "runs.db"
    for epsilon in (2.0, 8.0):
        result = ldpgraph.run(
            dataset="synthetic:n=300,classes=3,d=16", protocol="hogs", epsilon=epsilon,
            backend="local", epochs=50, seed=0, store=store,
        )  # fmt: skip
        print(epsilon, result.accuracy, result.privacy["headline"])
    table = ldpgraph.results.load(store)  # a pandas DataFrame (pip install 'ldpgraph[frames]')
    print(table[["protocol", "epsilon", "accuracy.test", "privacy.epsilon"]])
