"""``ldpgraph partition``: node files for the SuperNodes and a curator file for the server."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config import key_help
from .errors import UserError
from .paths import check_cache_writable, check_writable


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "partition",
        help="write node files for SuperNodes and a curator file for the server (deployment)",
        description="Split a dataset for a deployment: one node file per block of k nodes "
        "(only those nodes' adjacency rows and features; give each SuperNode its file with "
        "--node-config \"data-file='DIR/nodes-00000'\") and DIR/curator.json, all the server "
        "may know (node ids, labels and the split, n, d, the public feature domain). Files are "
        "versioned, tagged with the partition's id and checksummed; a wrong or corrupt file is "
        "refused on load.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--dataset", required=True, help=key_help("dataset"))
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (new or empty)")
    p.add_argument(
        "--nodes-per-file",
        type=int,
        default=0,
        metavar="K",
        help="nodes per node file (one SuperNode hosts one file); 0: automatic, at most 16 "
        "node files",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the split stored for the server")
    p.add_argument("--train-split", type=float, default=0.5, help=key_help("train_split"))
    p.add_argument("--val-split", type=float, default=0.25, help=key_help("val_split"))
    p.add_argument("--data-root", default=None, help=key_help("data_root"))
    p.add_argument(
        "--public-features",
        nargs="?",
        const="all",
        default=None,
        metavar="CONSENT",
        help="also give the server the true features of the nodes that consent (only for "
        "edge-LDP protocols whose server sees them): CONSENT is 'all' (the default when the "
        "option is given alone) or a file of the consenting node ids; the rows of the others "
        "are not written, and the record names who consented",
    )
    p.add_argument(
        "--supernode-keys",
        nargs="+",
        default=None,
        metavar="KEY.pub",
        help="one SuperNode public key (deploy/make-supernode-keys.sh) per node file, in order: "
        "the manifest binding each file's nodes to the SuperNode that alone may host them; a "
        "deployment's server refuses a curator file without it",
    )


def cmd_partition(args: argparse.Namespace) -> int:
    import numpy as np

    from ..datasets import load_dataset
    from ..partition import (
        CuratorFileError,
        automatic_nodes_per_file,
        read_consent,
        write_partition,
    )

    if args.nodes_per_file < 0:
        raise UserError("--nodes-per-file must be >= 1 (or 0 for automatic)")
    if args.seed < 0:
        raise UserError(f"--seed must be >= 0, got {args.seed}")
    for name, value in (("--train-split", args.train_split), ("--val-split", args.val_split)):
        if not 0.0 <= value <= 1.0:
            raise UserError(f"{name} must be in [0, 1], got {value}")
    if args.train_split + args.val_split > 1.0 + 1e-12:
        raise UserError("--train-split + --val-split must not exceed 1")
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"--out {out} exists and is not an empty directory")
    check_writable(args.out, "--out", kind="dir")
    check_cache_writable([args.dataset])
    graph = load_dataset(args.dataset, args.data_root)
    k = args.nodes_per_file or automatic_nodes_per_file(graph.num_nodes)
    consent: bool | np.ndarray = False
    try:
        if args.public_features is not None:
            consent = read_consent(args.public_features, graph.num_nodes)
    except CuratorFileError as exc:
        raise UserError(f"--public-features: {exc}") from None
    info = write_partition(
        graph,
        args.out,
        k,
        dataset=args.dataset,
        seed=args.seed,
        train_split=args.train_split,
        val_split=args.val_split,
        public_features=consent,
        supernode_keys=args.supernode_keys,
    )
    bound = "bound to their SuperNode keys" if info["bound"] else "bound to no SuperNode key"
    shared = ""
    if info["public_consent"] is not None:
        shared = f"; true features of {info['public_consent']} consenting node(s)"
    print(
        f"partition {info['partition']}: {info['nodes']} nodes in {info['files']} node files "
        f"of {k} nodes under {args.out} ({bound}{shared}); curator file {info['curator']}"
    )
    return 0
