#!/usr/bin/env bash
# Runs the hot-path benchmarks (median of 5 repetitions) and writes the
# Google Benchmark JSON to OUT.json; the console table goes to stdout.
#
# Usage: bench/run_hot_path.sh OUT.json [extra --benchmark_* flags]
#   BUILD_DIR (default build/release) selects the build tree.
# Then: python3 bench/ratios.py OUT.json
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 OUT.json [extra --benchmark_* flags]" >&2
  exit 2
fi
out="$1"
shift

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-build/release}"
[[ "${build_dir}" = /* ]] || build_dir="${root}/${build_dir}"
bin="${build_dir}/bench/tokenlease_bench"
if [[ ! -x "${bin}" ]]; then
  echo "error: ${bin} not found; build the tokenlease_bench target first" >&2
  exit 1
fi

exec "${bin}" \
  --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="${out}" \
  --benchmark_out_format=json \
  "$@"
