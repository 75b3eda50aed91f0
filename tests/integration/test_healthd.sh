#!/bin/bash
# esv-healthd under esv-supervise: /healthz healthy while a worker arms
# timers and unhealthy once it stops (short timeout), /status the same
# object as `esv-ctl status --json` but for the paths, /metrics valid
# Prometheus text with the job's counts, healthy in the exit barrier
# although nothing progresses, and a killed server replaced.
. "$(dirname "$0")/lib.sh"
esv_setup 150
HD=${ESV_HEALTHD:-$ESV_BIN_DIR/../healthd/esv-healthd}
[ -x "$HD" ] || skip "$HD is not built"
command -v curl >/dev/null || skip "no curl"

# health_url JOBDIR: wait until the job's esv-healthd listens; print its URL.
health_url()
{
	local where job=$1
	wait_for -t 10 eval '[ -n "$(kv "$job/supervise/state" health_listen)" ]' ||
	    fail "no health server for $job: $(cat "$job.err")"
	where=$(kv "$job/supervise/state" health_listen)
	echo "http://$where"
}
# get URL PATH: the body on stdout, "CODE" in $T/code.
get()
{
	curl -s -m 5 -o "$T/body" -w '%{http_code}' "$1$2" >"$T/code"
	cat "$T/body"
}
code() { cat "$T/code"; }

note "healthy while a worker arms timers, unhealthy 1 s after it stops"
plan=""
for _ in 1 2 3 4 5 6 7 8; do plan+="arm:s:10:9;release:s;sleep:0.25;"; done
plan+="sleep:4"
REC=$T/rec.prog W_PLAN=$plan start_sup "$T/prog" --file-timer \
    --health-port 0 --health-address 127.0.0.1 --health-timeout 1s \
    --python "$PY" -- "$WORKERS/wd_worker.py"
url=$(health_url "$T/prog")
# esv-healthd says 503 "starting" until it has read a state the supervisor
# wrote, and keeps what it read 100 ms: wait for its first 200.
wait_for -t 10 eval 'get "$url" /healthz >/dev/null; [ "$(code)" = 200 ]' ||
    fail "/healthz never said 200: $(code) $(cat "$T/body")"
# Asked after the worker's 1st, 4th and 7th arm: the last 1.5 s after the
# first, beyond the 1 s timeout, and 0.25 s before the next request.
for k in 1 4 7; do
	wait_for -t 10 eval '[ "$(count_lines "$T/rec.prog" "^arm")" -ge $k ]' ||
	    fail "the worker did not arm $k times: $(cat "$T/prog.err")"
	get "$url" /healthz >/dev/null
	assert_eq "$(code)" 200 "/healthz after arm $k ($(cat "$T/body"))"
done
wait_for -t 10 eval '[ "$(count_lines "$T/rec.prog" "^sleep:0.25 ")" = 8 ]' ||
    fail "the worker did not stop arming"
stopped=$(date +%s.%N)
wait_for -t 5 eval 'get "$url" /healthz >/dev/null; [ "$(code)" = 503 ]' ||
    fail "/healthz still $(code) 5 s after the last request: $(cat "$T/body")"
took=$("$PY" -c "import time; print(round(time.time() - $stopped, 2))")
note "unhealthy ${took} s after the last timer request (timeout 1 s)"
assert_grep "$T/body" 'no progress for [0-9.]+ s \(timeout 1 s\)'
get "$url" /metrics >"$T/prog.metrics"
"$PY" "$ESV_TEST_DIR/promparse.py" "$T/prog.metrics" esv_healthy=0 \
    'esv_group_state{state="running"}=1' ||
    fail "/metrics while unhealthy: $(cat "$T/prog.metrics")"
wait_sup -t 20; assert_eq $? 0 "timer job: exit status"

note "/status is esv-ctl status --json but for the paths; /metrics counts a failure restart"
# Worker 1 fails once (exit 3), then the group runs quietly.
cat >"$T/flaky.sh" <<'EOF'
#!/bin/sh
[ "$LOCAL_RANK" = 1 ] && [ "$TORCHELASTIC_RESTART_COUNT" = 0 ] && exit 3
exec sleep 30
EOF
chmod +x "$T/flaky.sh"
start_sup "$T/st" --health-port 0 --health-address 127.0.0.1 \
    --nproc-per-node 2 --max-restarts 2 --no-python -- "$T/flaky.sh"
url=$(health_url "$T/st")
wait_for -t 10 eval '[ "$(kv "$T/st/supervise/state" restart_count)" = 1 ] &&
    [ "$(kv "$T/st/workers/1/state" state)" = running ]' ||
    fail "no restart: $(cat "$T/st.err")"
