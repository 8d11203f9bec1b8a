#!/usr/bin/env bash
# The system calls of a deciding thread in steady state (issue 10's
# acceptance: in a hot-key run, no futex or other system call from a
# deciding thread).
#
# Runs `tokenlease demo` (its own private redis-server) in leased mode on
# one hot key, 1 instance x 1 load thread, --pacing=busy (the load thread
# never sleeps or yields, so any system call it makes is the library's; it
# holds a core for the run), offering far more than one thread can decide
# so that it never waits. After WARMUP_S seconds of steady state it attaches
# strace to that load thread alone (found by its name, tl-load-0, under
# /proc/<instance pid>/task/*/comm) for TRACE_S seconds and prints the
# thread's system call counts (strace -c). Builds nothing: build the
# tokenlease_cli target first.
#
#   bench/strace_decisions.sh [extra demo flags, e.g. --use_handle]
#
# Exit status: 0 if the thread made no system call while traced, 3 if it
# made some (the counts say which), 1 if it could not run (no strace, no
# binary, no load thread found, strace failed).
#   BUILD_DIR (default build/release) selects the build tree;
#   SECONDS_TOTAL (8), WARMUP_S (3), TRACE_S (3) the timing.
# shellcheck source=scripts/lib/bench_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/bench_common.sh"

if ! command -v strace >/dev/null 2>&1; then
  echo "error: strace not found; install it with: apt-get install strace" >&2
  exit 1
fi
bench_require_binary tools/tokenlease

seconds_total="${SECONDS_TOTAL:-8}"
warmup_s="${WARMUP_S:-3}"
trace_s="${TRACE_S:-3}"
thread_name="tl-load-0"

work="$(mktemp -d "${TMPDIR:-/tmp}/strace_decisions.XXXXXX")"
demo_pid=""
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  # Only the demo this script started (it stops its instances and its
  # redis-server on SIGTERM).
  if [[ -n "${demo_pid}" ]] && kill -0 "${demo_pid}" 2>/dev/null; then
    kill -TERM "${demo_pid}" 2>/dev/null || true
    wait "${demo_pid}" 2>/dev/null || true
  fi
  rm -rf "${work}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_load_average before
demo_flags=(--mode=leased --keys=hot --instances=1 --threads=1 --pacing=busy
  --offered=1e9 --sample_every=100000 --seconds="${seconds_total}"
  --outage=false --burst=10000 --live=false --csv= --chart= "$@")
echo "# ${bench_bin} demo ${demo_flags[*]}"
"${bench_bin}" demo "${demo_flags[@]}" >"${work}/demo.out" 2>&1 &
demo_pid=$!

# The load thread: a thread named tl-load-0 in a child of the demo (the
# instance; the other child is the redis-server).
tid=""
for _ in $(seq 1 300); do
  for child in $(pgrep -P "${demo_pid}" || true); do
    for comm in /proc/"${child}"/task/*/comm; do
      if [[ "$(cat "${comm}" 2>/dev/null)" == "${thread_name}" ]]; then
        tid="$(basename "$(dirname "${comm}")")"
        instance_pid="${child}"
      fi
    done
  done
  [[ -n "${tid}" ]] && break
  kill -0 "${demo_pid}" 2>/dev/null || break
  sleep 0.05
done
if [[ -z "${tid}" ]]; then
  echo "error: no thread named ${thread_name} appeared; the demo said:" >&2
  cat "${work}/demo.out" >&2
  exit 1
fi
echo "# load thread ${thread_name}: tid ${tid} of instance pid ${instance_pid}; threads of the instance:"
for comm in /proc/"${instance_pid}"/task/*/comm; do
  echo "#   $(basename "$(dirname "${comm}")") $(cat "${comm}" 2>/dev/null)"
done
echo "# waiting ${warmup_s} s for steady state, then tracing tid ${tid} for ${trace_s} s"
sleep "${warmup_s}"

# -p TID without -f: strace attaches to that thread only (with -f it would
# attach to every thread of the process). -c counts; SIGINT detaches and
# prints the table.
strace_rc=0
timeout -s INT "${trace_s}" strace -c -p "${tid}" -o "${work}/strace.txt" \
  2>"${work}/strace.err" || strace_rc=$?
wait "${demo_pid}" || true
demo_pid=""

echo "# the demo's summary (abridged):"
grep -E '^(offered|admitted|hot key|decision latency|lease stats|redis commands)' \
  "${work}/demo.out" | sed 's/^/#   /'
if ! grep -q "attached" "${work}/strace.err"; then
  echo "error: strace could not attach to tid ${tid} (exit ${strace_rc}):" >&2
  cat "${work}/strace.err" >&2
  exit 1
fi
echo "# system calls of tid ${tid} (${thread_name}) in ${trace_s} s of steady state (strace -c):"
# strace -c writes no table when there was no call.
calls=0
if [[ -s "${work}/strace.txt" ]]; then
  cat "${work}/strace.txt"
  calls="$(awk '$NF == "total" { print $4 }' "${work}/strace.txt")"
else
  echo "(none)"
fi
bench_load_average after
if [[ "${calls}" -eq 0 ]]; then
  echo "RESULT: the deciding thread made no system call while traced"
  exit 0
fi
echo "RESULT: the deciding thread made ${calls} system calls in ${trace_s} s (see the table)"
exit 3
