#!/usr/bin/env bash
# Instructions a redis-server runs (valgrind callgrind, deterministic to
# about 0.05 %) to start, load SCRIPT, serve N EVALSHA calls of one smooth
# token bucket band (10/s, 1000 random keys, Redis TIME) and shut down.
# Run it with N = 0 and N > 0 for two builds of a script: the difference
# over N is the cost per call (docs/benchmarks.md, "Spec stamps").
#
#   bash bench/script_instructions.sh build/release/lua/acquire.lua 4000
set -euo pipefail
f=$1 n=$2
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
out=$(mktemp)
valgrind --tool=callgrind --callgrind-out-file=$out redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
vp=$!
for _ in $(seq 300); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.1; done
sha=$(redis-cli -p $port SCRIPT LOAD "$(cat $f)")
if ((n > 0)); then
redis-benchmark -p $port -n $n -r 1000 -c 1 -q EVALSHA $sha 1 "{b:__rand_int__}:b0" 1 -1 1 1 0 0 0 0 1 token_bucket 10 1000000 10 smooth aligned 0 0 0 >/dev/null
fi
redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true
wait $vp || true
grep -E '^(summary|totals):' $out | head -1
rm -f $out
