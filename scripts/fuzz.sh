#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build/fuzz) and runs each for SECONDS (default 30) on its seed
# corpus. Exits non-zero when a target finds a crash (the reproducer is left in build/fuzz/crashes/).
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh
seconds="${1:-30}"
targets=(packet snapshot_payload catalogue inputs challenge scene recording sealed token world_restore checkpoint)

polytope_ensure_packages "${POLYTOPE_PACKAGES[@]}" "${POLYTOPE_FUZZ_PACKAGES[@]}"
cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DPOLYTOPE_FUZZ=ON -DPOLYTOPE_BUILD_TESTS=OFF -DPOLYTOPE_BUILD_BENCH=OFF -DPOLYTOPE_WERROR=ON >/dev/null
cmake --build build/fuzz --target make_packet_corpus make_state_corpus "${targets[@]/#/fuzz_}"

mkdir -p build/fuzz/corpus build/fuzz/crashes
build/fuzz/bin/make_packet_corpus build/fuzz/corpus
build/fuzz/bin/make_state_corpus build/fuzz/corpus
# Scene files are text: their seeds are the example scenes, with a dictionary of the schema's names.
mkdir -p build/fuzz/corpus/scene
cp scenes/*.json build/fuzz/corpus/scene/

status=0
for target in "${targets[@]}"; do
  mkdir -p build/fuzz/corpus/$target
  echo "== fuzz_$target for ${seconds}s"
  extra=(-max_len=1300)
  if [ "$target" = scene ]; then extra=(-max_len=4096 -dict=tests/fuzz/scene.dict); fi
  # Saved states are kilobytes (a World of the "mixed" scene tens of them): room for the real ones.
  if [ "$target" = world_restore ]; then extra=(-max_len=65536); fi
  if [ "$target" = checkpoint ]; then extra=(-max_len=16384); fi
  if ! build/fuzz/bin/fuzz_$target build/fuzz/corpus/$target -max_total_time="$seconds" "${extra[@]}" \
      -artifact_prefix=build/fuzz/crashes/$target- -print_final_stats=1 2>build/fuzz/fuzz_$target.log; then
    status=1
    echo "fuzz_$target FAILED; see build/fuzz/fuzz_$target.log and build/fuzz/crashes/" >&2
  fi
  grep -E "^stat::number_of_executed_units|^Done" build/fuzz/fuzz_$target.log || tail -5 build/fuzz/fuzz_$target.log
done
exit "$status"
