#!/usr/bin/env bash
# The long soak: tests/server/test_soak.cpp (64 clients with connect tokens joining and leaving, 25% loss,
# 25% duplicates, 100 +- 50 ms, a 2 s blackout every 10 s) for SECONDS of simulated time, built with ASan
# and UBSan, while the process's resident memory is sampled every 5 s.
#
#   bench/soak.sh                    1500 simulated seconds (about 10 minutes of wall time), ASan + UBSan
#   bench/soak.sh --seconds 120      shorter
#   bench/soak.sh --release          the Release build (build/release) instead: faster, no sanitizers
#   bench/soak.sh --seed N           another seed (default 2026)
#
# Prints the test's summary line, then one JSON object {"results":[{...}]} with one flat record: seconds
# simulated and wall, resident memory (KiB) at 10% of the run (after the warm-up), at the end and at most,
# and the change from the 10% sample to the end in percent. Exit status: non-zero when the test fails, a sanitizer reports, or resident memory
# grows by more than 5% from the 10% sample to the end. The samples are left in build/soak-rss.csv.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
source scripts/common.sh

seconds=1500
preset=asan
seed=2026
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="${2:?}"; shift 2 ;;
    --release) preset=release; shift ;;
    --seed) seed="${2:?}"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/soak.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

polytope_ensure_packages "${POLYTOPE_PACKAGES[@]}"
echo "== building server_tests ($preset)"
polytope_build "$preset" server_tests
binary="build/$preset/bin/server_tests"
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
# Resident memory: the sample at 10% of the run (after connects and warm-up), the last one, the largest.
summary="$(awk -F, 'NR > 1 { t[n] = $1; r[n] = $2; n++ } END {
  if (n < 3) { print "{}"; exit }
  i = int(n / 10); if (i < 1) i = 1
  max = 0; for (k = 0; k < n; k++) if (r[k] > max) max = r[k]
  printf ",\"rss_kib_at_10pct\":%d,\"rss_kib_end\":%d,\"rss_kib_max\":%d,\"rss_growth_pct\":%.2f,\"rss_samples\":%d", r[i], r[n-1], max, 100 * (r[n-1] - r[i]) / r[i], n
}' "$csv")"
[ "$summary" = "{}" ] && summary=""
echo "{\"results\":[{\"case\":\"soak_$preset\",\"impl\":\"polytope\",\"n\":64,\"seconds_simulated\":$seconds,\"seconds_wall\":$wall,\"seed\":$seed,\"exit_status\":$status$summary}]}"
growth="$(sed -n 's/.*"rss_growth_pct":\([-0-9.]*\).*/\1/p' <<<"$summary")"
if [ -n "$growth" ] && awk -v g="$growth" 'BEGIN { exit !(g > 5.0) }'; then
  echo "bench/soak.sh: resident memory grew by $growth% (limit 5%)" >&2
  status=1
fi
exit "$status"
