#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build/fuzz) and runs each for SECONDS (default 30) on its seed
# corpus. Exits non-zero when a target finds a crash (the reproducer is left in build/fuzz/crashes/).
#   scripts/fuzz.sh [SECONDS]   (the targets run as many at a time as there are cores)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh
seconds="${1:-30}"
targets=(packet snapshot_payload catalogue inputs challenge scene recording sealed token world_restore checkpoint
  geometry_files)

polytope_ensure_packages "${POLYTOPE_PACKAGES[@]}" "${POLYTOPE_FUZZ_PACKAGES[@]}"
cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DCMAKE_CXX_COMPILER=clang++ \
  -DPOLYTOPE_FUZZ=ON -DPOLYTOPE_BUILD_TESTS=OFF -DPOLYTOPE_BUILD_BENCH=OFF -DPOLYTOPE_WERROR=ON >/dev/null
cmake --build build/fuzz --target make_packet_corpus make_state_corpus "${targets[@]/#/fuzz_}"

mkdir -p build/fuzz/corpus build/fuzz/crashes
build/fuzz/bin/make_packet_corpus build/fuzz/corpus
build/fuzz/bin/make_state_corpus build/fuzz/corpus
# Scene files are text: their seeds are the example scenes, with a dictionary of the schema's names.
mkdir -p build/fuzz/corpus/scene
cp scenes/*.json build/fuzz/corpus/scene/
# Geometry files: the first byte chooses the reader (0 glTF, 1 OBJ, 2 PNG, 3 raw with two side bytes).
mkdir -p build/fuzz/corpus/geometry_files
printf '\001o Floor\nv 0 0 0\nv 1 0 0\nv 1 0 1\nv 0 0 1\nf 1 4 3 2\nf -1 -2 -3\n' \
  >build/fuzz/corpus/geometry_files/seed_obj
printf '\000{"asset": {"version": "2.0"}, "buffers": [{"uri": "data:application/octet-stream;base64,%s", "byteLength": 36}], "bufferViews": [{"buffer": 0, "byteLength": 36}], "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"}], "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}], "nodes": [{"mesh": 0, "scale": [2, 1, 2]}], "scenes": [{"nodes": [0]}]}' \
  "AAAAAAAAAAAAAAAAAACAPwAAAAAAAAAAAAAAAAAAAAAAAIA/" >build/fuzz/corpus/geometry_files/seed_gltf
printf '\003\003\002\001\000\002\000\003\000\004\000\005\000\006\000' >build/fuzz/corpus/geometry_files/seed_raw

# One target: its run, then its summary (printed whole, so that parallel runs do not interleave lines).
fuzz_one() {
  local target="$1" extra=(-max_len=1300) result=0
  mkdir -p build/fuzz/corpus/$target
  if [ "$target" = scene ]; then extra=(-max_len=4096 -dict=tests/fuzz/scene.dict); fi
  # Saved states are kilobytes (a World of the "mixed" scene tens of them): room for the real ones.
  if [ "$target" = world_restore ]; then extra=(-max_len=65536); fi
  if [ "$target" = checkpoint ]; then extra=(-max_len=16384); fi
  build/fuzz/bin/fuzz_$target build/fuzz/corpus/$target -max_total_time="$seconds" "${extra[@]}" \
    -artifact_prefix=build/fuzz/crashes/$target- -print_final_stats=1 2>build/fuzz/fuzz_$target.log || result=1
  {
    echo "== fuzz_$target for ${seconds}s"
    grep -E "^stat::number_of_executed_units|^Done" build/fuzz/fuzz_$target.log || tail -5 build/fuzz/fuzz_$target.log
    if [ "$result" -ne 0 ]; then
      echo "fuzz_$target FAILED; see build/fuzz/fuzz_$target.log and build/fuzz/crashes/" >&2
    fi
  }
  return "$result"
}

# As many targets at a time as there are cores (each fuzzer is one process): every target still gets its
# full SECONDS, in half the wall time on two cores.
jobs=$(nproc)
status=0
pids=()
for target in "${targets[@]}"; do
  fuzz_one "$target" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit "$status"
