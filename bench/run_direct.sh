#!/usr/bin/env bash
# Starts a private redis-server on a free 127.0.0.1 port, runs direct_bench
# against it (direct mode vs synchronous EVAL, same run), stops the server.
#
# Usage: bench/run_direct.sh [direct_bench flags, e.g. --callers=1,64]
#   BUILD_DIR (default build/release) selects the build tree.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-build/release}"
[[ "${build_dir}" = /* ]] || build_dir="${root}/${build_dir}"
bin="${build_dir}/bench/direct_bench"
[[ -x "${bin}" ]] || { echo "error: ${bin} not found; build direct_bench" >&2; exit 1; }

dir="$(mktemp -d "${TMPDIR:-/tmp}/tokenlease-bench.XXXXXX")"
port=""
pid=""
cleanup() {
  [[ -n "${pid}" ]] && kill "${pid}" 2>/dev/null && wait "${pid}" 2>/dev/null
  rm -rf "${dir}"
}
trap cleanup EXIT
for attempt in 1 2 3 4 5; do
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
"${bin}" --url="redis://127.0.0.1:${port}" "$@"
# Server-side cost per script call (usec_per_call), to tell script time from
# round trips.
echo "# redis INFO commandstats:"
redis-cli -p "${port}" info commandstats | grep -E '^cmdstat_(eval|evalsha):' || true
