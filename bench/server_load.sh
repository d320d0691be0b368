#!/usr/bin/env bash
# Server load check ("256 clients at 60 Hz"): builds polytope-server and polytope-bots (Release), starts the
# server on a free local UDP port, runs N bots against it for S seconds, stops the server with SIGTERM and
# prints both sides: the bots' report, the server's /metrics lines on ticks, overruns and tick time (read just
# before the stop, when the server has an HTTP port), its log lines from the stop, and its CPU use while the
# bots ran.
#
#   bench/server_load.sh                          256 bots for 20 s, scene 'default', 60 Hz ticks, 20 Hz snapshots
#   bench/server_load.sh --clients 64 --seconds 10 --scene NAME --tick-hz 60 --snapshot-hz 20 --input-hz 10
#   bench/server_load.sh --json                   the bots' report as one JSON object (the rest stays text)
#   bench/server_load.sh --no-build               use the binaries already in the build directory
# Environment: POLYTOPE_BUILD_DIR (default build/release, configured with the `release` preset when it has
# no CMakeCache.txt yet). Exit status: the bots' (0 when every bot connected, 2 when some did not).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

clients=256
seconds=20
scene=default
tick_hz=60
snapshot_hz=20
input_hz=10
json=()
build=true
while [ $# -gt 0 ]; do
  case "$1" in
    --clients) clients="${2:?}"; shift 2 ;;
    --seconds) seconds="${2:?}"; shift 2 ;;
    --scene) scene="${2:?}"; shift 2 ;;
    --tick-hz) tick_hz="${2:?}"; shift 2 ;;
    --snapshot-hz) snapshot_hz="${2:?}"; shift 2 ;;
    --input-hz) input_hz="${2:?}"; shift 2 ;;
    --json) json=(--json); shift ;;
    --no-build) build=false; shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/server_load.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

dir="${POLYTOPE_BUILD_DIR:-build/release}"
if $build; then
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    if [ "$dir" = build/release ]; then
      cmake --preset release > /dev/null
    else
      cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
    fi
  fi
  echo "== building polytope-server and polytope-bots in $dir"
  cmake --build "$dir" --target polytope-server polytope-bots
fi
server_bin="$dir/bin/polytope-server"
bots_bin="$dir/bin/polytope-bots"
[ -x "$server_bin" ] && [ -x "$bots_bin" ] || { echo "bench/server_load.sh: $server_bin or $bots_bin missing" >&2; exit 1; }

# The HTTP port (/metrics), when this server has one: a free TCP port, not 8080, which may be taken.
http=()
http_port=""
if "$server_bin" --help 2>/dev/null | grep -q -- '--http-port'; then
  for candidate in $(seq 19080 19180); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then http_port="$candidate"; break; fi
  done
  http=(--http-port "${http_port:-0}")
fi

# The server requires connect tokens: a key for this run, read by the server and by polytope-bots (which
# makes each bot a token with it, as a game's backend would) from POLYTOPE_TOKEN_KEY. Every bot connects
# from this machine's one address, so the per-IP connection rate limit is lifted (--connect-rate-per-ip).
POLYTOPE_TOKEN_KEY="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
export POLYTOPE_TOKEN_KEY

log="$(mktemp /tmp/polytope-server-load.XXXXXX.log)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  rm -f "$log"
}
trap cleanup EXIT

"$server_bin" --port 0 --max-clients "$clients" --scene "$scene" --tick-hz "$tick_hz" \
  --snapshot-hz "$snapshot_hz" --log-level info "${http[@]}" --connect-rate-per-ip 100000 \
  --public-address any > "$log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 100); do
  port="$(sed -n 's/.*listening on UDP [^ ]*:\([0-9][0-9]*\),.*/\1/p' "$log" | head -n 1)"
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$port" ]; then
  cat "$log" >&2
  echo "bench/server_load.sh: the server did not start (log above)" >&2
  exit 1
fi
echo "== polytope-server (pid $server_pid) on UDP port $port: scene '$scene', $tick_hz Hz ticks," \
  "$snapshot_hz Hz snapshots, --max-clients $clients"

# UDP datagrams the kernel dropped for a full socket receive buffer (machine-wide, /proc/net/snmp).
udp_rcvbuf_errors() { awk '/^Udp:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 } else print $c["RcvbufErrors"] }' /proc/net/snmp; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }
hz="$(getconf CLK_TCK)"
cpu_before="$(cpu_ticks)"
rcvbuf_before="$(udp_rcvbuf_errors)"
t_before="$(date +%s.%N)"
echo "== polytope-bots: $clients clients for $seconds s, $input_hz inputs/s each"
bots_status=0
"$bots_bin" "127.0.0.1:$port" --clients "$clients" --seconds "$seconds" --input-hz "$input_hz" "${json[@]}" &
bots_pid=$!
# /metrics and the CPU figure half a second before the bots stop, while every bot is still connected.
sleep "$(awk -v s="$seconds" 'BEGIN { print (s > 1 ? s - 0.5 : s / 2) }')"
cpu_after="$(cpu_ticks)"
rcvbuf_after="$(udp_rcvbuf_errors)"
t_after="$(date +%s.%N)"
metrics=""
if [ -n "$http_port" ]; then
  metrics="$( (exec 3<>"/dev/tcp/127.0.0.1/$http_port" &&
    printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && timeout 5 cat <&3) 2>/dev/null || true)"
fi
wait "$bots_pid" || bots_status=$?
kill -TERM "$server_pid"
stop_status=0
wait "$server_pid" || stop_status=$?
server_pid=""
echo "== server: CPU $(awk -v a="$cpu_before" -v b="$cpu_after" -v h="$hz" -v s="$t_before" -v e="$t_after" \
  'BEGIN { printf "%.0f%% of one core", 100 * (b - a) / h / (e - s) }') while the bots ran; exit status $stop_status"
if [ -n "$metrics" ]; then
  echo "== server /metrics (TCP $http_port) 0.5 s before the bots stopped: ticks, overruns, clients, tick time"
  grep -E '^polytope_(ticks_total|tick_overruns_total|clients|tick_duration_seconds_(sum|count|bucket))' <<<"$metrics" |
    sed 's/^/   | /' || true
  # Tick-time quantiles from the cumulative histogram (upper bucket bounds).
  awk -F'[{}" ]+' '/^polytope_tick_duration_seconds_bucket/ {
      for (i = 1; i <= NF; i++) if ($i ~ /le=$/) le = $(i + 1)
      n[++k] = $NF; b[k] = le }
    END { if (k == 0) exit; total = n[k]; split("0.5 0.99", q, " ")
      for (j = 1; j <= 2; j++) for (i = 1; i <= k; i++) if (n[i] >= q[j] * total) {
        printf "   tick time p%g <= %s s (of %d ticks)\n", q[j] * 100, b[i], total; break } }' <<<"$metrics" || true
fi
echo "== UDP datagrams dropped by the kernel for full receive buffers while the bots ran (whole machine):" \
  "$((rcvbuf_after - rcvbuf_before))"
echo "== server log lines about clients, overruns and the stop:"
grep -iE 'overrun|stopped after|tick|warn|error' "$log" | grep -v ' connected; ' | tail -n 20 | sed 's/^/   | /' || true
echo "   ($(grep -c ' connected; ' "$log" || true) connects logged)"
exit "$bots_status"
