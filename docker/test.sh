#!/usr/bin/env bash
# Builds the polytope-server container image with podman and checks it the way a user runs it:
#   - a local Debian 12 base image (debootstrap from this machine's apt mirror; no registry is needed),
#     built once and kept;
#   - the image (docker/Dockerfile, Docker format so that HEALTHCHECK survives) and its size (<= 150 MB);
#   - a container on the host network (UDP port 17777 by default), polytope-inspect run on the HOST
#     receiving snapshots (seconds from `podman run` to the first one: target <= 2 s), the uid and PID 1;
#   - `podman healthcheck run`, and the same probe failing against a port with no server;
#   - GET /healthz on the server's HTTP port (TCP 18777 by default), from inside the container with bash's
#     /dev/tcp (the image has no curl); reported as skipped when nothing listens there (a server without it);
#   - polytope-bots from the image, in a second container on the host network: 16 bots for 4 s must all
#     connect; its report is printed;
#   - SIGTERM (`podman stop`): exit status 0 within 5 s, a connected client told goodbye, "stopped after"
#     in the logs.
# Installs what it needs with apt (podman, runc, debootstrap, ...). Skips, with exit status 0, only where
# containers cannot run at all (not root and no sudo; no namespaces).
#
#   docker/test.sh                  build (cached layers are reused) and test; the test container is removed
#   docker/test.sh --port N         use UDP port N instead of 17777 (and TCP N+1000 for HTTP)
#   docker/test.sh --no-cache       rebuild every layer of the image (the base image stays)
#   docker/test.sh --clean-images   remove the test image and its build cache, keep the base image; no test
#   docker/test.sh --clean          remove everything this script made, base image included; no test
# Environment: POLYTOPE_TEST_PORT (as --port), POLYTOPE_INSPECT (the client to run on the host, e.g.
# build/release/bin/polytope-inspect; default: the image's own copy), POLYTOPE_DEBIAN_MIRROR (the mirror
# for debootstrap; default: this machine's apt sources).
set -euo pipefail
script="$(readlink -f "$0")"
cd "$(dirname "$script")/.."
source scripts/common.sh

port="${POLYTOPE_TEST_PORT:-17777}"
image="localhost/polytope-server:test"
base="localhost/debian:bookworm"
base_alias="docker.io/library/debian:bookworm" # so that an unchanged `FROM debian:bookworm` resolves
container="polytope-test-$$"
mode="test"
no_cache=()

while [ $# -gt 0 ]; do
  case "$1" in
    --port) port="${2:?--port needs a number}"; shift 2 ;;
    --no-cache) no_cache=(--no-cache); shift ;;
    --clean) mode="clean"; shift ;;
    --clean-images) mode="clean-images"; shift ;;
    -h|--help) sed -n '2,25p' "$script" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "docker/test.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
script_start="$(now)"

skip() {
  echo "docker/test.sh: SKIPPED: $*"
  echo "docker/test.sh: 0 passed, 0 failed, 1 skipped"
  exit 0
}
die() { echo "docker/test.sh: error: $*" >&2; exit 1; }

passed=0
failed=0
check() { # check NAME COMMAND...: runs the command, counts and reports the outcome
  local name="$1"; shift
  if "$@"; then
    passed=$((passed + 1)); echo "   ok    $name"
  else
    failed=$((failed + 1)); echo "   FAIL  $name"
  fi
}

# --- Can this machine run containers at all? -------------------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    exec sudo -n -E bash "$script" "$@"
  fi
  skip "rootful podman needs root, and sudo without a password is not available"
fi
if ! unshare --mount --pid --net --uts --ipc --fork true 2>/dev/null; then
  skip "this environment cannot create namespaces (a container without privileges?), so no container can run"
fi

