#!/bin/bash
# Bad clients and faults against esv-healthd: garbage, oversized headers,
# byte tricklers (of a request, of a body after whole headers, of a second
# request on a keep-alive connection), random bytes that never end a line,
# 300 idle connections, wrong methods and paths, then its supervisor
# killed under it; and health ports that are bad or taken.  Each bad
# client gets a 4xx or a close within a bound, while /healthz keeps
# answering 200 to a well-behaved client from the same esv-healthd process.
. "$(dirname "$0")/lib.sh"
esv_setup 170
HD=${ESV_HEALTHD:-$ESV_BIN_DIR/../healthd/esv-healthd}
[ -x "$HD" ] || skip "$HD is not built"
command -v curl >/dev/null || skip "no curl"
ABUSE=$ESV_TEST_DIR/http_abuse.py

# Started instead of esv-healthd, to tell whether one was started at all.
cat >"$T/hd-spy" <<EOF
#!/bin/sh
echo "\$*" >>"$T/hd-spawned"
exec "$HD" "\$@"
EOF
chmod +x "$T/hd-spy"

# no_health NAME WARNING: job NAME succeeded, said WARNING in its only
# warning line, and started no esv-healthd.
no_health()
{
	assert_eq "$SUP_RC" 0 "$1: exit status ($(cat "$SUP_ERR"))"
	assert_grep_F "$SUP_ERR" "$2" "$1: stderr"
	assert_eq "$(count_lines "$SUP_ERR" 'warning')" 1 \
	    "$1: warning lines ($(cat "$SUP_ERR"))"
	[ ! -e "$T/hd-spawned" ] ||
	    fail "$1: esv-healthd started: $(cat "$T/hd-spawned")"
}

note "a bad health port: the job runs without a health server"
ESV_HEALTHD=$T/hd-spy TORCHELASTIC_HEALTH_CHECK_PORT=abc \
    run_sup "$T/envport" --no-python -- true
no_health envport \
    'TORCHELASTIC_HEALTH_CHECK_PORT: not a number: abc: no health server'
ESV_HEALTHD=$T/hd-spy run_sup "$T/bigport" --health-port 70000 \
    --health-address 127.0.0.1 --no-python -- true
no_health bigport '--health-port: out of range 0..65535: 70000: no health server'
write_ini "$T/iniport" <<'EOF'
[job]
health_port = x
EOF
ESV_HEALTHD=$T/hd-spy run_sup "$T/iniport" --no-python -- true
no_health iniport "$T/iniport/job.ini:2: health_port: not a number: x: no health server"

note "a health port already taken: the job runs, esv-healthd says why"
"$PY" -c 'import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(60)' >"$T/taken" &
taker=$!
wait_for -t 5 test -s "$T/taken" || fail "no port taken"
taken=$(cat "$T/taken")
ESV_HEALTHD=$T/hd-spy run_sup "$T/taken-job" --health-port "$taken" \
    --health-address 127.0.0.1 --no-python -- sleep 1.5
assert_eq "$SUP_RC" 0 "port taken: exit status ($(cat "$SUP_ERR"))"
assert_file "$T/hd-spawned"
assert_grep "$SUP_ERR" \
    "^esv-healthd: .*listen 127\.0\.0\.1:$taken: Address already in use"
wait_for -t 5 eval '! pgrep -f "esv-healthd --listen .* $T/taken-job\$" >/dev/null' ||
    fail "port taken: esv-healthd outlived the job"
kill "$taker"
rm -f "$T/hd-spawned"

note "bad clients against a job's esv-healthd"
start_sup "$T/job" --health-port 0 --health-address 127.0.0.1 \
    --no-python -- sleep 100
JOB_PID=$SUP_PID
JOB_ERR=$SUP_ERR
wait_for -t 10 eval '[ -n "$(kv "$T/job/supervise/state" health_listen)" ]' ||
    fail "no health server: $(cat "$JOB_ERR")"
