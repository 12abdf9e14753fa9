#!/usr/bin/env bash
# Register SuperNodes' public keys with a SuperLink started with --enable-supernode-auth
# (deploy/start-superlink.sh). Only registered SuperNodes may connect.
#
#   deploy/register-supernodes.sh --superlink HOST:PORT --ca CA.CRT KEY.pub [KEY.pub ...]
#
# KEY.pub: public keys from deploy/make-supernode-keys.sh. Run it where the SuperLink's port is
# reachable (the SuperLink's machine, or a submitter's). Uses a private Flower config, so the
# user's ~/.flwr is left alone.
set -euo pipefail
SUPERLINK="" CA=""
usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --superlink) SUPERLINK=$2; shift 2 ;;
    --ca) CA=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    -*) echo "register-supernodes: unknown option $1" >&2; usage 2 ;;
    *) break ;;
  esac
done
[ -n "$SUPERLINK" ] && [ -n "$CA" ] && [ $# -ge 1 ] || usage 2
[ -f "$CA" ] || { echo "register-supernodes: no CA certificate at $CA" >&2; exit 2; }
command -v flwr >/dev/null ||
  { echo "register-supernodes: flwr not found; activate the environment with ldpgraph" >&2; exit 2; }
HOME_DIR=$(mktemp -d); trap 'rm -rf "$HOME_DIR"' EXIT
printf '[superlink]\ndefault = "link"\n\n[superlink.link]\naddress = "%s"\nroot-certificates = "%s"\n' \
  "$SUPERLINK" "$(cd "$(dirname "$CA")" && pwd)/$(basename "$CA")" >"$HOME_DIR/config.toml"
export FLWR_HOME=$HOME_DIR FLWR_TELEMETRY_ENABLED=${FLWR_TELEMETRY_ENABLED:-0} NO_COLOR=1
for key in "$@"; do
  [ -f "$key" ] || { echo "register-supernodes: no public key at $key" >&2; exit 2; }
  name=$(basename "$key" .pub)
  out=$(flwr supernode register "$key" link --name "$name" 2>&1) ||
    { echo "register-supernodes: $key: $out" >&2; exit 1; }
  case $out in *"registered successfully"*) echo "registered $name ($key)" ;;
    *) echo "register-supernodes: $key: $out" >&2; exit 1 ;; esac
done