# --- Scratch space, clean-up, podman settings ----------------------------------------------------------
work="$(mktemp -d /tmp/polytope-docker-test.XXXXXX)"
inspect_pid=""
cleanup() {
  if [ -n "$inspect_pid" ]; then kill "$inspect_pid" 2>/dev/null || true; fi
  if command -v podman >/dev/null 2>&1; then
    # One name per call: podman 4.3 removes nothing when any name in the list does not exist.
    podman rm -f -t 0 "$container" >/dev/null 2>&1 || true
    podman rm -f -t 0 "$container-copy" >/dev/null 2>&1 || true
    podman rm -f -t 0 "$container-bots" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Root may not raise its hard limits here and crun cannot run on a hybrid cgroup hierarchy: give podman
# the machine's own hard limits and runc (shared/notes/containers.md). A CONTAINERS_CONF set by the
# caller wins.
if [ -z "${CONTAINERS_CONF:-}" ]; then
  nofile="$(ulimit -Hn)"; [ "$nofile" = unlimited ] && nofile=1048576
  nproc="$(ulimit -Hu)"
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
  cat > "$work/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
EOF
  export CONTAINERS_CONF="$work/containers.conf"
fi

if [ "$mode" != test ]; then
  if ! command -v podman >/dev/null 2>&1; then echo "== podman is not installed: nothing to clean"; exit 0; fi
  echo "== removing test containers and $image with its build cache"
  podman ps -a --format '{{.Names}}' | { grep '^polytope-test-' || true; } | xargs -r -n 1 podman rm -f -t 0 >/dev/null
  podman rmi -f "$image" >/dev/null 2>&1 || true
  podman image prune -f >/dev/null # untagged layers: the build stage and intermediate steps
  if [ "$mode" = clean ]; then
    echo "== removing the base image $base"
    podman rmi -f "$base_alias" "$base" >/dev/null 2>&1 || true
  fi
  podman images
  exit 0
fi

# --- Tools -----------------------------------------------------------------------------------------------
t="$(now)"
polytope_ensure_packages "${POLYTOPE_CONTAINER_PACKAGES[@]}"
tools_seconds="$(since "$t")"
echo "== container tools ready (${tools_seconds} s)"

# --- Base image ------------------------------------------------------------------------------------------
# Prints "SUITE<TAB>URI" for each apt source of this machine (deb822 files first, then sources.list).
apt_sources() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    awk 'BEGIN { RS = ""; FS = "\n" }
         /(^|\n)Types:[^\n]*deb([ \t\n]|$)/ {
           uris = ""; suites = ""
           for (i = 1; i <= NF; i++) {
             if ($i ~ /^URIs:/) { uris = $i; sub(/^URIs:[ \t]*/, "", uris) }
             if ($i ~ /^Suites:/) { suites = $i; sub(/^Suites:[ \t]*/, "", suites) }
           }
           split(uris, u, /[ \t]+/); n = split(suites, s, /[ \t]+/)
           for (j = 1; j <= n; j++) print s[j] "\t" u[1]
         }' "$f"
  done
  if [ -r /etc/apt/sources.list ]; then
    awk '$1 == "deb" { i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } print $(i + 1) "\t" $i }' \
      /etc/apt/sources.list
  fi
}

build_base_image() {
  local sources mirror security rootfs include=()
  sources="$(apt_sources)"
  mirror="${POLYTOPE_DEBIAN_MIRROR:-$(awk -F'\t' '$1 == "bookworm" { print $2; exit }' <<<"$sources")}"
  security="$(awk -F'\t' '$1 == "bookworm-security" { print $2; exit }' <<<"$sources")"
  mirror="${mirror:-http://deb.debian.org/debian}"
  security="${security:-http://deb.debian.org/debian-security}"
  case "$mirror$security" in *https:*) include=(--include=ca-certificates) ;; esac
  rootfs="$(mktemp -d /var/tmp/polytope-rootfs.XXXXXX)"
  echo "   debootstrap --variant=minbase bookworm from $mirror"
  if ! debootstrap --variant=minbase "${include[@]}" bookworm "$rootfs" "$mirror" > "$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" >&2
    rm -rf "$rootfs"
    die "debootstrap failed (log above)"
  fi
  cat > "$rootfs/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
  # Like Debian's published image: apt keeps no package caches (pkgcache.bin alone is tens of MB in a
  # layer) and fetches no translations.
  cat > "$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
