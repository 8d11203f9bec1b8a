#!/usr/bin/env bash
# Runs every test of tokenlease: for each preset (default: release asan tsan
# fuzz) configure, build and ctest (fuzz: the library and the libFuzzer
# targets only, with clang, each fuzzer run for 30 s). Installs missing Debian packages first
# (redis-server among them). Tests that need Redis start their own private
# redis-server on a free 127.0.0.1 port (tests/testing/redis_test.h) and
# stop it when they end, also when they fail or crash.
#
# The Valkey matrix: after the release preset's ctest, if valkey-server is
# on PATH, the Redis tests of tests/ (Lua scripts, direct, leased, faults,
# Cluster, Sentinel, client, metrics, the Lua protocol document) run once
# more against the same build with every private server a valkey-server
# (TOKENLEASE_REDIS_SERVER=valkey-server, support/redis_server.cc); about
# 60-80 s on 2 cores. Without valkey-server it is skipped with one line.
#
#   bash scripts/test.sh                # release, asan, tsan, fuzz
#   bash scripts/test.sh release        # a subset, in the given order
#   TOKENLEASE_VALKEY=0 bash scripts/test.sh   # never the Valkey matrix
#   TOKENLEASE_VALKEY=1 bash scripts/test.sh   # the Valkey matrix or fail
#                                              # (default: auto, if installed)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly KNOWN_PRESETS=(release debug asan tsan fuzz)
readonly JOBS=2

log() { printf '\n==== %s\n' "$*"; }
die() { printf 'test.sh: %s\n' "$*" >&2; exit 1; }

# --- The Valkey matrix -------------------------------------------------------

readonly VALKEY_INSTALL="Debian 13: apt-get install valkey-server; Debian 12: \
from bookworm-backports (docs/operations.md, \"Valkey\")"
# The release build's tests labelled redis, less those of tools/ (cli.,
# demo.), examples/ (example.) and support/ (support.): they drive the same
# launcher and scripts as tests/. TLS (tls_test.cc) is in.
readonly VALKEY_EXCLUDE='^(cli|demo|example|support)\.'

# Whether to run the Valkey matrix (TOKENLEASE_VALKEY: auto, 1 or 0); says
# why not in one line.
want_valkey() {
  case "${TOKENLEASE_VALKEY:-auto}" in
    0 | no | off)
      printf 'test.sh: Valkey matrix skipped (TOKENLEASE_VALKEY=%s)\n' \
        "$TOKENLEASE_VALKEY"
      return 1 ;;
    1 | yes | on)
      command -v valkey-server >/dev/null \
        || die "TOKENLEASE_VALKEY=$TOKENLEASE_VALKEY but valkey-server is not on PATH ($VALKEY_INSTALL)"
      return 0 ;;
    auto)
      command -v valkey-server >/dev/null && return 0
      printf 'test.sh: Valkey matrix skipped: valkey-server is not installed (%s)\n' \
        "$VALKEY_INSTALL"
      return 1 ;;
    *) die "TOKENLEASE_VALKEY must be auto, 1 or 0, not '$TOKENLEASE_VALKEY'" ;;
  esac
}

run_valkey_matrix() {
  want_valkey || return 0
  log "Valkey matrix: the release build's Redis tests against $(valkey-server --version | cut -d' ' -f1-3)"
  local start=$SECONDS
  TOKENLEASE_REDIS_SERVER=valkey-server ctest --preset release -j"$JOBS" \
    --timeout 600 -L redis -E "$VALKEY_EXCLUDE"
  log "Valkey matrix: passed in $((SECONDS - start)) s"
}

# shellcheck source=scripts/install_deps.sh
source scripts/install_deps.sh

# --- Main --------------------------------------------------------------------

presets=("$@")
((${#presets[@]} > 0)) || presets=(release asan tsan fuzz)
for p in "${presets[@]}"; do
  [[ " ${KNOWN_PRESETS[*]} " == *" $p "* ]] \
    || die "unknown preset '$p' (known: ${KNOWN_PRESETS[*]})"
done

# TOKENLEASE_VALKEY=1 fails now, not after the release build, if the
# matrix cannot run.
if [[ "${TOKENLEASE_VALKEY:-auto}" =~ ^(1|yes|on)$ ]]; then
  [[ " ${presets[*]} " == *" release "* ]] \
    || die "TOKENLEASE_VALKEY=$TOKENLEASE_VALKEY needs the release preset (the Valkey matrix runs its build)"
  want_valkey
fi

install_missing_packages

total_start=$SECONDS
for p in "${presets[@]}"; do
  log "preset $p: configure, build, test"
  start=$SECONDS
  cmake --preset "$p"
  cmake --build --preset "$p" -j"$JOBS"
  ctest_cmd=(ctest --preset "$p" -j"$JOBS" --timeout 600)
  # GCC 12's ThreadSanitizer cannot map its shadow memory when the kernel
  # uses more than 28 bits of mmap randomness; run without ASLR then.
  if [[ "$p" == tsan ]] && [[ -r /proc/sys/vm/mmap_rnd_bits ]] \
      && (($(cat /proc/sys/vm/mmap_rnd_bits) > 28)); then
    ctest_cmd=(setarch "$(uname -m)" -R "${ctest_cmd[@]}")
  fi
  "${ctest_cmd[@]}"
  if [[ "$p" == release ]]; then run_valkey_matrix; fi
  log "preset $p: passed in $((SECONDS - start)) s"
done
log "all presets passed (${presets[*]}) in $((SECONDS - total_start)) s"
