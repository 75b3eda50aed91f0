#!/bin/bash
# The esv-rdzv that esv-supervise hosts for its job (the endpoint is an
# address of its host) belongs to that job (issue 34, defect 3): it
# serves that run id only, holds none of the supervisor's stdio (a Slurm
# step completes only when nobody holds its stdout), is not started anew
# while the supervisor stops (Slurm's cancel kills it with the rest), and
# goes with the supervisor, kill -9 included, leaving its port free.
. "$(dirname "$0")/lib.sh"
esv_setup 150
. "$ESV_TEST_DIR/rdzv.sh"
. "$ESV_TEST_DIR/netbed.sh"
bed_init
bed_host a
bed_host b
make_token "$T/token"
EP=$(bed_addr a):29400
CONF="token_file=$T/token,last_call_timeout=1s,join_timeout=30s"

# A worker that records its round and, as one saving a checkpoint, takes
# its time on SIGTERM (the supervisor's SIGKILL after 3 s ends it).
cat >"$T/worker.sh" <<'EOF'
#!/bin/sh
echo "node=$RZ_NODE world=$WORLD_SIZE" >>"$REC"
trap '' TERM
while [ ! -e "$RZ_STOP_FLAG" ]; do sleep 0.1; done
EOF
chmod +x "$T/worker.sh"

hnode()
{
	local name=$1 dir=$2 nnodes=$3
	shift 3
	REC=$T/rec RZ_NODE=$name RZ_STOP_FLAG=$T/stop bed_sup "$name" \
	    "$dir" --rdzv-backend esv --rdzv-endpoint "$EP" --rdzv-id job1 \
	    --nnodes "$nnodes" --rdzv-conf "$CONF" --shutdown-timeout 3s \
	    --no-python "$@" -- "$T/worker.sh"
}
# The hosted esv-rdzv's pid: the one with this test's token.
rdzv_pids()
{
	pgrep -f -- "esv-rdzv .*--token-file $T/token" || true
}

note "a hosts esv-rdzv for job1, b joins from another host"
hnode a "$T/a" 2:2
pid_a=$SUP_PID
wait_for grep -q 'hosting esv-rdzv' "$T/a.err" || fail "a does not host: $(cat "$T/a.err")"
hnode b "$T/b" 2:2
pid_b=$SUP_PID
wait_for -t 20 eval '[ "$(count_lines "$T/rec" "world=2")" -ge 2 ]' ||
    fail "no round of 2: a: $(cat "$T/a.err") b: $(cat "$T/b.err")"
rpid=$(rdzv_pids)
[ -n "$rpid" ] && [ "$(echo "$rpid" | wc -l)" = 1 ] || fail "esv-rdzv pids: '$rpid'"

note "it holds none of the supervisor's stdio"
assert_eq "$(readlink "/proc/$rpid/fd/0")" /dev/null "esv-rdzv's stdin"
for fd in 1 2; do
	f=$(readlink "/proc/$rpid/fd/$fd")
	assert_eq "$f" "$T/a/supervise/rdzv.log" "esv-rdzv's fd $fd"
done
assert_grep "$T/a/supervise/rdzv.log" 'job job1: round 0 complete'

note "it serves job1 only"
bed_run b "$PY" "$RZ_CLIENT" "$EP" join --token-file "$T/token" job2 x \
    --until ERR >"$T/other.out" 2>&1
assert_grep "$T/other.out" '^ERR job this server serves job job1 only, not job2$'

note "SIGTERM to the supervisor and its esv-rdzv at once (a cancel): nothing starts anew"
kill -TERM "$rpid" "$pid_a"
wait_sup -t 20 "$pid_a"
assert_eq "$(count_lines "$T/a.err" 'hosting esv-rdzv')" 1 "esv-rdzv started by a"
wait_for -t 5 eval '[ -z "$(rdzv_pids)" ]' || fail "esv-rdzv left: $(rdzv_pids)"
kill -KILL "$pid_b"
wait "$pid_b" 2>/dev/null

note "kill -9 of the supervisor: its esv-rdzv, even stopped, goes at once, and frees the port"
hnode a "$T/a2" 1:2
pid_a=$SUP_PID
wait_for -t 20 grep -q 'hosting esv-rdzv' "$T/a2.err" || fail "a2: $(cat "$T/a2.err")"
wait_for -t 20 eval '[ "$(count_lines "$T/rec" "world=1")" -ge 1 ]' ||
    fail "a2 alone: no round: $(cat "$T/a2.err")"
rpid=$(rdzv_pids)
[ -n "$rpid" ] || fail "no esv-rdzv for a2"
# Stopped, it would not act on the SIGTERM of its parent's death: the
# guardian kills it with the job.
kill -STOP "$rpid"
kill -KILL "$pid_a"
wait "$pid_a" 2>/dev/null
# "At once": well within the 10 s it lingered for, idle.
wait_for -t 5 eval '! esv_alive '"$rpid" || fail "esv-rdzv (pid $rpid) outlived its supervisor"
bed_run a "$PY" -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 29400))
s.listen()' "$(bed_addr a)" 2>"$T/bind.err" || fail "port 29400 still taken: $(cat "$T/bind.err")"

note "a job of nothing with its stdout and stderr a pipe: EOF when the supervisor exits"
bed_run a sh -c '"$@" 2>&1; date +%s%3N >"$T/exit_t"' sh "$SUP" \
    --rdzv-backend esv --rdzv-endpoint "$EP" --rdzv-id job3 --nnodes 1:1 \
    --rdzv-conf "$CONF" --no-python "$T/a3" -- /bin/true |
    { cat >"$T/pipe.out"; date +%s%3N >"$T/eof_t"; } &
wait_for -t 30 test -s "$T/exit_t" || fail "the job did not end: $(cat "$T/pipe.out")"
assert_grep "$T/pipe.out" 'hosting esv-rdzv'
# Nobody holds the pipe but the supervisor: EOF comes with its exit.
wait_for -t 2 test -s "$T/eof_t" || fail "the pipe is held after the supervisor's exit: $(rdzv_pids)"
note "EOF $(($(cat "$T/eof_t") - $(cat "$T/exit_t"))) ms after the supervisor's exit"
exit 0
