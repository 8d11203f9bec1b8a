#!/usr/bin/env bash
# Runs every test of tokenlease: for each preset (default: release asan tsan)
# configure, build and ctest. Installs missing Debian packages first and
# starts a private redis-server on a free loopback port for tests that need
# one (they read TOKENLEASE_TEST_REDIS_PORT / TOKENLEASE_TEST_REDIS_SOCKET).
#
#   bash scripts/test.sh                # release, asan, tsan
#   bash scripts/test.sh release        # a subset, in the given order
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly KNOWN_PRESETS=(release debug asan tsan)
readonly JOBS=2

log() { printf '\n==== %s\n' "$*"; }
die() { printf 'test.sh: %s\n' "$*" >&2; exit 1; }

# shellcheck source=scripts/install_deps.sh
source scripts/install_deps.sh

# --- Redis -----------------------------------------------------------------

REDIS_PID=""
REDIS_DIR=""

stop_redis() {
  if [[ -n "$REDIS_PID" ]]; then
    kill "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
    REDIS_PID=""
  fi
  if [[ -n "$REDIS_DIR" ]]; then
    rm -rf "$REDIS_DIR"
    REDIS_DIR=""
  fi
}

port_in_use() {
  # A successful connect means something listens there.
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Starts redis-server on a free loopback port; exports
# TOKENLEASE_TEST_REDIS_PORT and TOKENLEASE_TEST_REDIS_SOCKET.
start_redis() {
  REDIS_DIR="$(mktemp -d "${TMPDIR:-/tmp}/tokenlease-redis.XXXXXX")"
  local attempt port i
  for attempt in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 30000))
    port_in_use "$port" && continue
    redis-server --port "$port" --bind 127.0.0.1 --protected-mode yes \
      --save '' --appendonly no --daemonize no \
      --unixsocket "$REDIS_DIR/redis.sock" --unixsocketperm 700 \
      --dir "$REDIS_DIR" --logfile "$REDIS_DIR/redis.log" &
    REDIS_PID=$!
    # Wait up to 10 s for it to answer.
    for ((i = 0; i < 100; i++)); do
      if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
        export TOKENLEASE_TEST_REDIS_PORT="$port"
        export TOKENLEASE_TEST_REDIS_SOCKET="$REDIS_DIR/redis.sock"
        echo "redis-server (pid $REDIS_PID) on 127.0.0.1:$port"
        return 0
      fi
      kill -0 "$REDIS_PID" 2>/dev/null || break  # it exited (port taken?)
      sleep 0.1
    done
    echo "redis-server did not start on port $port (attempt $attempt):" >&2
    tail -n 5 "$REDIS_DIR/redis.log" >&2 2>/dev/null || true
    kill "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
    REDIS_PID=""
  done
  die "could not start redis-server"
}

# --- Main --------------------------------------------------------------------

presets=("$@")
((${#presets[@]} > 0)) || presets=(release asan tsan)
for p in "${presets[@]}"; do
  [[ " ${KNOWN_PRESETS[*]} " == *" $p "* ]] \
    || die "unknown preset '$p' (known: ${KNOWN_PRESETS[*]})"
done

install_missing_packages

trap stop_redis EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
start_redis

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
