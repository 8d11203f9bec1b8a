#!/usr/bin/env bash
# Starts a private redis-server on a free 127.0.0.1 port (no persistence),
# runs lease_bench against it (median of 5 repetitions; the leased decision
# next to the local Limiter and a mutex-guarded bucket), writes the Google
# Benchmark JSON to OUT.json, and stops the server.
#
# Usage: bench/run_lease_bench.sh OUT.json [extra --benchmark_* flags]
#   BUILD_DIR (default build/release) selects the build tree.
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
bin="${build_dir}/bench/lease_bench"
[[ -x "${bin}" ]] || { echo "error: ${bin} not found; build lease_bench" >&2; exit 1; }

# shellcheck source=scripts/lib/redis_server.sh
source "${root}/scripts/lib/redis_server.sh"
trap redis_server_stop EXIT
trap 'exit 130' INT TERM
redis_server_start --prefix=tokenlease-bench || exit "$?"
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
TOKENLEASE_BENCH_REDIS_URL="redis://127.0.0.1:${redis_server_port}" "${bin}" \
  --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="${out}" \
  --benchmark_out_format=json \
  "$@" || rc=$?
echo "# load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "${rc}"
