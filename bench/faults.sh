#!/usr/bin/env bash
# The fault loop of tests/faults, long: ITERATIONS (300) of a random fault
# each (kill -9 of every component, SIGSTOP, a full disk, few fds, workers
# that ignore SIGTERM, daemonize or stop themselves), with its seed printed
# for replay.  Usage: bench/faults.sh [ITERATIONS [SEED]]
set -euo pipefail
. "$(dirname "$0")/common.sh" faults
build=$root/${ESV_BUILD:-build}
ninja -C "$build" >/dev/null
args=(-n "${1:-300}" -v)
[ $# -ge 2 ] && args+=(-s "$2")
ESV_BIN_DIR=$build/supervisor "$python" "$root/tests/faults/faults.py" "${args[@]}"
