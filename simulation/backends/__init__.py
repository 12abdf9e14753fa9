"""Collection backends: how the nodes' reports reach the server (all give the same reports)."""