EOF
  echo 'Acquire::Languages "none";' > "$rootfs/etc/apt/apt.conf.d/docker-no-languages"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/*
  # The same defaults as Debian's published image: a PATH and bash.
  tar --numeric-owner -C "$rootfs" -c . |
    podman import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["bash"]' \
      --message "debootstrap --variant=minbase bookworm $mirror" - "$base" >/dev/null
  rm -rf "$rootfs"
}

t="$(now)"
if podman image exists "$base"; then
  base_note="cached"
else
  echo "== building the base image $base (debootstrap; once, then cached)"
  build_base_image
  base_note="built"
fi
podman tag "$base" "$base_alias"
base_seconds="$(since "$t")"
echo "== base image $base: $base_note (${base_seconds} s)"

# --- The image -------------------------------------------------------------------------------------------
echo "== building $image"
t="$(now)"
set +e
podman build --format docker --network host --pull=never "${no_cache[@]}" \
  --ignorefile docker/Dockerfile.dockerignore -f docker/Dockerfile -t "$image" . 2>&1 |
  tee "$work/build.log" | grep --line-buffered -E '^(\[[0-9]+/[0-9]+\] )?STEP [0-9]+/[0-9]+: (FROM|RUN|COPY)' | cut -c1-110
build_status="${PIPESTATUS[0]}"
set -e
if [ "$build_status" -ne 0 ]; then
  tail -n 40 "$work/build.log" >&2
  die "podman build failed (status $build_status; the log's end is above)"
fi
build_seconds="$(since "$t")"
cached_steps="$(grep -c -- '--> Using cache' "$work/build.log" || true)"
echo "== image built in ${build_seconds} s (${cached_steps} steps from cache)"

size_bytes="$(podman image inspect --format '{{.Size}}' "$image")"
size_mb="$(awk -v b="$size_bytes" 'BEGIN { printf "%.1f", b / 1e6 }')"
echo "== checks"
check "image size ${size_mb} MB <= 150 MB" le "$size_bytes" 150000000
check "HEALTHCHECK kept in the image (Docker format)" \
  bash -c "podman image inspect '$image' | grep -q 'polytope-healthcheck'"

# --- polytope-inspect on the host ------------------------------------------------------------------------
# By default the image's own polytope-inspect, copied out and run on the host: it is built from the same
# sources as the server, so the two speak the same protocol version (build/release/bin/polytope-inspect may
# be older than the tree, and building it here could race a developer's own build of build/release).
# POLYTOPE_INSPECT picks another client. Where the copied binary cannot run on this host, the client runs
# inside the container instead (podman exec), and the goodbye check is skipped.
inspect="${POLYTOPE_INSPECT:-}"
inspect_where="on the host"
if [ -n "$inspect" ]; then
  [ -x "$inspect" ] || die "POLYTOPE_INSPECT=$inspect is not an executable file"
else
  podman create --name "$container-copy" "$image" > /dev/null 2>&1
  podman cp "$container-copy:/usr/local/bin/polytope-inspect" "$work/polytope-inspect"
  podman cp "$container-copy:/usr/local/bin/polytope-token" "$work/polytope-token"
  podman rm "$container-copy" > /dev/null 2>&1 || true # (it logs that it has no systemd timer to remove)
  if "$work/polytope-inspect" --help > /dev/null 2>&1; then
    inspect="$work/polytope-inspect"
    inspect_where="on the host (the image's copy)"
  else
    inspect=""
    inspect_where="in the container (the image's copy does not run on this host)"
  fi
fi
run_inspect() {
  if [ -n "$inspect" ]; then "$inspect" "$@"; else podman exec "$container" polytope-inspect "$@"; fi
}
# The server requires connect tokens: a fresh key for this run, and a token per client, made with the
# image's polytope-token inside the container (as a game's backend would) and copied out when the client
# runs on the host. A token opens one session only.
token_key="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
make_token() { # prints the path of a new token file for run_inspect (called in $(...): no shared counter)
  local id=$((RANDOM * 32768 + RANDOM + 1))
  if [ -n "$inspect" ] && [ -x "$work/polytope-token" ] && "$work/polytope-token" --help > /dev/null 2>&1; then
    "$work/polytope-token" make --key "$token_key" --client-id "$id" --server "127.0.0.1:$port" --lifetime 300 \
      --out "$work/client-$id.token" > /dev/null || die "polytope-token make failed"
    echo "$work/client-$id.token"
  else
    podman exec "$container" polytope-token make --key "$token_key" --client-id "$id" \
      --server "127.0.0.1:$port" --lifetime 300 --out "/tmp/client-$id.token" > /dev/null || die "polytope-token make failed"
    if [ -n "$inspect" ]; then
      podman cp "$container:/tmp/client-$id.token" "$work/client-$id.token" && echo "$work/client-$id.token"
    else
      echo "/tmp/client-$id.token"
    fi
  fi
}

# --- Run -------------------------------------------------------------------------------------------------
http_port=$((port + 1000))
if command -v ss >/dev/null 2>&1 && [ -n "$(ss -Hlun "sport = :$port")" ]; then
  die "UDP port $port is in use on this machine; pick another with --port"
fi
if command -v ss >/dev/null 2>&1 && [ -n "$(ss -Hltn "sport = :$http_port")" ]; then
  die "TCP port $http_port is in use on this machine; pick another UDP port with --port (HTTP is that + 1000)"
fi
echo "== podman run --network host, POLYTOPE_PORT=$port, POLYTOPE_HTTP_PORT=$http_port"
# Made before the container starts when polytope-token runs on the host (it needs no server).
first_token=""
if [ -n "$inspect" ] && "$work/polytope-token" --help > /dev/null 2>&1; then first_token="$(make_token)"; fi
t_run="$(now)"
# Podman would run the HEALTHCHECK on a systemd timer; there is no systemd here, so it logs that it cannot
# (to stderr, kept in a file) and `podman healthcheck run` below runs the check on demand instead.
if ! podman run -d --name "$container" --network host \
  -e POLYTOPE_PORT="$port" -e POLYTOPE_HTTP_PORT="$http_port" -e POLYTOPE_LOG_LEVEL=info \
  -e POLYTOPE_TOKEN_KEY="$token_key" -e POLYTOPE_PUBLIC_ADDRESS="127.0.0.1:$port" "$image" > /dev/null \
  2> "$work/run.err"; then
  cat "$work/run.err" >&2
  die "podman run failed"
fi
first_status=0
[ -n "$first_token" ] || first_token="$(make_token)"
run_inspect "127.0.0.1:$port" --json --snapshots 1 --timeout 10 --name docker-test --token "$first_token" \
  > "$work/first.json" || first_status=$?
first_seconds="$(since "$t_run")"
check "a snapshot reached polytope-inspect $inspect_where (status $first_status)" \
  grep -q '"tick":[0-9]*,"time":.*"bodies":\[{' "$work/first.json"
check "first snapshot ${first_seconds} s after podman run (<= 2 s)" le "$first_seconds" 2.0
if [ "$first_status" -ne 0 ] && [ -n "${POLYTOPE_INSPECT:-}" ]; then
  echo "   (is $POLYTOPE_INSPECT built from the same protocol version as the image?)"
fi

run_inspect "127.0.0.1:$port" --json --snapshots 20 --timeout 5 --name docker-test --token "$(make_token)" \
  > "$work/stream.json" || true
tokenless_status=0
run_inspect "127.0.0.1:$port" --snapshots 1 --timeout 2 --name no-token > /dev/null 2>&1 || tokenless_status=$?
check "a client without a connect token gets no answer (status $tokenless_status)" test "$tokenless_status" -eq 2
ticks="$(sed -n 's/^{"tick":\([0-9]*\),.*/\1/p' "$work/stream.json")"
# shellcheck disable=SC2016 # awk's own $1
check "20 more snapshots, ticks increasing" \
  awk 'NR > 1 && $1 <= prev { bad = 1 } { prev = $1; n++ } END { exit !(n == 20 && !bad) }' <<<"$ticks"
