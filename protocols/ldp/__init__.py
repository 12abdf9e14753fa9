"""The local-DP protocols: one module per protocol (its client step, server reconstruction and
parameter declaration) plus the helpers only protocols use. numpy/scipy on the client side: a
node imports the module of the protocol it runs, and nothing else from here."""
