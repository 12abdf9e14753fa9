#!/usr/bin/env bash
# Start one Flower SuperNode hosting one ldpgraph node file (a block of node-clients).
#
#   deploy/start-supernode.sh --superlink HOST:PORT --ca CA.CRT --key KEY --data NODE_FILE
#                             --budget EPSILON [--port 9094] [--trust-curator]
#                             [--unit per-vector|per-bit] [--max-feature-share S]
#                             [--max-epsilon-adjacency E] [--max-epsilon-features E]
#                             [--ledger DIR] [--ledger-witness DIR] [--reset-ledger FP]...
#
# KEY: this SuperNode's private key (deploy/make-supernode-keys.sh; its .pub registered with
# deploy/register-supernodes.sh). NODE_FILE: one node file written by `ldpgraph partition`
# (e.g. part/nodes-00003); the ClientApp reads nothing else. --budget (required): the total ε
# each of its nodes will ever spend on this graph, over all runs; nothing the server sends can
# set or raise it. --unit: how a node counts it: per-vector (default: a round costs what it
# costs for the node's whole row and feature vector) or per-bit (a round costs its ε: edge and
# feature-bit LDP). --max-*: caps on what one round may ask (refused beyond them, uncharged).
# --ledger: the directory keeping what each node spent, keyed by its data (default:
# $XDG_STATE_HOME/ldpgraph/ledger; never inside the partition directory); --ledger-witness:
# the second place its chain heads are kept (default: KEY.ledger-witness, beside the key). A
# node whose ledger is missing or fails to verify refuses; --reset-ledger FP (the node's
# fingerprint, shown by `python -m ldpgraph.client.ledger --data-file ...`) starts that one
# ledger afresh, on the operator's explicit word. --port: the
# SuperNode's local Runtime API port (127.0.0.1), distinct per SuperNode on one machine.
# --trust-curator: the nodes consent to raw upload (central-DP protocols); without it they
# refuse such rounds. Noise comes from the OS entropy, fresh per request. Runs in the
# foreground (exec).
set -euo pipefail
SUPERLINK="" CA="" KEY="" DATA="" PORT=9094 BUDGET="" TRUST=false LEDGER="" WITNESS="" UNIT=""
CAPS="" RESETS=()
usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --superlink) SUPERLINK=$2; shift 2 ;;
    --ca) CA=$2; shift 2 ;;
    --key) KEY=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --trust-curator) TRUST=true; shift ;;
    --ledger) LEDGER=$2; shift 2 ;;
    --ledger-witness) WITNESS=$2; shift 2 ;;
    --unit) UNIT=$2; shift 2 ;;
    --max-feature-share|--max-epsilon-adjacency|--max-epsilon-features)
      python3 -c 'import math,sys; v=float(sys.argv[1]); sys.exit(0 if math.isfinite(v) and v >= 0 else 1)' "$2" 2>/dev/null ||
        { echo "start-supernode: $1 must be a finite number >= 0, got $2" >&2; exit 2; }
      CAPS+=" ${1#--}=$2"; shift 2 ;;
    --reset-ledger) RESETS+=("$2"); shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "start-supernode: unknown argument $1" >&2; usage 2 ;;
  esac
done
[ -n "$SUPERLINK" ] && [ -n "$CA" ] && [ -n "$KEY" ] && [ -n "$DATA" ] || usage 2
[ -n "$BUDGET" ] || { echo "start-supernode: --budget EPSILON is required: each node's own total privacy budget (the server cannot set it)" >&2; exit 2; }
python3 -c 'import math,sys; b=float(sys.argv[1]); sys.exit(0 if math.isfinite(b) and b >= 0 else 1)' "$BUDGET" 2>/dev/null ||
  { echo "start-supernode: --budget must be a finite number >= 0, got $BUDGET" >&2; exit 2; }
[ -f "$CA" ] || { echo "start-supernode: no CA certificate at $CA" >&2; exit 2; }
[ -f "$KEY" ] || { echo "start-supernode: no private key at $KEY" >&2; exit 2; }
[ -f "$DATA/meta.json" ] || { echo "start-supernode: $DATA is not a node file (no meta.json)" >&2; exit 2; }
case $DATA in *"'"*) echo "start-supernode: node file path must not contain a quote" >&2; exit 2 ;; esac
DATA=$(cd "$DATA" && pwd)
CONFIG="data-file='$DATA' trust-curator=$TRUST budget=$BUDGET"
case $UNIT in ""|per-vector|per-bit) ;; *) echo "start-supernode: --unit must be per-vector or per-bit, got $UNIT" >&2; exit 2 ;; esac
[ -n "$UNIT" ] && CONFIG+=" unit='$UNIT'"
CONFIG+="$CAPS"
LEDGER=${LEDGER:-${XDG_STATE_HOME:-$HOME/.local/state}/ldpgraph/ledger}
WITNESS=${WITNESS:-$KEY.ledger-witness}
for place in "$LEDGER" "$WITNESS"; do
  case $place in *"'"*) echo "start-supernode: ledger paths must not contain a quote" >&2; exit 2 ;; esac
  mkdir -p "$place"
done
LEDGER=$(cd "$LEDGER" && pwd) WITNESS=$(cd "$WITNESS" && pwd)
CONFIG+=" ledger='$LEDGER' ledger-witness='$WITNESS'"
for fp in "${RESETS[@]}"; do
  python3 -m ldpgraph.client.ledger --ledger "$LEDGER" --witness "$WITNESS" --reset-ledger "$fp" || exit 2
done
export FLWR_TELEMETRY_ENABLED=${FLWR_TELEMETRY_ENABLED:-0}
export FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1
command -v flower-supernode >/dev/null ||
  { echo "start-supernode: flower-supernode not found; activate the environment with ldpgraph" >&2; exit 2; }
exec flower-supernode --superlink "$SUPERLINK" --root-certificates "$CA" \
  --auth-supernode-private-key "$KEY" --port "$PORT" --node-config "$CONFIG"
