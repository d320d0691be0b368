#!/usr/bin/env bash
# Abuse check: floods a real polytope-server over loopback as an outsider would, and prints what a
# legitimate client and an operator get meanwhile (docs/SECURITY.md). Two runs, each bounded in time:
#   1. spoofed flood: admin requests with random MACs from 20,000 spoofed loopback addresses (127.16.0.0/16,
#      one source picked per datagram with IP_PKTINFO), 7,000 a second (about 18 Mbit/s), while a client with
#      a connect token connects: did it, and on which try? (Goal: its first or second.)
#   2. overrun: scene pile4000 (ticks far longer than 1/60 s on a small machine), 200 junk datagrams a second
#      and an admin Status every 0.5 s for 12 s: the share of datagrams the server counted (its
#      /metrics socket counter against what was sent; goal: at least 90%) and the admin round trips (goal:
#      each within 1 s).
#
#   bench/abuse.sh               both runs
#   bench/abuse.sh --no-build    use the binaries already in the build directory
# Environment: POLYTOPE_BUILD_DIR (default build/release). Exit status 0 when every goal was met, 1 otherwise.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

build=true
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=false; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/abuse.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
dir="${POLYTOPE_BUILD_DIR:-build/release}"
if $build; then
  [ -f "$dir/CMakeCache.txt" ] || cmake --preset release > /dev/null
  cmake --build "$dir" --target polytope-server polytope-token polytope-abuse
fi
server_bin="$dir/bin/polytope-server"
token_bin="$dir/bin/polytope-token"
abuse_bin="$dir/bin/polytope-abuse"
for b in "$server_bin" "$token_bin" "$abuse_bin"; do
  [ -x "$b" ] || { echo "bench/abuse.sh: $b missing (build it, or drop --no-build)" >&2; exit 1; }
done

work="$(mktemp -d /tmp/polytope-abuse.XXXXXX)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

free_tcp_port() {
  for candidate in $(seq 19200 19300); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then echo "$candidate"; return; fi
  done
}
# Starts the server with the given flags, logging to $work/server.log; sets server_pid, port and http_port.
start_server() {
  http_port="$(free_tcp_port)"
  "$server_bin" --bind 127.0.0.1 --port 0 --http-port "$http_port" --http-bind 127.0.0.1 --log-level info "$@" \
    > "$work/server.log" 2>&1 &
  server_pid=$!
  port=""
  for _ in $(seq 200); do
    port="$(sed -n 's/.*listening on UDP [^ ]*:\([0-9][0-9]*\),.*/\1/p' "$work/server.log" | head -n 1)"
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    cat "$work/server.log" >&2
    echo "bench/abuse.sh: the server did not start (log above)" >&2
    exit 1
  fi
}
stop_server() {
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
metric() { # NAME: the value of an unlabelled series of /metrics
  (exec 3<>"/dev/tcp/127.0.0.1/$http_port" && printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 &&
    timeout 5 cat <&3) 2>/dev/null | awk -v n="$1" '$1 == n { print $2 }'
}
json_field() { sed -n "s/.*\"$1\":\\([^,}]*\\).*/\\1/p" <<<"$2"; }

status=0
key="$("$token_bin" keygen)"

echo "== 1. spoofed flood: 20,000 addresses, 7,000 admin requests a second, a token client connects after 3 s"
start_server --token-key "$key" --admin-key abuse-admin-key --public-address any --scene default
"$token_bin" make --key "$key" --server "127.0.0.1:$port" --room main --client-id 1 --lifetime 60 \
  --out "$work/token" > /dev/null
spoof="$("$abuse_bin" spoof --server "127.0.0.1:$port" --token "$work/token" --addresses 20000 --rate 7000 \
  --seconds 8 --legit-after 3 || true)"
echo "   $spoof"
received="$(metric polytope_socket_datagrams_received_total)"
kernel="$(metric polytope_socket_kernel_drops_total)"
stop_server
tries="$(json_field legit_tries "$spoof")"
connected="$(json_field legit_connected "$spoof")"
echo "   server: $received datagrams read from the socket, $kernel dropped by the kernel (receive buffer full)"
if [ "$connected" = true ] && [ "${tries:-9}" -le 2 ]; then
  echo "   legitimate client: connected on try $tries (goal: first or second) -- met"
else
  echo "   legitimate client: connected=$connected, tries=$tries (goal: first or second) -- MISSED"
  status=1
fi

echo "== 2. overrun: pile4000, 200 junk datagrams a second, admin Status every 0.5 s for 12 s"
start_server --insecure --admin-key abuse-admin-key --scene pile4000
sleep 2 # the pile starts to fall: ticks get long
before="$(metric polytope_socket_datagrams_received_total)"
overrun="$("$abuse_bin" overrun --server "127.0.0.1:$port" --admin-key abuse-admin-key --junk-rate 200 \
  --admin-interval 0.5 --seconds 12 || true)"
sleep 0.5
after="$(metric polytope_socket_datagrams_received_total)"
overruns="$(awk '$1 ~ /^polytope_tick_overruns_total/ { s += $2 } END { print s + 0 }' <<<"$(
  (exec 3<>"/dev/tcp/127.0.0.1/$http_port" && printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 &&
    timeout 5 cat <&3) 2>/dev/null)")"
stop_server
echo "   $overrun"
junk="$(json_field junk_sent "$overrun")"
admin_sent="$(json_field admin_sent "$overrun")"
admin_answered="$(json_field admin_answered "$overrun")"
rtt_max="$(json_field admin_rtt_ms_max "$overrun")"
counted=$((after - before))
sent=$((junk + admin_sent))
share="$(awk -v c="$counted" -v s="$sent" 'BEGIN { printf "%.1f", (s > 0 ? 100 * c / s : 0) }')"
echo "   the room overran $overruns times; the server read $counted of the $sent datagrams sent ($share%)"
if awk -v p="$share" 'BEGIN { exit !(p >= 90) }'; then
  echo "   datagrams counted: $share% (goal: at least 90%) -- met"
else
  echo "   datagrams counted: $share% (goal: at least 90%) -- MISSED"
  status=1
fi
if [ "$admin_answered" = "$admin_sent" ] && awk -v m="$rtt_max" 'BEGIN { exit !(m >= 0 && m <= 1000) }'; then
  echo "   admin: $admin_answered of $admin_sent answered, slowest $rtt_max ms (goal: within 1 s) -- met"
else
  echo "   admin: $admin_answered of $admin_sent answered, slowest $rtt_max ms (goal: within 1 s) -- MISSED"
  status=1
fi
exit "$status"