# status_agrees: /status, once esv-healthd has read the files again (it
# keeps them 100 ms), is the restarted group, as esv-ctl shows it.
status_agrees()
{
	get "$url" /status >"$T/st.http"
	[ "$(code)" = 200 ] || { echo "/status: HTTP $(code)" >"$T/st.diff"; return 1; }
	ctl status --json "$T/st" >"$T/st.ctl"
	"$PY" - "$T/st.http" "$T/st.ctl" 2>"$T/st.diff" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
# /status leaves the paths out (esv-healthd --status-paths keeps them).
del b["jobdir"]
for k in ("attempt_dir", "watchdog_socket", "containment_why", "cgroup"):
    del b["job"][k]
for w in b["workers"]:
    del w["error_file"], w["cgroup"]
# A running worker's CPU time and memory are read live: not the same twice.
for w in a["workers"] + b["workers"]:
    for k in ("cpu_usec", "memory_current", "memory_peak"):
        w.pop(k, None)
if a != b:
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            print("%s:\n  http %s\n  ctl  %s" % (k, a.get(k), b.get(k)),
                  file=sys.stderr)
    sys.exit(1)
job, workers = a["job"], a["workers"]
assert job["restart_count"] == 1 and job["state"] == "running", job
assert [w["rank"] for w in workers] == [0, 1], workers
assert all(w["state"] == "running" and w["pid"] > 0 for w in workers)
EOF
}
wait_for -t 5 status_agrees || fail "/status and esv-ctl differ: $(cat "$T/st.diff")"
ctl status "$T/st" >"$T/st.human"
assert_grep_F "$T/st.human" "health $url/healthz" "esv-ctl status"
get "$url" /metrics >"$T/st.metrics"
assert_eq "$(code)" 200 "/metrics"
"$PY" "$ESV_TEST_DIR/promparse.py" "$T/st.metrics" esv_restarts_total=1 \
    'esv_worker_failures_total{kind="exit"}=1' \
    'esv_worker_failures_total{kind="signal"}=0' \
    'esv_workers{state="running"}=2' esv_group_starts_total=2 \
    esv_world_size=2 esv_supervisor_up=1 esv_healthy=1 ||
    fail "/metrics: $(cat "$T/st.metrics")"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/st.metrics" >"$T/promtool.out" 2>&1 ||
	    fail "promtool: $(cat "$T/promtool.out")"
fi
# Probers and scrapers keep their connection: the second request reuses it.
conns=$(curl -s -m 5 -o /dev/null -o /dev/null -w '%{num_connects} ' \
    "$url/healthz" "$url/metrics")
assert_eq "$conns" "1 0 " "new connections for two requests (keep-alive)"
grep -q 'Content-Type: text/plain; version=0.0.4' \
    <(curl -s -m 5 -D - -o /dev/null "$url/metrics" | tr -d '\r') ||
    fail "/metrics: not Prometheus' content type"

note "a killed esv-healthd is replaced"
hd_pid=$(pgrep -f "esv-healthd --listen .* $T/st\$")
[ -n "$hd_pid" ] || fail "no esv-healthd process for $T/st"
kill -KILL "$hd_pid"
wait_for -t 10 eval 'p=$(pgrep -f "esv-healthd --listen .* $T/st\$"); [ -n "$p" ] && [ "$p" != "$hd_pid" ]' ||
    fail "esv-healthd not restarted: $(cat "$T/st.err")"
url=$(health_url "$T/st")
get "$url" /healthz >/dev/null
assert_eq "$(code)" 200 "/healthz of the new server"
assert_grep "$T/st/events.jsonl" '"healthd.restart"'
stop_sup
wait_for -t 5 eval '! pgrep -f "esv-healthd --listen .* $T/st\$" >/dev/null' ||
    fail "esv-healthd outlived its supervisor's orderly exit"

note "failures by kind: killed by a signal, unable to start"
printf '#!/bin/sh\nkill -KILL $$\n' >"$T/suicide.sh"
chmod +x "$T/suicide.sh"
run_sup "$T/sig" --max-restarts 1 --no-python -- "$T/suicide.sh"
assert_eq "$(kv "$T/sig/supervise/state" worker_failures_signal)" 2 "signal failures"
assert_eq "$(kv "$T/sig/supervise/state" worker_failures_exit)" 0 "exit failures"
run_sup "$T/exec" --max-restarts 1 --no-python -- "$T/no-such-program"
assert_eq "$(kv "$T/exec/supervise/state" worker_failures_exec)" 2 "exec failures"
assert_eq "$(kv "$T/exec/supervise/state" worker_failures_exit)" 0 "exit failures"

note "healthy in the exit barrier, though nothing progresses"
. "$ESV_TEST_DIR/rdzv.sh"
start_rdzv
RZ_JOB=barrier RZ_RUN=1 node a --file-timer --health-port 0 \
    --health-address 127.0.0.1 --health-timeout 1s
RZ_JOB=barrier RZ_STOP_FLAG=$T/b.stop node b
url=$(health_url "$T/a")
wait_for -t 15 eval '[ "$(kv "$T/a/supervise/state" state)" = finishing ]' ||
    fail "a never reached the exit barrier: $(cat "$T/a.err")"
# a's watchdog, started before a's group, has had no request: past the
# group start + the 1 s timeout (+ 0.3 s), a's only progress is too old.
sleep_until "$(awk -v t="$(event_time "$T/a" group.start)" 'BEGIN { printf "%.3f", t + 1.3 }')"
get "$url" /healthz >/dev/null
assert_eq "$(code)" 200 "/healthz in the exit barrier ($(cat "$T/body"))"
assert_grep "$T/body" 'exit barrier'
touch "$T/b.stop"
wait_sup -t 30 "$NODE_PID_b"; assert_eq $? 0 "b's exit status"
wait_sup -t 10 "$NODE_PID_a"; assert_eq $? 0 "a's exit status"
exit 0
