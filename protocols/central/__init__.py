"""Central-DP strategies: server-only mechanisms on the graph that consenting nodes upload to a
trusted curator (one module per mechanism, on :class:`~.base.CentralStrategy`). torch may be
used here; nothing here is on a client's import path (a node runs the raw upload only)."""
