#!/usr/bin/env bash
# Builds Polytope (Release), starts polytope-server with the default scene and shows a client on it:
# polytope-viewer's window when a display is present ($DISPLAY set), polytope-inspect's live table
# otherwise. The server stops when the client exits (Ctrl-C, closing the window, or --seconds N).
#   scripts/demo.sh                 run until Ctrl-C
#   scripts/demo.sh --seconds 10    stop after 10 s
# Any other arguments go to the client. POLYTOPE_DEMO_PORT picks the UDP port (default 7777);
# POLYTOPE_DEMO_CLIENT=inspect or viewer forces the client. The server runs as in production: it requires
# connect tokens, and the demo plays the game's backend, making a key for this run and a token for the
# client with polytope-token, so the session is encrypted.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

polytope_ensure_packages "${POLYTOPE_PACKAGES[@]}"
client="${POLYTOPE_DEMO_CLIENT:-}"
if [ -z "$client" ]; then
  if [ -n "${DISPLAY:-}" ]; then client=viewer; else client=inspect; fi
fi
case "$client" in
  inspect | viewer) ;;
  *) echo "error: POLYTOPE_DEMO_CLIENT must be inspect or viewer, not '$client'" >&2; exit 1 ;;
esac
echo "== building (release)"
polytope_build release polytope-server polytope-token "polytope-$client"

bin=build/release/bin
port="${POLYTOPE_DEMO_PORT:-7777}"
key="$("$bin/polytope-token" keygen)"
token="$(mktemp)"
"$bin/polytope-token" make --key "$key" --client-id 1 --server "127.0.0.1:$port" --lifetime 3600 --out "$token" \
  > /dev/null
POLYTOPE_TOKEN_KEY="$key" "$bin/polytope-server" --port "$port" --public-address "127.0.0.1:$port" --scene default \
  --log-level warn &
server_pid=$!
stop_server() {
  rm -f "$token"
  if kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
}
trap stop_server EXIT

echo "== polytope-server (pid $server_pid) on UDP port $port; polytope-$client follows (Ctrl-C to stop)"
status=0
"$bin/polytope-$client" "127.0.0.1:$port" --token "$token" "$@" || status=$?
exit "$status"
