#!/usr/bin/env bash
# The main job: the live demo, `tokenlease demo`. Installs missing Debian
# packages, builds the `tokenlease` program (target tokenlease_cli) in the
# release preset and runs it. With no arguments (about 25 s): a private
# redis-server on a free 127.0.0.1 port (stopped at the end); instance
# processes sized to this machine's CPUs (one per CPU left after
# redis-server's, 2 to 4, each waking once a millisecond: nothing spins)
# share one hot key limited to 10,000/s (burst 1,000) in leased mode,
# offered 5x that, for 20 s; from 8 s to 12 s the server is stopped
# (SIGSTOP) and each instance enforces its share of the limit alone
# (fail_local) until leasing resumes. A live view twice a second (the
# instances' rates and health), then a summary per phase (before, during,
# after the outage) with its bounds, a CSV and an SVG chart of admitted
# per second against the limit (paths printed;
# $TMPDIR or /tmp). Arguments are passed on: --scenario=zipf (100,000 keys,
# a limit per key), --outage=false, --failure_mode=fail_closed or
# fail_open, --mode=direct or --mode=local, --seconds=60, ...;
# `build/release/tools/tokenlease demo --help` lists them all with their
# defaults. Ctrl-C stops early and still prints the summary.
#
#   bash scripts/demo.sh
#   bash scripts/demo.sh --scenario=zipf --failure_mode=fail_closed
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
