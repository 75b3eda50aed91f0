# Sourced by the test_torch_*.sh scripts: real PyTorch workers under
# esv-supervise.  Torch is Debian's python3-torch, importable only by
# /usr/bin/python3 (the python3 first on PATH is pyenv's and has no torch).
# The caller sets TEST_NAME first.
set -u

now_ms() {
	echo $(($(date +%s%N) / 1000000))
}
T_START=$(now_ms)

: "${TEST_NAME:?set TEST_NAME before sourcing common.sh}"
ESV_BIN_DIR=${ESV_BIN_DIR:-/work/main/build/supervisor}
TORCH_DIR=${ESV_TEST_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
TORCH_PY=/usr/bin/python3
SUP=$ESV_BIN_DIR/esv-supervise

[ -x "$SUP" ] || { echo "FAIL: $SUP is not executable"; exit 1; }
if ! "$TORCH_PY" -c 'import torch.distributed' >/dev/null 2>&1; then
	echo "SKIP: $TORCH_PY cannot import torch (install python3-torch)" >&2
	exit 77
fi

# gloo picks its interface from the hostname; loopback keeps it local
# whatever the host's network looks like.
export GLOO_SOCKET_IFNAME=lo

T=$(mktemp -d "/tmp/$TEST_NAME.XXXXXX")
BG_PIDS=()
cleanup() {
	local p
	for p in "${BG_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# A TCP port free on every local address right now.  Racy by nature, as
# torchrun's own choice; good enough for a test.
free_port() {
	"$TORCH_PY" -c 'import socket
s = socket.socket()
s.bind(("", 0))
print(s.getsockname()[1])'
}

# assert_workers_gone JOBDIR SCRIPT: no process recorded in workers/*/state
# and running SCRIPT lives on after the supervisor has exited.  Matching
# the command line keeps a recycled pid from failing the test.
assert_workers_gone() {
	local f pid
	for f in "$1"/workers/*/state; do
		[ -f "$f" ] || continue
		pid=$(sed -n 's/^pid=//p' "$f")
		[ -n "$pid" ] || continue
		if { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null |
		    grep -qF -- "$2"; then
			fail "$f: worker pid $pid still runs $2 after the supervisor exited"
		fi
	done
}

# show NAME FILE: a file's content for a failure message.
show() {
	printf '\n--- %s (%s):\n' "$1" "$2"
	cat "$2" 2>/dev/null
	printf '\n---'
}

finish() {
	local elapsed=$((($(now_ms) - T_START) / 1000))
	if [ "$failures" -ne 0 ]; then
		echo "$TEST_NAME: $failures failure(s) (${elapsed}s)"
		exit 1
	fi
	echo "$TEST_NAME: ok (${elapsed}s)"
	exit 0
}
