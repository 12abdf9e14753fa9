#!/usr/bin/env bash
# Start a Flower SuperLink for ldpgraph on a bare machine: TLS and SuperNode authentication on.
#
#   deploy/start-superlink.sh --certs DIR [--host 0.0.0.0] [--port 9093] [--state DIR]
#
# DIR holds ca.crt, server.crt and server.key (deploy/make-certs.sh). One port serves Flower's
# Fleet API (SuperNodes), Control API (`flwr run`, `flwr supernode register`) and Runtime API.
# --state keeps the SuperLink's database (registered SuperNodes, runs) across restarts
# (default: in memory). Runs in the foreground (exec): stop it with Ctrl-C or SIGTERM.
# Needs ldpgraph installed (same version as the SuperNodes); apps are not installed at run time.
set -euo pipefail
HOST=0.0.0.0 PORT=9093 CERTS="" STATE=""
usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --certs) CERTS=$2; shift 2 ;;
    --host) HOST=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --state) STATE=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "start-superlink: unknown argument $1" >&2; usage 2 ;;
  esac
done
[ -n "$CERTS" ] || { echo "start-superlink: --certs DIR is required (deploy/make-certs.sh)" >&2; exit 2; }
for f in ca.crt server.crt server.key; do
  [ -f "$CERTS/$f" ] || { echo "start-superlink: missing $CERTS/$f" >&2; exit 2; }
done
DB=":flwr-in-memory:"
if [ -n "$STATE" ]; then mkdir -p "$STATE"; DB="$STATE/superlink.db"; fi
export FLWR_TELEMETRY_ENABLED=${FLWR_TELEMETRY_ENABLED:-0}
export FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1
command -v flower-superlink >/dev/null ||
  { echo "start-superlink: flower-superlink not found; activate the environment with ldpgraph" >&2; exit 2; }
exec flower-superlink \
  --ssl-ca-certfile "$CERTS/ca.crt" --ssl-certfile "$CERTS/server.crt" \
  --ssl-keyfile "$CERTS/server.key" --enable-supernode-auth \
  --disable-runtime-dependency-installation --database "$DB" --host "$HOST" --port "$PORT"
