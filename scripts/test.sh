#!/usr/bin/env bash
# Runs every test of tokenlease: for each preset (default: release asan tsan
# fuzz) configure, build and ctest (fuzz: the library and the libFuzzer
# targets only, with clang, each fuzzer run for 30 s). Installs missing Debian packages first
# (redis-server among them). Tests that need Redis start their own private
# redis-server on a free 127.0.0.1 port (tests/testing/redis_test.h) and
# stop it when they end, also when they fail or crash.
#
#   bash scripts/test.sh                # release, asan, tsan, fuzz
#   bash scripts/test.sh release        # a subset, in the given order
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly KNOWN_PRESETS=(release debug asan tsan fuzz)
readonly JOBS=2

log() { printf '\n==== %s\n' "$*"; }
die() { printf 'test.sh: %s\n' "$*" >&2; exit 1; }

# shellcheck source=scripts/install_deps.sh
source scripts/install_deps.sh

# --- Main --------------------------------------------------------------------

presets=("$@")
((${#presets[@]} > 0)) || presets=(release asan tsan fuzz)
for p in "${presets[@]}"; do
  [[ " ${KNOWN_PRESETS[*]} " == *" $p "* ]] \
    || die "unknown preset '$p' (known: ${KNOWN_PRESETS[*]})"
done

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
  log "preset $p: passed in $((SECONDS - start)) s"
done
log "all presets passed (${presets[*]}) in $((SECONDS - total_start)) s"
