#!/usr/bin/env bash
# The main job: a live demo of a limit under multi-threaded load. Installs
# missing Debian packages, builds the `tokenlease` command-line program in
# the release preset and runs `tokenlease demo`; arguments are passed on.
#
#   bash scripts/demo.sh
#   bash scripts/demo.sh --help
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly JOBS=2
readonly CLI=build/release/tools/tokenlease

log() { printf '==== %s\n' "$*" >&2; }
die() { printf 'demo.sh: %s\n' "$*" >&2; exit 1; }

# shellcheck source=scripts/install_deps.sh
source scripts/install_deps.sh

install_missing_packages

log "building $CLI (release preset)"
cmake --preset release >/dev/null
cmake --build --preset release -j"$JOBS" --target tokenlease_cli
[[ -x "$CLI" ]] || die "$CLI was not built"

log "running: $CLI demo $*"
exec "$CLI" demo "$@"
