#!/usr/bin/env bash
# Kept so that the harness commands in docs/benchmarks.md still run: the
# harness is now `tokenlease demo` (same flags, same output; it starts its
# own redis-server). This passes the harness's old defaults, which the
# caller's flags override: 30 s, 1 s windows, 4 instances x 2 spinning
# threads, no live rows, no outage, and a burst equal to the limit (the
# demo's own defaults are now an outage in the middle, a load sized to the
# machine and, for the hot key, a burst of a tenth of the limit).
#   BUILD_DIR (default build/release) selects the build tree.
# shellcheck source=scripts/lib/bench_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/bench_common.sh"
bench_require_binary tools/tokenlease

limit=10000
burst_given=false
for arg in "$@"; do
  case "$arg" in
    --limit=*) limit=${arg#--limit=} ;;
    --burst=*) burst_given=true ;;
    --keys=zipf | --scenario=zipf) [[ $limit == 10000 ]] && limit=100 ;;
  esac
done
burst=()
$burst_given || burst=(--burst="$limit")
exec "${bench_bin}" demo --seconds=30 --window_ms=1000 --instances=4 \
  --threads=2 --pacing=spin --outage=false --live=false "${burst[@]}" "$@"
