#!/usr/bin/env bash
# The main job: a live demo of a limit under multi-threaded load. Installs
# missing Debian packages, builds the `tokenlease` command-line program in
# the release preset and runs `tokenlease demo`; arguments are passed on.
#
#   bash scripts/demo.sh
#   bash scripts/demo.sh --help
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly PACKAGES=(build-essential cmake ninja-build pkg-config libabsl-dev
  libhiredis-dev libevent-dev libgtest-dev libgmock-dev libbenchmark-dev
  redis-server clang-format)
readonly JOBS=2
readonly CLI=build/release/tools/tokenlease

log() { printf '==== %s\n' "$*" >&2; }
die() { printf 'demo.sh: %s\n' "$*" >&2; exit 1; }

# Installs whichever of PACKAGES is missing (nothing if all are there).
install_missing_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null \
        | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  ((${#missing[@]} == 0)) && return 0
  log "installing missing packages: ${missing[*]}"
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || die "not root and no sudo; install: ${missing[*]}"
    sudo=(sudo)
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
}

install_missing_packages

log "building $CLI (release preset)"
cmake --preset release >/dev/null
cmake --build --preset release -j"$JOBS" --target tokenlease_cli
[[ -x "$CLI" ]] || die "$CLI was not built"

log "running: $CLI demo $*"
exec "$CLI" demo "$@"
