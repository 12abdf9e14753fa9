"""The maths of ldpgraph: mechanisms, report codecs, LDP protocols and privacy accounting.

Nothing here imports Flower or Ray, and the client-side modules (``rng``, ``mechanisms``,
``reports``, the protocols' client steps) import neither torch nor PyG, so a node-client stays
small. Import the submodules you need; this package imports nothing eagerly.
"""
