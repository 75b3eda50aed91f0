#!/bin/bash
# bash bench/store.sh — esv-stored against torch 1.13's own TCPStore server
# (is_master=True in a Python process; the server itself is C++), each
# driven by the same C load generator (bench/store_load.c, torch 1.13's
# dialect): set, get and add with 1, 16 and 256 clients, operations a
# second and the latency of the replies, beside a floor (store_floor.c: a
# server that answers without storing anything); the latency of a WAIT's
# wake-up; each server's RSS with 100,000 keys.
# See bench/README.md, "Agent store".  It measures and prints; it asserts
# nothing.
#
# Environment:
#   ESV_BUILD      meson build directory holding store/esv-stored
#                  (default: <repo>/build)
#   BENCH_CLIENTS  "1 16 256"
#   BENCH_OPS      operations per run, split among the clients (100000)
#   BENCH_VALUE    bytes of a value (16)
#   BENCH_KEEP     keep the servers' logs here
set -eu

. "$(dirname "$0")/common.sh" store-bench
: "${ESV_BUILD:=$root/build}"
: "${BENCH_CLIENTS:=1 16 256}"
: "${BENCH_OPS:=100000}"
: "${BENCH_VALUE:=16}"
STORED=$ESV_BUILD/store/esv-stored
[ -x "$STORED" ] || { echo "store.sh: $STORED is not built" >&2; exit 1; }
gcc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -pthread \
    -o "$work/store_load" "$bench/store_load.c"
gcc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror \
    -o "$work/store_floor" "$bench/store_floor.c"

pids=()
cleanup() { local p; for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; }
trap 'cleanup' EXIT

"$STORED" --listen 127.0.0.1:0 >"$work/esv.out" 2>"$work/esv.log" &
pids+=("$!")
esv_pid=$!
"$work/store_floor" >"$work/floor.out" 2>"$work/floor.log" &
pids+=("$!")
floor_pid=$!
cat >"$work/torch_store.py" <<'PY'
import datetime
import sys
import time
from torch.distributed import TCPStore
s = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
             timeout=datetime.timedelta(seconds=600))
print("listening 127.0.0.1:%d" % s.port, flush=True)
time.sleep(3600)
PY
"$python" "$work/torch_store.py" >"$work/torch.out" 2>"$work/torch.log" &
pids+=("$!")
torch_pid=$!
for f in esv torch floor; do
	for _ in $(seq 1 300); do
		grep -q '^listening' "$work/$f.out" 2>/dev/null && break
		sleep 0.1
	done
done
esv_port=$(sed -n 's/^listening 127.0.0.1:\([0-9]*\)$/\1/p' "$work/esv.out")
torch_port=$(sed -n 's/^listening 127.0.0.1:\([0-9]*\)$/\1/p' "$work/torch.out")
floor_port=$(sed -n 's/^listening 127.0.0.1:\([0-9]*\)$/\1/p' "$work/floor.out")
[ -n "$esv_port" ] && [ -n "$torch_port" ] ||
	{ echo "store.sh: a server did not start" >&2; exit 1; }

rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
cpu_ms() { awk '{ printf "%d", ($14 + $15) * 1000 / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"; }

echo "store: $(date -u '+%F %H:%M UTC'), $(nproc) CPUs, $BENCH_OPS operations a run, values of $BENCH_VALUE bytes"
echo "| op | clients | server | ops/s | p50 µs | p99 µs | max µs | server CPU ms |"
echo "|---|---|---|---|---|---|---|---|"
for op in set get add; do
	for n in $BENCH_CLIENTS; do
		per=$(( BENCH_OPS / n ))
		[ "$per" -ge 1 ] || per=1
		for s in esv torch floor; do
			eval "port=\$${s}_port pid=\$${s}_pid"
			c0=$(cpu_ms "$pid")
			line=$("$work/store_load" "$port" "$n" "$per" "$op" "$BENCH_VALUE")
			c1=$(cpu_ms "$pid")
			eval "$(echo "$line" | tr ' ' '\n' | sed 's/^/r_/')"
			echo "| $op | $n | $s | $r_ops_per_s | $r_p50_us | $r_p99_us | $r_max_us | $((c1 - c0)) |"
		done
	done
done
echo
echo "WAIT wake-up: each round every client WAITs on a fresh key, then one SET; from the SET to each wake-up"
echo "| waiters | server | rounds | p50 µs | p99 µs | max µs |"
echo "|---|---|---|---|---|---|"
for n in $BENCH_CLIENTS; do
	rounds=$(( 20000 / n ))
	[ "$rounds" -le 1000 ] || rounds=1000
	[ "$rounds" -ge 10 ] || rounds=10
	for s in esv torch; do
		eval "port=\$${s}_port"
		line=$("$work/store_load" "$port" "$n" "$rounds" wait)
		eval "$(echo "$line" | tr ' ' '\n' | sed 's/^/r_/')"
		echo "| $n | $s | $rounds | $r_p50_us | $r_p99_us | $r_max_us |"
	done
done
echo
echo "RSS after the runs above: esv-stored $(rss "$esv_pid") KiB, torch's server (the whole Python process) $(rss "$torch_pid") KiB"
for s in esv torch; do
	eval "port=\$${s}_port pid=\$${s}_pid"
	before=$(rss "$pid")
	"$work/store_load" "$port" 1 100000 fill "$BENCH_VALUE" >/dev/null
	echo "RSS with 100,000 more keys of $BENCH_VALUE-byte values: $s $(rss "$pid") KiB (was $before KiB)"
done
echo "(set: the latency is that of 100 SETs and the GETNUMKEYS after them, the protocol's SET having no reply)"