check "runs as uid:gid 10001:10001, not root" \
  test "$(podman exec "$container" id -u):$(podman exec "$container" id -g)" = 10001:10001
check "that user can write its state directory /var/lib/polytope" \
  podman exec "$container" sh -c 'touch /var/lib/polytope/.probe && rm /var/lib/polytope/.probe'
check "polytope-server is PID 1 (the entry point exec'd it)" \
  test "$(podman exec "$container" cat /proc/1/comm)" = polytope-server

t="$(now)"
check "podman healthcheck run passes" podman healthcheck run "$container"
health_seconds="$(since "$t")"
probe_status=0
podman exec "$container" polytope-inspect 127.0.0.1:1 --snapshots 1 --timeout 1 >/dev/null 2>&1 || probe_status=$?
check "the health probe fails (status 2) where no server answers" test "$probe_status" -eq 2

bad_status=0
podman run --rm --network host -e POLYTOPE_PORT="$((port + 1))" -e POLYTOPE_HTTP_PORT=0 \
  -e POLYTOPE_INSECURE=true -e POLYTOPE_SCENE=no-such-scene "$image" \
  > "$work/bad.log" 2>&1 || bad_status=$?
check "POLYTOPE_SCENE reaches the server: an unknown scene is refused (status $bad_status)" \
  bash -c "[ $bad_status -ne 0 ] && grep -q \"unknown scene 'no-such-scene'\" '$work/bad.log'"

