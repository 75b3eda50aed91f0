#!/usr/bin/env bash
# bash bench/soak.sh — everything at once, for a while: one job of
# SOAK_WORKERS (256) workers printing a line every 100 ms each into log
# files (--redirects 3), with file timers and the health server; a million
# timers armed in its esv-watchdogd; wrk on /healthz and /metrics at about
# SOAK_RPS (20000) requests a second; and an esv-rdzv forming SOAK_NODES
# (64)-node rounds of other jobs one after the other (bench/rdzv_bench.c).
# For SOAK_SECS (600) seconds, then SIGTERM.
#
# Prints the resident set and open fds of esv-supervise, esv-watchdogd,
# esv-healthd and esv-rdzv every SOAK_SAMPLE_SECS (30), the verdict on
# each (flat: the last sample is within 10 % + 1 MiB of the one a minute
# in, fds equal), the requests wrk got answered, the rounds formed, and
# every worker's lines: printed (the worker's own count) against found in
# its log file.  Exit 0 only if all held.
set -euo pipefail
. "$(dirname "$0")/common.sh" soak

secs=${SOAK_SECS:-600}
nworkers=${SOAK_WORKERS:-256}
nodes=${SOAK_NODES:-64}
rps=${SOAK_RPS:-20000}
timers=${SOAK_TIMERS:-1000000}
sample=${SOAK_SAMPLE_SECS:-30}
build=$root/${ESV_BUILD:-build}
bin=$build/supervisor
ninja -C "$build" >/dev/null
cc_bench "$bench/soak_worker.c" "$work/soak_worker"
gcc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$root/watchdog" \
    -o "$work/timer_load" "$bench/timer_load.c" \
    $(pkg-config --cflags --libs libbsd-overlay)
gcc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$root/lib" \
    -o "$work/rdzv_bench" "$bench/rdzv_bench.c" "$root/lib/rdzvproto.c" \
    $(pkg-config --cflags --libs libbsd-overlay libmd)
free_port() { "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ulimit -n 65536 2>/dev/null || true

pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -n "${sup:-}" ] && kill "$sup" 2>/dev/null || true
	wait 2>/dev/null || true
}
trap 'cleanup; rm -rf "$work"' EXIT

# The rendezvous server, with other jobs' 64-node rounds one after another.
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token"
chmod 600 "$work/token"
rport=$(free_port)
# Every bench node is on 127.0.0.1 and all connect at once: room for them
# in the pool of connections yet to authenticate.
"$bin/../rendezvous/esv-rdzv" --listen "127.0.0.1:$rport" \
    --token-file "$work/token" --max-unauth $((nodes + 16)) \
    --max-unauth-per-addr $((nodes + 16)) 2>"$work/rdzv.err" &
rdzv=$!
pids+=("$rdzv")
(
	i=0
	while :; do
		"$work/rdzv_bench" --endpoint "127.0.0.1:$rport" \
		    --token-file "$work/token" --nodes "$nodes" \
		    --run-id "soak$i" >>"$work/rounds" 2>>"$work/rounds.err" ||
		    echo "round $i failed" >>"$work/rounds.err"
		i=$((i + 1))
	done
) &
pids+=($!)

# The job: one node, its own run id on the same server.
mkdir -p "$work/job" "$work/counts"
SOAK_DIR=$work/counts "$bin/esv-supervise" --no-python \
    --nproc-per-node "$nworkers" --max-restarts 0 --redirects 3 \
    --log-dir "$work/logs" --file-timer --health-port 0 \
    --rdzv-backend esv --rdzv-endpoint "127.0.0.1:$rport" --rdzv-id soakjob \
    --nnodes 1 --rdzv-conf "token_file=$work/token" \
    "$work/job" -- "$work/soak_worker" 2>"$work/sup.err" &
sup=$!
for _ in $(seq 600); do
	[ "$(sed -n 's/^state=//p' "$work/job/supervise/state" 2>/dev/null)" = running ] &&
	    grep -q '^health_listen=.' "$work/job/supervise/state" && break
	sleep 0.1
done
listen=$(sed -n 's/^health_listen=//p' "$work/job/supervise/state")
[ -n "$listen" ] || { echo "soak: the job did not start" >&2; tail "$work/sup.err" >&2; exit 1; }
comp_pid() { "$python" - "$sup" "$1" <<'PY'
import sys
sup, name = int(sys.argv[1]), sys.argv[2]
for c in open("/proc/%d/task/%d/children" % (sup, sup)).read().split():
    if open("/proc/%s/comm" % c).read().strip() == name:
        print(c); break
PY
}
wd=$(comp_pid esv-watchdogd)
hd=$(comp_pid esv-healthd)
worker0=$(sed -n 's/^pids=\([0-9]*\).*/\1/p' "$work/job/supervise/state")
fifo=$(sed -n 's/^timer_fifo=//p' "$work/job/supervise/state")
[ -n "$fifo" ] || fifo=$work/job/supervise/timer.fifo
echo "soak: $nworkers workers, health at $listen, rdzv at 127.0.0.1:$rport, $(nproc) CPUs, ${secs} s"

