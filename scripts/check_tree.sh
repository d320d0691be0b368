#!/usr/bin/env bash
# Checks the source tree without building it (CI runs it first; it takes seconds):
#   1. formatting: every tracked C++ file is as the committed .clang-format (clang-format 14) formats it;
#   2. the include rules:
#      - physics/ includes only itself, the standard library and the compiler's x86 intrinsics headers
#        (<emmintrin.h>, <immintrin.h>: the wide solver's SSE2/AVX2; part of the compiler, not a library);
#      - protocol/ never includes server/ or client/;
#      - client/ never includes server/;
#      - the viewer reaches physics/ only in code behind POLYTOPE_VIEWER_LOCAL_SIM;
#   3. no comment names an old protocol version as the current one ("protocol version N", "protocol vN",
#      "wire protocol, version N" with N other than kProtocolVersion; the version history in constants.h is
#      history, not a claim).
# Prints every violation with its file and line; exits 1 when there is any.
#   scripts/check_tree.sh            all checks
#   scripts/check_tree.sh --no-format  the include and version checks only
set -euo pipefail
cd "$(dirname "$0")/.."

format=1
if [ "${1:-}" = "--no-format" ]; then
  format=0
fi
status=0
fail() {
  echo "check_tree: $*" >&2
  status=1
}

mapfile -t sources < <(git ls-files '*.h' '*.hpp' '*.cpp' '*.cc')

# 1. Formatting.
if [ "$format" -eq 1 ]; then
  clang_format=""
  for candidate in clang-format-14 clang-format; do
    if command -v "$candidate" >/dev/null 2>&1; then
      clang_format="$candidate"
      break
    fi
  done
  if [ -z "$clang_format" ]; then
    fail "clang-format not found (Debian package clang-format)"
  elif ! "$clang_format" --dry-run --Werror "${sources[@]}" 2>/tmp/check_tree_format.$$; then
    fail "files not formatted as .clang-format says (run: $clang_format -i FILE):"
    grep -oE '^[^:]+\.(h|hpp|cpp|cc):' /tmp/check_tree_format.$$ | sort -u | sed 's/:$//; s/^/  /' >&2
  fi
  rm -f /tmp/check_tree_format.$$
fi

# 2. Include rules. Each rule: a folder, and an extended regex of the include lines it may not have.
include_violation() {
  local folder="$1" pattern="$2" why="$3" hits
  hits=$(git grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*${pattern}" -- "$folder" || true)
  if [ -n "$hits" ]; then
    fail "$why:"
    echo "$hits" | sed 's/^/  /' >&2
  fi
}
# physics/: quoted includes are its own headers ("polytope/physics/..." or a local header with no folder);
# angle-bracket includes are standard headers, which have no '.' and no '/' in their names.
hits=$(git grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' -- physics |
       grep -vE '#[[:space:]]*include[[:space:]]*"(polytope/physics/[^"]+|[^"/]+)"' || true)
if [ -n "$hits" ]; then
  fail "physics/ includes something other than itself:"
  echo "$hits" | sed 's/^/  /' >&2
fi
hits=$(git grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<[^>]*[./][^>]*>' -- physics |
       grep -vE '#[[:space:]]*include[[:space:]]*<(emmintrin|immintrin)\.h>' || true)
if [ -n "$hits" ]; then
  fail "physics/ includes a header outside the standard library:"
  echo "$hits" | sed 's/^/  /' >&2
fi
include_violation protocol '"polytope/(server|client)/' "protocol/ includes server/ or client/"
include_violation client '"polytope/server/' "client/ includes server/"

# The viewer: every file that includes the engine keeps those includes inside #if POLYTOPE_VIEWER_LOCAL_SIM.
while IFS= read -r file; do
  awk -v file="$file" '
    /^[[:space:]]*#[[:space:]]*if/ { depth++; guarded[depth] = ($0 ~ /POLYTOPE_VIEWER_LOCAL_SIM/) }
    /^[[:space:]]*#[[:space:]]*endif/ { if (depth > 0) depth-- }
    /^[[:space:]]*#[[:space:]]*include[[:space:]]*"polytope\/physics\// {
      ok = 0
      for (i = 1; i <= depth; i++) if (guarded[i]) ok = 1
      if (!ok) { printf "  %s:%d: %s\n", file, NR, $0; bad = 1 }
    }
    END { exit bad }' "$file" >&2 || fail "client/viewer includes physics/ outside #if POLYTOPE_VIEWER_LOCAL_SIM (above)"
done < <(git ls-files 'client/viewer/*.h' 'client/viewer/*.cpp')

# 3. Protocol versions named in comments.
current=$(sed -nE 's/.*kProtocolVersion = ([0-9]+);.*/\1/p' protocol/include/polytope/protocol/constants.h)
if [ -z "$current" ]; then
  fail "cannot read kProtocolVersion from protocol/include/polytope/protocol/constants.h"
else
  hits=$(git grep -niE "protocol,? (version |v)[0-9]+" -- '*.h' '*.cpp' '*.fbs' '*.sh' '*.py' '*.js' '*.ts' \
           ':!protocol/include/polytope/protocol/constants.h' |
         grep -viE "protocol,? (version |v)${current}([^0-9]|$)" || true)
  if [ -n "$hits" ]; then
    fail "comments name a protocol version other than the current one ($current):"
    echo "$hits" | sed 's/^/  /' >&2
  fi
fi

if [ "$status" -eq 0 ]; then
  echo "check_tree: formatting, include rules and protocol versions are in order"
fi
exit "$status"
