#!/usr/bin/env bash
# Runs lease_bench (median of 5 repetitions; the leased decision next to
# the local Limiter and a mutex-guarded bucket) against a private
# redis-server it starts on a free 127.0.0.1 port (no persistence) and
# stops at the end, and writes the Google Benchmark JSON to OUT.json.
#
# Usage: bench/run_lease_bench.sh OUT.json [extra --benchmark_* flags]
#   BUILD_DIR (default build/release) selects the build tree.
# shellcheck source=scripts/lib/bench_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/bench_common.sh"
bench_take_out "$@"
shift
bench_require_binary bench/lease_bench
bench_load_average
rc=0
# A URL from the caller's environment would be used instead: the script
# promises a private server.
env -u TOKENLEASE_BENCH_REDIS_URL \
  "${bench_bin}" "${bench_json_flags[@]}" "$@" || rc=$?
bench_load_average "after the run"
exit "${rc}"
