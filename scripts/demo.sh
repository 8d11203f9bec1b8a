#!/usr/bin/env bash
# The main job: the live multi-instance demo. Installs missing Debian
# packages, builds the harness (bench/lease_harness) in the release preset,
# starts a private redis-server on a free 127.0.0.1 port, and runs several
# instance processes (each with several threads) that share one limit of
# 10,000 per second through Redis in leased mode, offered 10x that. A line
# per 0.5 s shows what was admitted against the limit, per instance, the
# decision latency and the Redis commands it cost; a summary follows.
# Arguments are passed on to the harness (e.g. --instances=2 --seconds=60
# --keys=zipf, --mode=local or --mode=direct to compare; see
# bench/lease_harness.cc). Ctrl-C stops early and still prints the summary.
#
#   bash scripts/demo.sh
#   bash scripts/demo.sh --instances=3 --seconds=30
#
# The single-process local demo is `build/release/tools/tokenlease demo`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly JOBS=2

log() { printf '==== %s\n' "$*" >&2; }
die() { printf 'demo.sh: %s\n' "$*" >&2; exit 1; }

# shellcheck source=scripts/install_deps.sh
source scripts/install_deps.sh

install_missing_packages

log "building the demo (release preset)"
cmake --preset release >/dev/null
cmake --build --preset release -j"$JOBS" --target lease_harness tokenlease_cli
[[ -x build/release/bench/lease_harness ]] || die "lease_harness was not built"

args=(--mode=leased --instances=4 --threads=2 --limit=10000 --seconds=20
      --keys=hot --live --window_ms=500 --pacing=sleep)
log "running: bench/run_lease_harness.sh ${args[*]} $*"
# Later flags win, so the caller's arguments override the defaults above.
exec env BUILD_DIR=build/release bench/run_lease_harness.sh "${args[@]}" "$@"
