#!/usr/bin/env bash
# The long soak: tests/server/test_soak.cpp (64 clients with connect tokens joining and leaving, 25% loss,
# 25% duplicates, 100 +- 50 ms, a 2 s blackout every 10 s) for SECONDS of simulated time, built with ASan
# and UBSan, while the process's resident memory is sampled every 5 s.
#
#   bench/soak.sh                    1500 simulated seconds (about 10 minutes of wall time), ASan + UBSan
#   bench/soak.sh --seconds 120      shorter
#   bench/soak.sh --release          the Release build (build/release) instead: faster, no sanitizers
#   bench/soak.sh --seed N           another seed (default 2026)
#   bench/soak.sh --no-build         use the server_tests already built (POLYTOPE_BUILD_DIR, default build/asan)
#
# Prints the test's summary line, then one JSON object {"results":[{...}]} with one flat record: seconds
# simulated and wall, resident memory (KiB): the mean from 10% to 20% of the run (after the warm-up), the
# mean of the last 10%, the largest sample, the change between the two means in percent and the slope.
# Exit status: non-zero when the test fails, a sanitizer reports, or resident memory grows by more than 5%
# between the two means. The samples are left in build/soak-rss.csv.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
source scripts/common.sh

seconds=1500
preset=asan
seed=2026
build=true
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="${2:?}"; shift 2 ;;
    --release) preset=release; shift ;;
    --seed) seed="${2:?}"; shift 2 ;;
    --no-build) build=false; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/soak.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

dir="${POLYTOPE_BUILD_DIR:-build/$preset}"
if $build; then
  polytope_ensure_packages "${POLYTOPE_PACKAGES[@]}"
  echo "== building server_tests ($preset)"
  polytope_build "$preset" server_tests
  dir="build/$preset"
fi
binary="$dir/bin/server_tests"
[ -x "$binary" ] || { echo "bench/soak.sh: $binary is missing (build it, or drop --no-build)" >&2; exit 1; }
csv=build/soak-rss.csv
log=build/soak.log
echo "seconds_wall,rss_kib" > "$csv"

echo "== soak: $seconds simulated seconds, seed $seed ($preset)"
start=$(date +%s.%N)
POLYTOPE_SOAK_SECONDS="$seconds" POLYTOPE_SOAK_SEED="$seed" \
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}" \
  "$binary" "[soak]" --durations yes > "$log" 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  rss="$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)"
  [ -n "$rss" ] && echo "$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }'),$rss" >> "$csv"
  sleep 5
done
status=0
wait "$pid" || status=$?
wall="$(awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }')"

grep -E "^  soak |passed|failed|runtime error|ERROR: (Address|Leak)Sanitizer" "$log" || true
if grep -qE "runtime error|ERROR: (Address|Leak)Sanitizer" "$log"; then
  echo "bench/soak.sh: a sanitizer reported (see $log)" >&2
  status=1
fi
# Resident memory, after the warm-up: the mean of the samples from 10% to 20% of the run against the mean
# of the last 10% (single samples swing by several percent under ASan, whose quarantine recycles memory in
# bursts), plus the largest sample and the least-squares slope over the run from 10% on.
summary="$(awk -F, 'NR > 1 { t[n] = $1; r[n] = $2; n++ } END {
  if (n < 10) { exit }
  a = int(n / 10); b = int(n / 5); c = int(n * 9 / 10)
  for (k = a; k < b; k++) early += r[k]; early /= (b - a)
  for (k = c; k < n; k++) late += r[k]; late /= (n - c)
  max = 0; for (k = 0; k < n; k++) if (r[k] > max) max = r[k]
  for (k = a; k < n; k++) { m++; sx += t[k]; sy += r[k]; sxx += t[k] * t[k]; sxy += t[k] * r[k] }
  slope = (m * sxy - sx * sy) / (m * sxx - sx * sx)
  printf ",\"rss_kib_mean_10_20pct\":%.0f,\"rss_kib_mean_last_10pct\":%.0f,\"rss_kib_max\":%d,\"rss_growth_pct\":%.2f,\"rss_slope_kib_per_s\":%.2f,\"rss_samples\":%d", early, late, max, 100 * (late - early) / early, slope, n
}' "$csv")"
echo "{\"results\":[{\"case\":\"soak_$preset\",\"impl\":\"polytope\",\"n\":64,\"seconds_simulated\":$seconds,\"seconds_wall\":$wall,\"seed\":$seed,\"exit_status\":$status$summary}]}"
growth="$(sed -n 's/.*"rss_growth_pct":\([-0-9.]*\).*/\1/p' <<<"$summary")"
if [ -n "$growth" ] && awk -v g="$growth" 'BEGIN { exit !(g > 5.0) }'; then
  echo "bench/soak.sh: resident memory grew by $growth% (limit 5%)" >&2
  status=1
fi
exit "$status"
