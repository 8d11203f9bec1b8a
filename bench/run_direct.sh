#!/usr/bin/env bash
# Starts a private redis-server on a free 127.0.0.1 port, runs direct_bench
# against it (direct mode vs synchronous EVAL, same run), stops the server.
#
# Usage: bench/run_direct.sh [direct_bench flags, e.g. --callers=1,64]
#   BUILD_DIR (default build/release) selects the build tree.
# shellcheck source=scripts/lib/bench_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/bench_common.sh"
bench_require_binary bench/direct_bench
bench_start_redis
"${bench_bin}" --url="${bench_redis_url}" "$@"
# Server-side cost per script call (usec_per_call), to tell script time from
# round trips.
echo "# redis INFO commandstats:"
redis-cli -p "${redis_server_port}" info commandstats | grep -E '^cmdstat_(eval|evalsha):' || true
