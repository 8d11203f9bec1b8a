#!/usr/bin/env bash
# The main job: the live multi-instance demo, `tokenlease demo`. Installs
# missing Debian packages, builds the `tokenlease` program (target
# tokenlease_cli) in the release preset and runs it: 4 instance processes
# with 2 threads each share one limit of 10,000 per second through Redis in
# leased mode (a private redis-server on a free 127.0.0.1 port, stopped at
# the end), offered 10x that; a line per 0.5 s shows what was admitted
# against the limit, per instance, the decision latency and the Redis
# commands it cost; a summary follows. Arguments are passed on (e.g.
# --instances=2 --seconds=60 --keys=zipf, --mode=local or --mode=direct to
# compare; `build/release/tools/tokenlease demo --help` lists them all).
# Ctrl-C stops early and still prints the summary.
#
#   bash scripts/demo.sh
#   bash scripts/demo.sh --instances=3 --seconds=30
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly JOBS=2

log() { printf '==== %s\n' "$*" >&2; }
die() { printf 'demo.sh: %s\n' "$*" >&2; exit 1; }

# shellcheck source=scripts/install_deps.sh
source scripts/install_deps.sh

install_missing_packages

log "building tokenlease (release preset)"
cmake --preset release >/dev/null
cmake --build --preset release -j"$JOBS" --target tokenlease_cli
[[ -x build/release/tools/tokenlease ]] || die "tokenlease was not built"

log "running: build/release/tools/tokenlease demo $*"
exec build/release/tools/tokenlease demo "$@"
