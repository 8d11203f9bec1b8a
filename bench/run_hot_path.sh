#!/usr/bin/env bash
# Runs the hot-path benchmarks (median of 5 repetitions) and writes the
# Google Benchmark JSON to OUT.json; the console table goes to stdout.
#
# Usage: bench/run_hot_path.sh OUT.json [extra --benchmark_* flags]
#   BUILD_DIR (default build/release) selects the build tree.
# Then: python3 bench/ratios.py OUT.json
# shellcheck source=scripts/lib/bench_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/bench_common.sh"
bench_take_out "$@"
shift
bench_require_binary bench/tokenlease_bench
exec "${bench_bin}" "${bench_json_flags[@]}" "$@"
