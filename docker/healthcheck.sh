#!/bin/sh
# Container health check: one real client round trip over UDP (connect, receive one snapshot, disconnect)
# with polytope-inspect. When the server requires connect tokens (POLYTOPE_TOKEN_KEY is set), the check
# makes itself a short-lived token with that key, as a backend would, for a random client id; it names
# 127.0.0.1:PORT and every POLYTOPE_PUBLIC_ADDRESS, so the server's address check passes either way.
set -u
port="${POLYTOPE_PORT:-7777}"
token=""
cleanup() { [ -n "$token" ] && rm -f "$token"; }
trap cleanup EXIT
set --
if [ -n "${POLYTOPE_TOKEN_KEY:-}" ]; then
    token="$(mktemp)" || exit 1
    id="$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')"
    servers="--server 127.0.0.1:$port"
    for address in $(echo "${POLYTOPE_PUBLIC_ADDRESS:-}" | tr ',' ' '); do
        servers="$servers --server $address"
    done
    # shellcheck disable=SC2086 # $servers is a list of flags
    polytope-token make --client-id "$((id + 1))" $servers --lifetime 30 --out "$token" > /dev/null || exit 1
    set -- --token "$token"
fi
polytope-inspect "127.0.0.1:$port" --snapshots 1 --timeout 2 --name healthcheck "$@" > /dev/null