where=$(kv "$T/job/supervise/state" health_listen)
port=${where##*:}
url=http://$where
hd_pid() { pgrep -f "esv-healthd --listen .* $T/job\$"; }
HD_PID=$(hd_pid)
[ -n "$HD_PID" ] || fail "no esv-healthd process for $T/job"

# healthz_code: what /healthz answers a well-behaved client; its body in $T/hz.
healthz_code() { curl -s -m 2 -o "$T/hz" -w '%{http_code}' "$url/healthz"; }
# healthy WHEN: a well-behaved client gets 200 at once, from the same server.
healthy()
{
	assert_eq "$(healthz_code)" 200 "/healthz $1 ($(cat "$T/hz" 2>/dev/null))"
	assert_eq "$(hd_pid)" "$HD_PID" "esv-healthd's pid $1"
}
# abuse CASE [ARGS...]: one of http_abuse.py's cases, which must pass.
abuse()
{
	"$PY" "$ABUSE" "$port" "$@" >"$T/$1.out" 2>&1 ||
	    fail "$1: $(cat "$T/$1.out")"
	cat "$T/$1.out" >&2
}
# The server answers 503 "starting" until the first group runs, and reads the
# job's state at most every 100 ms: wait until it has seen the group run.
ctl wait up -t 20 "$T/job" || fail "the job never came up: $(cat "$JOB_ERR")"
wait_for -t 10 eval '[ "$(healthz_code)" = 200 ]' ||
    fail "/healthz never said 200: $(cat "$T/hz")"
healthy "at first"

# The slow cases take the server's 15 s deadline (10 s when idle): all at once, and the
# quick cases meanwhile.
slow_cases="slow slowbody slownext unterminated idle keepidle"
for c in $slow_cases; do
	args=(20)
	[ "$c" = idle ] && args=(300 25 "$T/idle.ready")
	"$PY" "$ABUSE" "$port" "$c" "${args[@]}" >"$T/$c.out" 2>&1 &
	eval "pid_$c=\$!"
done
wait_for -t 5 test -e "$T/idle.ready" ||
    fail "idle connections: $(cat "$T/idle.out")"
for i in 1 2 3 4 5; do
	healthy "while 300 connections idle and four trickle ($i)"
	sleep 0.3
done
abuse garbage
healthy "after garbage"
abuse huge
healthy "after huge headers"
abuse methods
healthy "after wrong methods and paths"
for c in $slow_cases; do
	# Else the checks above did not run beside them.
	eval "esv_alive \$pid_$c" ||
	    fail "$c: ended before the checks: $(cat "$T/$c.out")"
done
for c in $slow_cases; do
	eval "wait \$pid_$c" || fail "$c: $(cat "$T/$c.out")"
	cat "$T/$c.out" >&2
done
healthy "after the slow clients were dropped"
assert_grep "$JOB_ERR" \
    '^esv-healthd: warning: HTTP: 127\.0\.0\.1:[0-9]+: no whole request within 15 s: dropped'
# A keep-alive connection idle between two requests is no bad client.
kport=$(sed -n 's/^port //p' "$T/keepidle.out")
[ -n "$kport" ] || fail "keepidle: no port: $(cat "$T/keepidle.out")"
assert_no_grep "$JOB_ERR" "HTTP: 127\.0\.0\.1:$kport:" "idle keep-alive logged"
esv_alive "$JOB_PID" || fail "the supervisor died: $(cat "$JOB_ERR")"

note "the supervisor killed: 503 naming it, then esv-healthd exits"
disown "$JOB_PID"	# its "Killed" is no news
kill -KILL "$JOB_PID"
t0=$(date +%s%3N)
wait_for -t 2 eval '[ "$(curl -s -m 1 -o "$T/hz" -w "%{http_code}" "$url/healthz")" = 503 ]' ||
    fail "/healthz not 503 2 s after the supervisor died: $(cat "$T/hz")"
t503=$(($(date +%s%3N) - t0))
assert_grep "$T/hz" '^unhealthy: .*supervisor'
wait_for -t 10 eval '! esv_alive "$HD_PID"' ||
    fail "esv-healthd still runs 10 s after its supervisor died"
tgone=$(($(date +%s%3N) - t0))
note "503 after ${t503} ms, esv-healthd gone after ${tgone} ms"
# It lingers to tell probers why: 3 s.
[ "$tgone" -ge 2000 ] || fail "esv-healthd exited after only ${tgone} ms"
[ -z "$(hd_pid)" ] || fail "a leftover esv-healthd: $(hd_pid)"
assert_grep "$JOB_ERR" '^esv-healthd: the supervisor went away'
exit 0
