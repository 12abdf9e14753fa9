"""The server side of ldpgraph: Flower ServerApp, strategies, training and evaluation."""
