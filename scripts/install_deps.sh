# shellcheck shell=bash
# Sourced by scripts/test.sh and scripts/demo.sh: installs whichever Debian
# package the project needs is missing (nothing if all are there), and
# hiredis 1.x (ensure_hiredis).
# Expects log() and die() from the sourcing script.

# hiredis is not in this list: it must be 1.x with TLS (hiredis_ssl), which
# ensure_hiredis below finds, installs or builds.
readonly TOKENLEASE_PACKAGES=(build-essential cmake ninja-build pkg-config
  libabsl-dev libevent-dev libssl-dev libgtest-dev libgmock-dev libxml2-dev
  libbenchmark-dev redis-server clang-format clang-14 libclang-rt-14-dev
  dpkg-dev debian-archive-keyring)

install_missing_packages() {
  local missing=() p
  for p in "${TOKENLEASE_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null \
        | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  if ((${#missing[@]} > 0)); then
    install_packages "${missing[@]}"
  fi
  ensure_hiredis
}

install_packages() {
  local missing=("$@")
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

# hiredis >= 1.0 with hiredis_ssl (docs/design.md "hiredis 1.x"): the
# system's if it has one; else the distribution's libhiredis-dev if that is
# 1.x (Debian 13, Ubuntu 24.04); else Debian 13's hiredis built into a
# private prefix by scripts/build_hiredis.sh (Debian 12, whose own is
# 0.14.1), once per machine. CMake finds either (cmake/hiredis.cmake).
ensure_hiredis() {
  if pkg-config --exists 'hiredis >= 1.0' 'hiredis_ssl >= 1.0'; then
    return 0
  fi
  local candidate
  candidate="$(apt-cache policy libhiredis-dev 2>/dev/null \
    | awk '/Candidate:/ {print $2}')"
  if [[ -n "$candidate" && "$candidate" != "(none)" ]] \
      && dpkg --compare-versions "$candidate" ge 1.0; then
    log "installing libhiredis-dev $candidate"
    local sudo=()
    ((EUID == 0)) || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends libhiredis-dev
    pkg-config --exists 'hiredis >= 1.0' 'hiredis_ssl >= 1.0' && return 0
  fi
  bash "$(dirname "${BASH_SOURCE[0]}")/build_hiredis.sh" \
    || die "cannot build hiredis 1.x (scripts/build_hiredis.sh)"
}
