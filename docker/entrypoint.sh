#!/bin/sh
# Container entry point: execs polytope-server, so that it runs as PID 1 and receives SIGTERM from
# `docker stop` / Kubernetes itself.
#
# The server reads its POLYTOPE_* environment variables itself (POLYTOPE_PORT, POLYTOPE_TICK_HZ,
# POLYTOPE_HTTP_PORT, POLYTOPE_CONFIG, ...; docs/OPERATIONS.md lists them all), checks them and exits
# with a message naming a bad one. Flags given as arguments override the variables. An argument list that
# does not start with "-" is run as a command instead (e.g. `polytope-inspect HOST:PORT`).
set -eu

if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    exec "$@"
fi

exec /usr/local/bin/polytope-server "$@"
