# shellcheck shell=bash
# Sourced by scripts/test.sh and scripts/demo.sh: installs whichever Debian
# package the project needs is missing (nothing if all are there).
# Expects log() and die() from the sourcing script.

readonly TOKENLEASE_PACKAGES=(build-essential cmake ninja-build pkg-config
  libabsl-dev libhiredis-dev libevent-dev libgtest-dev libgmock-dev libxml2-dev
  libbenchmark-dev redis-server clang-format clang-14 libclang-rt-14-dev)

install_missing_packages() {
  local missing=() p
  for p in "${TOKENLEASE_PACKAGES[@]}"; do
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
