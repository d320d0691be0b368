#!/bin/sh
# Container entry point: turns POLYTOPE_* environment variables into polytope-server flags, then execs the
# server, so that it runs as PID 1 and receives SIGTERM from `docker stop` / Kubernetes itself.
#
#   POLYTOPE_PORT           --port            UDP port (7777)
#   POLYTOPE_BIND           --bind            address to bind (0.0.0.0)
#   POLYTOPE_SCENE          --scene           built-in scene (default)
#   POLYTOPE_TICK_HZ        --tick-hz         simulation steps per second (60)
#   POLYTOPE_SNAPSHOT_HZ    --snapshot-hz     snapshots per second to each client (20)
#   POLYTOPE_MAX_CLIENTS    --max-clients     sessions at once (64)
#   POLYTOPE_CLIENT_TIMEOUT --client-timeout  seconds of silence before a client is dropped (10)
#   POLYTOPE_LOG_LEVEL      --log-level       trace, debug, info, warn, error, critical or off (info)
#
# Unset or empty variables leave the server's own default. Values are passed as they are: the server
# checks them and exits with a message naming a bad one. Arguments given to the container come after the
# flags (e.g. `--list-scenes`); an argument list that does not start with "-" is run as a command instead
# (e.g. `polytope-inspect HOST:PORT`).
set -eu

if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    exec "$@"
fi

# Prepended in reverse, so the flags come out in the order of the table above, before "$@".
if [ -n "${POLYTOPE_LOG_LEVEL-}" ]; then set -- --log-level "$POLYTOPE_LOG_LEVEL" "$@"; fi
if [ -n "${POLYTOPE_CLIENT_TIMEOUT-}" ]; then set -- --client-timeout "$POLYTOPE_CLIENT_TIMEOUT" "$@"; fi
if [ -n "${POLYTOPE_MAX_CLIENTS-}" ]; then set -- --max-clients "$POLYTOPE_MAX_CLIENTS" "$@"; fi
if [ -n "${POLYTOPE_SNAPSHOT_HZ-}" ]; then set -- --snapshot-hz "$POLYTOPE_SNAPSHOT_HZ" "$@"; fi
if [ -n "${POLYTOPE_TICK_HZ-}" ]; then set -- --tick-hz "$POLYTOPE_TICK_HZ" "$@"; fi
if [ -n "${POLYTOPE_SCENE-}" ]; then set -- --scene "$POLYTOPE_SCENE" "$@"; fi
if [ -n "${POLYTOPE_BIND-}" ]; then set -- --bind "$POLYTOPE_BIND" "$@"; fi
if [ -n "${POLYTOPE_PORT-}" ]; then set -- --port "$POLYTOPE_PORT" "$@"; fi

exec /usr/local/bin/polytope-server "$@"
