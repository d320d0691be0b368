#!/usr/bin/env bash
# Builds Polytope (Release), starts polytope-server with the default scene and shows a client on it:
# polytope-inspect's live table. The server stops when the client exits (Ctrl-C, or --seconds N).
#   scripts/demo.sh                 run until Ctrl-C
#   scripts/demo.sh --seconds 10    stop after 10 s
# Any other arguments go to polytope-inspect. POLYTOPE_DEMO_PORT picks the UDP port (default 7777).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

polytope_ensure_packages "${POLYTOPE_PACKAGES[@]}"
echo "== building (release)"
polytope_build release polytope-server polytope-inspect

bin=build/release/bin
port="${POLYTOPE_DEMO_PORT:-7777}"
"$bin/polytope-server" --port "$port" --scene default --log-level warn &
server_pid=$!
stop_server() {
  if kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
}
trap stop_server EXIT

echo "== polytope-server (pid $server_pid) on UDP port $port; polytope-inspect follows (Ctrl-C to stop)"
status=0
"$bin/polytope-inspect" "127.0.0.1:$port" "$@" || status=$?
exit "$status"