# A million timers for worker 0, an hour away: they sit in the watchdog.
"$work/timer_load" mass "$fifo" "$timers" "$worker0" >"$work/timers.out" 2>&1 ||
    echo "soak: arming $timers timers failed: $(tail -2 "$work/timers.out")" >&2

# wrk at about rps: each connection waits between its requests.
conns=32
cat >"$work/pace.lua" <<LUA
local paths = {"/healthz", "/metrics"}
local i = 0
request = function()
	i = i + 1
	return wrk.format("GET", paths[i % 2 + 1])
end
delay = function() return $((conns * 1000 / rps)) end
LUA
wrk -t1 -c"$conns" -d"${secs}s" -s "$work/pace.lua" "http://$listen/" \
    >"$work/wrk.out" 2>&1 &
wrkpid=$!
pids+=("$wrkpid")

sample_one() {	# NAME PID: "rss_kib fds"
	local rss fds
	rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$2/status" 2>/dev/null)
	fds=$(ls "/proc/$2/fd" 2>/dev/null | wc -l)
	echo "${rss:-0} $fds"
}
names=(esv-supervise esv-watchdogd esv-healthd esv-rdzv)
procs=("$sup" "$wd" "$hd" "$rdzv")
printf '%6s' "t(s)"; for n in "${names[@]}"; do printf ' %22s' "$n rss/fds"; done; echo
: >"$work/samples"
start=$(date +%s)
while :; do
	t=$(($(date +%s) - start))
	line="$t"
	printf '%6d' "$t"
	for i in "${!names[@]}"; do
		read -r rss fds < <(sample_one "${names[$i]}" "${procs[$i]}")
		printf ' %15s KiB/%4s' "$rss" "$fds"
		line="$line $rss $fds"
	done
	echo
	echo "$line" >>"$work/samples"
	[ "$t" -ge "$secs" ] && break
	sleep "$sample"
done
wait "$wrkpid" || true
kill "$sup"
wait "$sup" || true
sup=

tail -1 "$work/timers.out"
SOAK_NODES=$nodes "$python" - "$work" "$nworkers" "$secs" <<'PY'
import glob, os, re, sys
work, n, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ok = True
rows = [list(map(int, l.split())) for l in open(work + "/samples")]
# Under load: the last sample taken while wrk and the rounds still ran.
loaded = rows[:-1] if len(rows) > 2 else rows
base = next((r for r in loaded if r[0] >= 60), loaded[0])
last = loaded[-1]
half = len(loaded) // 2
nodes = int(os.environ.get("SOAK_NODES", "64"))
# Connections come and go with the load: a sample may catch every client
# of a round (esv-rdzv) or every wrk connection (esv-healthd) open, or none.
slack = {"esv-healthd": 32, "esv-rdzv": nodes}
for i, name in enumerate(["esv-supervise", "esv-watchdogd", "esv-healthd", "esv-rdzv"]):
    r0, r1 = base[1 + 2 * i], last[1 + 2 * i]
    # The peak of the second half against the first's lowest count plus
    # what the load may hold open at once; and the count at the end.
    f0 = min(r[2 + 2 * i] for r in loaded[:max(half, 1)])
    f1 = max(r[2 + 2 * i] for r in loaded[half:])
    fend = rows[-1][2 + 2 * i]
    flat = r1 <= r0 * 1.1 + 1024 and f1 <= f0 + slack.get(name, 0)
    ok &= flat
    print("soak: %-14s rss %7d -> %7d KiB, fds %4d -> peak %4d, %4d at the end: %s" % (
        name, r0, r1, f0, f1, fend, "flat" if flat else "GROWING"))
wrk = open(work + "/wrk.out").read()
m = re.search(r"(\d+) requests in", wrk)
errs = re.search(r"Non-2xx or 3xx responses: (\d+)", wrk)
print("soak: wrk: %s requests (%.0f/s), non-2xx %s" % (
    m.group(1) if m else "?", int(m.group(1)) / secs if m else 0,
    errs.group(1) if errs else 0))
rounds = [l for l in open(work + "/rounds") if "ok=1" in l] if os.path.exists(work + "/rounds") else []
failed = open(work + "/rounds.err").read().count("failed") if os.path.exists(work + "/rounds.err") else 0
print("soak: esv-rdzv: %d rounds of %s nodes formed, %d failed" % (
    len(rounds), os.environ.get("SOAK_NODES", "64"), failed))
lost = 0
missing = 0
for r in range(n):
    c = work + "/counts/count.%d" % r
    if not os.path.exists(c):
        missing += 1
        continue
    printed = int(open(c).read())
    logs = glob.glob(work + "/logs/*/attempt_0/%d/stdout.log" % r)
    found = sum(1 for f in logs for l in open(f, errors="replace") if l.startswith("rank %d line " % r))
    lost += printed - found
print("soak: log lines: %d workers, %d without a count, %d lines lost" % (n, missing, lost))
ok &= lost == 0 and missing == 0
sys.exit(0 if ok else 1)
PY
