"""The node-level mechanisms as PyG transforms, composed like any other transform."""

import torch_geometric.transforms as T

import ldpgraph
from ldpgraph.transforms import OneBitFeatures, RandomizedResponse

data = ldpgraph.load_dataset("synthetic:n=400,classes=3,d=16,homophily=0.9")
private = T.Compose([RandomizedResponse(epsilon=4.0), OneBitFeatures(epsilon=4.0)])(data)
for entry in private.privacy:
    print(entry["mechanism"], "ε =", entry["epsilon"], "per", entry["unit"])
print(private.num_edges, "released edge directions (", data.num_edges, "true)")
print("test accuracy", ldpgraph.train(private, labels=data.y, epochs=100)["test_acc"])
