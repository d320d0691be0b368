#!/usr/bin/env bash
# The structured-snapshot readers of examples/ (protocol/STANDARD.md section 14) against a real server:
# starts polytope-server --insecure on 127.0.0.1 with a pile scene, runs the Python reader (Debian's
# python3-flatbuffers) and the Node reader (npm flatbuffers, pinned in examples/node/package-lock.json)
# against it, each with a time-out, and checks that each printed complete snapshots with sane positions and
# unit quaternions. Builds polytope-server (Release) if it is not built. Takes about 30 s once installed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

# Debian's packages (common.sh leaves out nodejs and npm where a Node from elsewhere is installed).
polytope_ensure_packages "${POLYTOPE_EXAMPLES_PACKAGES[@]}" flatbuffers-compiler
python=/usr/bin/python3 # Debian's, which python3-flatbuffers is for (not a pyenv or venv one on PATH)

server=build/release/bin/polytope-server
[ -x "$server" ] || polytope_build release polytope-server
out=build/examples-structured
mkdir -p "$out"
port=$((40000 + RANDOM % 20000))
snapshots=20
"$server" --insecure --bind 127.0.0.1 --port "$port" --http-port 0 --scene pile:60 > "$out/server.log" 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT

# A reader's output: $snapshots complete ticks, every body printed within the pile's space (x, z within
# 30 m, y within -1 .. 40 m), every quaternion of unit length, and some cube resting above the ground.
check() {
  awk -v want="$snapshots" -v name="$1" '
    /^tick / { ticks++ }
    / body / {
      bodies++; x = $6; y = $7; z = $8; n = $10 * $10 + $11 * $11 + $12 * $12 + $13 * $13
      if (x < -30 || x > 30 || z < -30 || z > 30 || y < -1 || y > 40 || n < 0.999 || n > 1.001) {
        print name ": insane body: " $0; bad = 1
      }
      if (y > 0.3) lifted++
    }
    END {
      if (ticks < want) { print name ": " ticks + 0 " complete snapshots, wanted " want; bad = 1 }
      if (lifted == 0) { print name ": no body above the ground"; bad = 1 }
      if (!bad) print name ": " ticks " snapshots, " bodies " bodies printed, all sane"
      exit bad
    }' "$2"
}

status=0
start=$(date +%s)
echo "== Python reader"
timeout 60 "$python" examples/python/read_structured.py --port "$port" --snapshots "$snapshots" --bodies 4 \
  --velocities > "$out/python.txt" || { echo "python reader failed (exit $?)"; status=1; }
check python "$out/python.txt" || status=1
echo "== Node reader"
(cd examples/node && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build) > "$out/npm.log" 2>&1 ||
  { cat "$out/npm.log"; echo "npm ci / build failed"; status=1; }
timeout 60 node examples/node/read_structured.js --port "$port" --snapshots "$snapshots" --bodies 4 \
  > "$out/node.txt" || { echo "node reader failed (exit $?)"; status=1; }
check node "$out/node.txt" || status=1
[ "$status" -eq 0 ] || { echo "-- server log:"; tail -20 "$out/server.log"; }
echo "== examples_structured.sh: $(( $(date +%s) - start )) s (status $status)"
exit "$status"
