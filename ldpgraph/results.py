"""A results store as a table (``ldpgraph.simulation.results.frame``)."""

from ldpgraph.simulation.results.frame import flat_rows, load

__all__ = ["flat_rows", "load"]
