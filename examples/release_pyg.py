"""Release HoGS on a PyG graph and train a GCN on the release (five lines of ldpgraph)."""

import ldpgraph

data = ldpgraph.load_dataset("synthetic:n=600,classes=3,d=32,homophily=0.9")  # or "cora"
private = ldpgraph.release(data, protocol="hogs", epsilon=8)
print(private.privacy.headline)
print("test accuracy", ldpgraph.train(private, labels=data.y, epochs=100)["test_acc"])
