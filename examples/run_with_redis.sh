#!/usr/bin/env bash
# Runs an example against a private redis-server, for ctest:
#
#   run_with_redis.sh <example> [args...]
#
# Starts redis-server on a free 127.0.0.1 port (no persistence, in a
# temporary directory), waits for it to answer PING, runs
# `<example> redis://127.0.0.1:<port> [args...]` (the URL is also in
# $TOKENLEASE_REDIS_URL), stops the server whatever happens, and exits with
# the example's status.
set -uo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 <example> [args...]" >&2
  exit 2
fi
example=$1
shift

if ! command -v redis-server >/dev/null; then
  echo "redis-server not found (Debian: apt-get install redis-server)" >&2
  exit 1
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/tokenlease-example.XXXXXX")
server_pid=
stop_server() {
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
    server_pid=
  fi
}
cleanup() {
  stop_server
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A port nothing listens on now: the kernel picks one for a socket bound to
# port 0.
free_port() {
  python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# True once the server at port $1 answers PING.
answers_ping() {
  [[ $(redis-cli -h 127.0.0.1 -p "$1" PING 2>/dev/null) == PONG ]]
}

# Another process may take the port between free_port and redis-server's
# bind: then the server exits, and we try another port.
port=
for attempt in 1 2 3 4 5; do
  candidate=$(free_port) || exit 1
  redis-server --port "$candidate" --bind 127.0.0.1 --save '' \
    --appendonly no --dir "$dir" --logfile "$dir/redis.log" &
  server_pid=$!
  # Up to 5 s for the first PONG.
  for _ in $(seq 100); do
    if answers_ping "$candidate"; then
      port=$candidate
      break
    fi
    kill -0 "$server_pid" 2>/dev/null || break  # exited: port taken?
    sleep 0.05
  done
  [[ -n $port ]] && break
  echo "redis-server did not start on port $candidate (attempt $attempt):" >&2
  tail -n 5 "$dir/redis.log" >&2 2>/dev/null
  stop_server
done
if [[ -z $port ]]; then
  echo "could not start redis-server" >&2
  exit 1
fi

export TOKENLEASE_REDIS_URL="redis://127.0.0.1:$port"
"$example" "$TOKENLEASE_REDIS_URL" "$@"
status=$?
exit "$status"
