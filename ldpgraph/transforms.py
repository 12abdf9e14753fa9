"""The local mechanisms as PyG transforms (``ldpgraph.simulation.transforms``)."""

from ldpgraph.simulation.transforms import LocalRelease, OneBitFeatures, RandomizedResponse

__all__ = ["LocalRelease", "OneBitFeatures", "RandomizedResponse"]
