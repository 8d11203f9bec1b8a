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

dir="$(mktemp -d "${TMPDIR:-/tmp}/tokenlease-bench.XXXXXX")"
port=""
pid=""
cleanup() {
  if [[ -n "${pid}" ]]; then
    kill "${pid}" 2>/dev/null || true
    wait "${pid}" 2>/dev/null || true
  fi
  rm -rf "${dir}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for _ in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 30000))
  redis-server --port "${port}" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "${dir}" --logfile "${dir}/redis.log" &
  pid=$!
  for ((i = 0; i < 100; i++)); do
    redis-cli -p "${port}" ping 2>/dev/null | grep -q PONG && break 2
    kill -0 "${pid}" 2>/dev/null || break
    sleep 0.05
  done
  kill "${pid}" 2>/dev/null || true
  wait "${pid}" 2>/dev/null || true
  pid=""
done
[[ -n "${pid}" ]] || { echo "could not start redis-server" >&2; exit 1; }
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
TOKENLEASE_BENCH_REDIS_URL="redis://127.0.0.1:${port}" "${bin}" \
  --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="${out}" \
  --benchmark_out_format=json \
  "$@" || rc=$?
echo "# load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "${rc}"
