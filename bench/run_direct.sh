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

# shellcheck source=scripts/lib/redis_server.sh
source "${root}/scripts/lib/redis_server.sh"
trap redis_server_stop EXIT
redis_server_start --prefix=tokenlease-bench || exit "$?"
"${bin}" --url="redis://127.0.0.1:${redis_server_port}" "$@"
# Server-side cost per script call (usec_per_call), to tell script time from
# round trips.
echo "# redis INFO commandstats:"
redis-cli -p "${redis_server_port}" info commandstats | grep -E '^cmdstat_(eval|evalsha):' || true
