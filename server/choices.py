"""The model and epoch-selection names the trainer accepts, without torch: the run
configuration and the CLI check them before anything heavy is imported."""

#: Names accepted by :func:`ldpgraph.server.models.build_model`, in the order reports list them.
MODELS: tuple[str, ...] = ("gcn", "sage", "gat", "mlp")

#: Epoch selection rules: the highest validation accuracy (the HoGS paper's protocol: Xu et
#: al., "HoGS: Homophily-Oriented Graph Synthesis for Local Differentially Private GNN
#: Training", Section V; ties go to the first such epoch) or the lowest validation
#: cross-entropy (the rule of Blink_GNN's code, github.com/zhxchd/Blink_GNN).
SELECTIONS: tuple[str, ...] = ("val_acc", "val_loss")
