#!/usr/bin/env bash
# Starts a private redis-server on a free 127.0.0.1 port (no persistence),
# runs lease_harness against it, and stops the server (also on failure or
# interruption).
#
# Usage: bench/run_lease_harness.sh [lease_harness flags]
#   e.g. bench/run_lease_harness.sh --mode=leased --instances=4 --threads=2 \
#          --limit=10000 --seconds=30 --keys=hot
#        bench/run_lease_harness.sh --mode=local ... (the latency baseline)
#        bench/run_lease_harness.sh --mode=leased --keys=zipf --zipf_keys=100000
#        bench/run_lease_harness.sh --mode=direct --seconds=5
#   The live multi-instance demo (a line per window as it closes):
#        bench/run_lease_harness.sh --mode=leased --instances=4 --threads=2 \
#          --limit=10000 --seconds=20 --keys=hot --live --window_ms=500 \
#          --pacing=sleep
#   BUILD_DIR (default build/release) selects the build tree.
# Unless --csv is given, the per-window CSV goes to
# /tmp/lease_harness_<mode>_<keys>_<time>.csv. Exit code: the harness's
# (0 when the run completed, even if a bound was exceeded). Ctrl-C during the
# run: the harness stops its instances, prints the summary of what ran and
# exits 0; the server is stopped either way. redis-server runs in its own
# session so that Ctrl-C (sent to the whole foreground process group) does
# not shut it down under the harness's final lease returns and INFO probes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-build/release}"
[[ "${build_dir}" = /* ]] || build_dir="${root}/${build_dir}"
bin="${build_dir}/bench/lease_harness"
[[ -x "${bin}" ]] || { echo "error: ${bin} not found; build lease_harness" >&2; exit 1; }

mode="leased"
keys="hot"
has_csv=0
for a in "$@"; do
  case "${a}" in
    --mode=*) mode="${a#--mode=}" ;;
    --keys=*) keys="${a#--keys=}" ;;
    --csv=*) has_csv=1 ;;
  esac
done
extra=()
if [[ "${has_csv}" = 0 ]]; then
  extra+=("--csv=${TMPDIR:-/tmp}/lease_harness_${mode}_${keys}_$(date +%Y%m%d-%H%M%S).csv")
fi

# shellcheck source=scripts/lib/redis_server.sh
source "${root}/scripts/lib/redis_server.sh"
trap redis_server_stop EXIT
# Until the harness runs, SIGINT/SIGTERM only set a flag, checked once the
# server's pid is known (so an interrupt cannot leave a server behind).
trap 'redis_server_interrupted=1' INT TERM
redis_server_start --setsid --prefix=tokenlease-harness || exit "$?"
echo "# redis-server $(redis-server --version | grep -o 'v=[^ ]*') on 127.0.0.1:${redis_server_port} (pid ${redis_server_pid}); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
# The harness handles SIGINT itself (the trap above has a command, not '',
# which the harness would inherit as "ignored"); the shell waits for it.
"${bin}" --url="redis://127.0.0.1:${redis_server_port}" "${extra[@]}" "$@" || rc=$?
trap 'exit 130' INT TERM
echo "# load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "${rc}"
