#!/usr/bin/env bash
# Kept so that the harness commands in docs/benchmarks.md still run: the
# harness is now `tokenlease demo` (same flags, same output; it starts its
# own redis-server). This passes the harness's old defaults (30 s, 1 s
# windows, spin pacing, no live rows), which the caller's flags override.
#   BUILD_DIR (default build/release) selects the build tree.
# shellcheck source=scripts/lib/bench_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/bench_common.sh"
bench_require_binary tools/tokenlease
exec "${bench_bin}" demo --seconds=30 --window_ms=1000 --pacing=spin --live=false "$@"
