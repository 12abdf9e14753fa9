#!/usr/bin/env bash
# Make one authentication key pair per SuperNode (ECDSA P-384, OpenSSH format, as Flower wants).
#
#   deploy/make-supernode-keys.sh [-o DIR] NAME [NAME ...]
#   deploy/make-supernode-keys.sh -o keys block-0 block-1 block-2
#
# Writes DIR/NAME (private key: stays on that SuperNode's machine, passed to
# `flower-supernode --auth-supernode-private-key`) and DIR/NAME.pub (public key: registered
# with the SuperLink by `flwr supernode register DIR/NAME.pub CONNECTION`, see
# deploy/start-superlink.sh). Existing keys are never overwritten. Needs ssh-keygen.
set -euo pipefail
OUT=keys
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while getopts "o:h" opt; do
  case $opt in o) OUT=$OPTARG ;; h) usage 0 ;; *) usage 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "make-supernode-keys: name at least one SuperNode" >&2; exit 2; }
command -v ssh-keygen >/dev/null || { echo "make-supernode-keys: ssh-keygen not found" >&2; exit 2; }
mkdir -p "$OUT"
for name in "$@"; do
  [[ $name =~ ^[A-Za-z0-9._-]+$ ]] || { echo "make-supernode-keys: bad name $name" >&2; exit 2; }
  [ ! -e "$OUT/$name" ] || { echo "make-supernode-keys: $OUT/$name exists" >&2; exit 2; }
  ssh-keygen -q -t ecdsa -b 384 -N "" -C "ldpgraph-supernode-$name" -f "$OUT/$name"
  echo "make-supernode-keys: wrote $OUT/$name and $OUT/$name.pub"
done
