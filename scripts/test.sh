#!/usr/bin/env bash
# Builds Polytope with warnings as errors and runs every test through ctest.
#   scripts/test.sh            Release build (build/release)
#   scripts/test.sh asan       the same with AddressSanitizer + UndefinedBehaviorSanitizer (build/asan)
# Installs the Debian packages it needs first (skipped when they are present). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh

preset="${1:-release}"
case "$preset" in
  release|debug|asan) ;;
  *) echo "usage: scripts/test.sh [release|debug|asan]" >&2; exit 2 ;;
esac

polytope_ensure_packages "${POLYTOPE_PACKAGES[@]}"
echo "== building ($preset)"
polytope_build "$preset"
echo "== testing ($preset)"
# As many tests at a time as there are cores: each test is one process, and no two share a port or a file.
ctest --preset "$preset" --timeout 600 -j "$(nproc)"
