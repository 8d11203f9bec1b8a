# shellcheck shell=bash
# The preamble of bench/*.sh, sourced as their first step: strict mode,
# the repository root and build tree, and helpers for the binary, the
# OUT.json argument and Google Benchmark's JSON output. No script starts a
# redis-server itself: the benchmark binaries start a private one when not
# given a URL, and support/with_redis runs a command next to one.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/bench_common.sh"
#   bench_take_out "$@"; shift        # scripts that write OUT.json
#   bench_require_binary bench/lease_bench
#   "${bench_bin}" "${bench_json_flags[@]}" "$@"
#
# BUILD_DIR (default build/release, relative to the repository root unless
# absolute) selects the build tree.
set -euo pipefail

bench_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bench_build_dir="${BUILD_DIR:-build/release}"
[[ "${bench_build_dir}" = /* ]] || bench_build_dir="${bench_root}/${bench_build_dir}"

# bench_require_binary PATH: sets bench_bin to PATH under the build tree,
# or exits 1 saying which target to build.
bench_require_binary() {
  bench_bin="${bench_build_dir}/$1"
  if [[ ! -x "${bench_bin}" ]]; then
    echo "error: ${bench_bin} not found; build the $(basename "$1") target first" >&2
    exit 1
  fi
}

# bench_take_out "$@": the first argument is OUT.json (exits 2 with the
# usage if there is none; the caller shifts it off). Sets bench_out and
# bench_json_flags (median of 5 repetitions, JSON to OUT.json).
bench_take_out() {
  if [[ $# -lt 1 ]]; then
    echo "usage: $0 OUT.json [extra --benchmark_* flags]" >&2
    exit 2
  fi
  bench_out="$1"
  # shellcheck disable=SC2034  # read by the sourcing script
  bench_json_flags=(--benchmark_repetitions=5
    --benchmark_report_aggregates_only=true
    --benchmark_out="${bench_out}" --benchmark_out_format=json)
}

# bench_load_average [WHEN]: "# load average[ WHEN]: x y z".
bench_load_average() {
  echo "# load average${1:+ $1}: $(cut -d' ' -f1-3 /proc/loadavg)"
}
