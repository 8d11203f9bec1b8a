#!/usr/bin/env bash
# Instructions a redis-server runs (valgrind callgrind, deterministic to
# about 0.05 %) to start, load SCRIPT, serve N EVALSHA calls of one smooth
# token bucket band (10/s, 1000 random keys, Redis TIME) and shut down.
# Run it with N = 0 and N > 0 for two builds of a script: the difference
# over N is the cost per call (docs/benchmarks.md,
# "Measurements behind design choices").
#
#   bash bench/script_instructions.sh build/release/lua/acquire.lua 4000
#
# With ITEMS, SCRIPT is batch.lua and each call carries ITEMS charges of 1
# token (100/s, burst 100) on random keys of 10^9 (nearly all without a
# state: a long tail's cold keys); ITEMS = 1 and 64 give the cost per
# item and per call:
#
#   bash bench/script_instructions.sh build/release/lua/batch.lua 100 64
#
# The server is started and stopped by support/with_redis (the one
# launcher, support/redis_server.h) with valgrind as its wrapper: no
# program of ours runs here that could start it, and the server itself is
# what is measured. BUILD_DIR (default build/release) selects the build
# tree that holds with_redis.
# shellcheck source=scripts/lib/bench_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/bench_common.sh"
if [[ $# -ne 2 && $# -ne 3 ]]; then
  echo "usage: $0 SCRIPT.lua N [ITEMS]" >&2
  exit 2
fi
bench_require_binary support/with_redis
f=$1 n=$2 items=${3:-0}
out=$(mktemp)
trap 'rm -f "${out}"' EXIT
# Under valgrind the server starts and stops tens of times slower; it must
# end by SIGTERM (not SIGKILL) for callgrind to write its totals.
"${bench_bin}" --start_timeout=120s --stop_timeout=120s \
  --wrapper="valgrind --tool=callgrind --callgrind-out-file=${out}" -- \
  bash -c 'set -euo pipefail
    sha=$(redis-cli -p "${TOKENLEASE_REDIS_PORT}" SCRIPT LOAD "$(cat "$1")")
    if (($2 > 0 && $3 > 0)); then
      # redis-benchmark gives every __rand_int__ a number of its own.
      keys=() items=()
      for ((i = 0; i < $3; i++)); do
        keys+=("{b:__rand_int__}:b0"); items+=(charge 1 100)
      done
      redis-benchmark -p "${TOKENLEASE_REDIS_PORT}" -n "$2" -r 1000000000 \
        -c 1 -q EVALSHA "${sha}" "$3" "${keys[@]}" 1 -1 0 1 \
        token_bucket 100 1000000 100 smooth aligned 0 0 0 "$3" "${items[@]}" \
        >/dev/null
    elif (($2 > 0)); then
      redis-benchmark -p "${TOKENLEASE_REDIS_PORT}" -n "$2" -r 1000 -c 1 -q \
        EVALSHA "${sha}" 1 "{b:__rand_int__}:b0" 1 -1 1 1 0 0 0 0 1 \
        token_bucket 10 1000000 10 smooth aligned 0 0 0 >/dev/null
    fi' script_instructions "${f}" "${n}" "${items}" >/dev/null
grep -E '^(summary|totals):' "${out}" | head -1
