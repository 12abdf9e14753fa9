"""The results of runs: their identity, the SQLite store, tables and the paper report."""
