#!/usr/bin/env bash
# Run the ldpgraph Flower app with `flwr run .` on a local simulated federation (Flower's
# simulation engine on Ray), wait for the result, then stop the SuperLink that `flwr run`
# leaves running in the background. `ldpgraph run --backend flower` does the same for an
# installed package (ldpgraph.simulation.backends.flwr_run: a generated app, a private FLWR_HOME,
# the SuperLink stopped by pid); this script runs the repository checkout as the app.
#
#   deploy/flwr-local-run.sh [NUM_SUPERNODES] ["key=value key=value …"]
#   deploy/flwr-local-run.sh 64 "dataset='citeseer' epsilon=6.0 protocol='hogs'"
#
# Keys are those of `ldpgraph run` (see [tool.flwr.app.config] in pyproject.toml). The result
# record is written to result-path (default $FLWR_HOME/last-result.json) and printed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
export PATH="$(cd "$VENV" && pwd)/bin:$PATH"
# The data root `make run` recorded in the virtual environment (Makefile's RECORD_DATA), read
# as `ldpgraph` reads it (simulation/datasets/locations.py): $LDPGRAPH_DATA, when set, wins.
if [ -z "${LDPGRAPH_DATA:-}" ] && [ -s "$VENV/ldpgraph-data-root" ]; then
  root=$(head -n 1 "$VENV/ldpgraph-data-root")
  if [ -d "$root" ]; then export LDPGRAPH_DATA="$root"; fi
fi
export FLWR_HOME=${FLWR_HOME:-$PWD/.flwr}
export FLWR_TELEMETRY_ENABLED=0 FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1
export RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=0
N=${1:-16}
RUN_CONFIG=${2:-}
RESULT="$FLWR_HOME/last-result.json"
case "$RUN_CONFIG" in *result-path=*) RESULT=$(sed -E "s/.*result-path='([^']*)'.*/\1/" <<<"$RUN_CONFIG");;
  *) RUN_CONFIG="$RUN_CONFIG result-path='$RESULT'";; esac
mkdir -p "$FLWR_HOME"
[ -f "$FLWR_HOME/config.toml" ] || printf '[superlink]\ndefault = "local"\n\n[superlink.local]\naddress = ":local:"\n' >"$FLWR_HOME/config.toml"
rm -f "$RESULT"

ours() {
  # Flower's local SuperLink and what it spawned (SuperExec, simulation) carry our FLWR_HOME.
  for env in /proc/[0-9]*/environ; do
    pid=${env#/proc/}; pid=${pid%/environ}
    if tr '\0' '\n' 2>/dev/null <"$env" | grep -qx "FLWR_HOME=$FLWR_HOME" &&
      tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qE 'bin/(flower|flwr)-(superlink|superexec|simulation|serverapp|clientapp)'; then
      echo "$pid"
    fi
  done
}
stop_superlink() {
  local pids; pids=$(ours)
  [ -n "$pids" ] && kill $pids 2>/dev/null
  for _ in $(seq 50); do [ -z "$(ours)" ] && return 0; sleep 0.2; done
  pids=$(ours); [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  return 0
}
# Ray's session files (sockets, logs) go to a private dir removed at the end, not /tmp/ray.
export RAY_TMPDIR=${RAY_TMPDIR:-$(mktemp -d /tmp/ldpg-ray-XXXXXX)}
cleanup() { stop_superlink; case $RAY_TMPDIR in /tmp/ldpg-ray-*) rm -rf "$RAY_TMPDIR";; esac; }
trap cleanup EXIT

flwr run . local --stream \
  --federation-config "num-supernodes=$N client-resources-num-cpus=1 init-args-num-cpus=$(nproc)" \
  --run-config "$RUN_CONFIG"
# `flwr run --stream` exits 0 even when the run failed: the result file is the proof.
if [ ! -s "$RESULT" ]; then
  echo "flwr-local-run: the run produced no result ($RESULT); see 'flwr log' and $FLWR_HOME/local-superlink/" >&2
  exit 1
fi
echo "result: $RESULT"