# GET /healthz with bash's /dev/tcp inside the container (no curl in the image). A server without the HTTP
# port (the variable is then ignored) refuses the connection: reported, not failed.
healthz_status=0
podman exec "$container" bash -c "exec 3<>/dev/tcp/127.0.0.1/$http_port || exit 7
  printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3
  timeout 3 cat <&3" > "$work/healthz.txt" 2> "$work/healthz.err" || healthz_status=$?
if [ "$healthz_status" -eq 7 ]; then
  echo "   skip  GET /healthz: nothing listens on TCP $http_port in the container (no HTTP port in this server)"
  healthz_note="skipped"
else
  check "GET /healthz on TCP $http_port answers 200 ($(head -n 1 "$work/healthz.txt" | tr -d '\r'))" \
    grep -q '^HTTP/1\.[01] 200' "$work/healthz.txt"
  healthz_note="$(head -n 1 "$work/healthz.txt" | tr -d '\r')"
fi

# --- polytope-bots: the load generator from the image, in a second container -----------------------------
bots_clients=16
bots_seconds=4
echo "== polytope-bots from the image: $bots_clients bots for $bots_seconds s"
t="$(now)"
bots_status=0
podman run --rm --name "$container-bots" --network host -e POLYTOPE_TOKEN_KEY="$token_key" "$image" \
  polytope-bots "127.0.0.1:$port" --clients "$bots_clients" --seconds "$bots_seconds" --connect-spread 0.5 --json \
  > "$work/bots.json" 2> "$work/bots.err" || bots_status=$?
bots_wall="$(since "$t")"
# (podman itself logs to the same stderr that it cannot set up health-check timers without systemd)
grep -hv 'unable to get systemd connection' "$work/bots.json" "$work/bots.err" | sed 's/^/   | /' || true
check "polytope-bots: all $bots_clients bots connected (status $bots_status)" \
  bash -c "[ $bots_status -eq 0 ] && grep -q '\"succeeded\":$bots_clients,' '$work/bots.json'"
check "polytope-bots: snapshots arrived" grep -q '"snapshots_per_second":{"total":[1-9]' "$work/bots.json"

# --- SIGTERM ---------------------------------------------------------------------------------------------
goodbye_checked=false
if [ -n "$inspect" ]; then
  goodbye_token="$(make_token)"
  "$inspect" "127.0.0.1:$port" --json --seconds 60 --timeout 5 --name goodbye --token "$goodbye_token" \
    > "$work/goodbye.json" 2> "$work/goodbye.err" &
  inspect_pid=$!
  for _ in $(seq 50); do [ -s "$work/goodbye.json" ] && break; sleep 0.1; done
  goodbye_checked=true
fi
echo "== podman stop (SIGTERM, SIGKILL after 10 s)"
t="$(now)"
if ! podman stop -t 10 "$container" > /dev/null 2>> "$work/run.err"; then
  cat "$work/run.err" >&2
  die "podman stop failed"
fi
stop_seconds="$(since "$t")"
exit_code="$(podman inspect --format '{{.State.ExitCode}}' "$container")"
check "exited with status 0 (got $exit_code)" test "$exit_code" = 0
check "stopped ${stop_seconds} s after SIGTERM (<= 5 s)" le "$stop_seconds" 5.0
podman logs "$container" > "$work/server.log" 2>&1
check "the logs show the clean stop (\"stopped after\")" grep -q 'stopped after' "$work/server.log"
if $goodbye_checked; then
  goodbye_status=0
  wait "$inspect_pid" || goodbye_status=$?
  inspect_pid=""
  check "a connected client was told goodbye (polytope-inspect status 3: $(tr -d '\n' < "$work/goodbye.err"))" \
    test "$goodbye_status" -eq 3
fi
echo "   server log:"
sed 's/^/   | /' "$work/server.log"

# --- Report ----------------------------------------------------------------------------------------------
echo "== timings: tools ${tools_seconds} s, base image ${base_seconds} s ($base_note), image build ${build_seconds} s," \
  "podman run -> first snapshot ${first_seconds} s, healthcheck ${health_seconds} s, /healthz ${healthz_note}," \
  "polytope-bots container ${bots_wall} s, SIGTERM -> exit ${stop_seconds} s," \
  "total $(since "$script_start") s"
echo "== image $image: ${size_mb} MB; kept with its build cache for the next run (docker/test.sh --clean-images removes it)"
echo "docker/test.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
