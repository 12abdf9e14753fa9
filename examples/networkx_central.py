"""A networkx graph through a central strategy (EdgeRand), seeded: replayable, for a test."""

import networkx as nx

import ldpgraph

graph = nx.karate_club_graph()
release = ldpgraph.release(graph, protocol="edgerand", epsilon=2.0, seed=7)
print(release.privacy.headline)
print(release.num_edges // 2, "edges released,", graph.number_of_edges(), "true")
