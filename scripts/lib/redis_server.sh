# shellcheck shell=bash
# Sourced by the bench scripts: a private redis-server on a random 127.0.0.1
# port, without persistence, in a temporary directory (with its redis.log).
# Only defines functions; the caller owns the traps, so its own cleanup can
# run next to this one:
#
#   source "${root}/scripts/lib/redis_server.sh"
#   trap redis_server_stop EXIT    # or a cleanup function that calls it
#   redis_server_start --prefix=tokenlease-bench || exit "$?"
#   ... --url="redis://127.0.0.1:${redis_server_port}" ...
#
# redis_server_start [--setsid] [--prefix=NAME]
#   Tries up to 5 random ports in 20000-49999 until one answers PING (5 s
#   each). Sets redis_server_port, redis_server_pid and redis_server_dir
#   (NAME.XXXXXX under TMPDIR; default NAME tokenlease-bench). --setsid runs
#   the server in its own session, out of reach of a Ctrl-C sent to the
#   caller's process group. Returns 1 if no server came up, 130 as soon as
#   redis_server_interrupted is non-empty: an INT/TERM trap that sets it
#   (instead of exiting at once) cannot leave a server whose pid is not yet
#   recorded. Call it in the script's own shell, not in $(...): the server
#   must be this shell's child to be waited for.
# redis_server_stop
#   Stops and reaps the server, removes the directory. Idempotent; safe
#   before or after a failed start.

redis_server_port=""
redis_server_pid=""
redis_server_dir=""

redis_server_start() {
  local prefix="tokenlease-bench" launcher=() arg i
  for arg in "$@"; do
    case "${arg}" in
      --setsid) launcher=(setsid) ;;
      --prefix=*) prefix="${arg#--prefix=}" ;;
      *) echo "redis_server_start: unknown argument ${arg}" >&2; return 2 ;;
    esac
  done
  redis_server_dir="$(mktemp -d "${TMPDIR:-/tmp}/${prefix}.XXXXXX")" || return 1
  for _ in 1 2 3 4 5; do
    redis_server_port=$((20000 + RANDOM % 30000))
    # With --setsid: setsid does not fork here (a background job of a shell
    # without job control is no process group leader), so $! is
    # redis-server's pid.
    "${launcher[@]}" redis-server --port "${redis_server_port}" \
      --bind 127.0.0.1 --save '' --appendonly no --dir "${redis_server_dir}" \
      --logfile "${redis_server_dir}/redis.log" &
    redis_server_pid=$!
    for ((i = 0; i < 100; i++)); do
      [[ -z "${redis_server_interrupted:-}" ]] || return 130
      if redis-cli -p "${redis_server_port}" ping 2>/dev/null | grep -q PONG; then
        return 0
      fi
      kill -0 "${redis_server_pid}" 2>/dev/null || break
      sleep 0.05
    done
    kill "${redis_server_pid}" 2>/dev/null || true
    wait "${redis_server_pid}" 2>/dev/null || true
    redis_server_pid=""
  done
  [[ -z "${redis_server_interrupted:-}" ]] || return 130
  echo "could not start redis-server" >&2
  return 1
}

redis_server_stop() {
  if [[ -n "${redis_server_pid}" ]]; then
    kill "${redis_server_pid}" 2>/dev/null || true
    wait "${redis_server_pid}" 2>/dev/null || true
    redis_server_pid=""
  fi
  if [[ -n "${redis_server_dir}" ]]; then
    rm -rf "${redis_server_dir}"
    redis_server_dir=""
  fi
}
