#!/bin/bash
# What an operator changes between attempts: JOBDIR/env/ (an envdir) and
# job.ini's command and [env] take effect at the next start the operator
# asks for; what the rendezvous agreed on (nproc_per_node) is kept, with
# a line saying so; a job.ini that does not parse is refused with
# file:line and the job runs on, on the configuration it had.
. "$(dirname "$0")/lib.sh"
esv_setup 120

J=$T/job
mkdir -p "$J/env"
cat >"$T/w.sh" <<'W'
echo "args=$* A=${A-unset} B=${B-unset} C=${C-unset} HOME=${HOME-unset}"
while [ ! -e "$GO.$LOCAL_RANK" ]; do sleep 0.05; done
W
# ini ARGS NPROC [ENV LINES...]: job.ini running w.sh with ARGS.
ini()
{
	local args=$1 nproc=$2
	shift 2
	{
		printf '[job]\nentrypoint = bash\nargs = %s\nno_python = true\n' "$T/w.sh $args"
		printf 'nproc_per_node = %s\ntee = 1\n[env]\nGO = %s\n' "$nproc" "$T/go"
		printf '%s\n' "$@"
	} >"$J/job.ini"
}
ini v1 1 "A = 1"
echo 1 >"$J/env/B"
# s6-envdir's rules: an empty file unsets, the first line is the value,
# its trailing blanks go.
: >"$J/env/HOME"
start_sup "$J"
# line N: the worker's line in stdout.log once the Nth manual restart runs.
line()
{
	local d n=$1
	wait_for -t 15 eval '[ "$(kv "$J/supervise/state" manual_restarts)" = "$n" ] &&
	    [ "$(kv "$J/supervise/state" state)" = running ] &&
	    d=$(kv "$J/supervise/state" attempt_dir) && grep -q "^args=" "$d/0/stdout.log"' ||
	    fail "start $n did not run: $(cat "$SUP_ERR")"
	d=$(kv "$J/supervise/state" attempt_dir)
	cat "$d/0/stdout.log"
}
assert_eq "$(line 0)" "args=v1 A=1 B=1 C=unset HOME=unset" "first start"

note "edits reach the next manual restart"
printf '2  \t\nignored\n' >"$J/env/B"
echo 3 >"$J/env/C"
ini v2 2 "A = 2"
printf r >"$J/supervise/control"
assert_eq "$(line 1)" "args=v2 A=2 B=2 C=3 HOME=unset" "after the restart"
assert_grep "$SUP_ERR" 'job.ini: nproc_per_node: changed from 1 to 2: kept at 1' "the kept setting"
assert_eq "$(ls "$(kv "$J/supervise/state" attempt_dir)")" 0 "workers (nproc kept at 1)"
# workers/N/env/ is output: what esv set for the worker, not env/.
assert_eq "$(cat "$J/workers/0/env/A")" 2 "workers/0/env/A"
assert_no_file "$J/workers/0/env/B"

note "a broken job.ini: refused with file:line, the job runs on"
printf '[job]\nentrypoint = bash\nnproc_per_node = lots\n' >"$J/job.ini"
assert_rc 0 "$CTL" reload "$J"
wait_for -t 10 grep -q "reload (esv-ctl reload): $J/job.ini:3: nproc_per_node" "$SUP_ERR" ||
    fail "no refusal with file:line: $(cat "$SUP_ERR")"
assert_grep "$SUP_ERR" 'the running configuration is kept' "the refusal"
assert_eq "$(kv "$J/supervise/state" state)" running "state after the refused reload"
rm -f "$J/env/C"
printf r >"$J/supervise/control"
assert_eq "$(line 2)" "args=v2 A=2 B=2 C=unset HOME=unset" "after a restart on the broken file"
[ "$(grep -c "job.ini:3: nproc_per_node" "$SUP_ERR")" -ge 2 ] ||
    fail "the restart did not say it kept the configuration: $(cat "$SUP_ERR")"
grep -q '"error":"[^"]*job.ini:3: nproc_per_node.*"event":"config.reload"' "$J/events.jsonl" || fail "no config.reload event with the error"

note "SIGHUP reloads; the next start takes it"
ini v3 1
kill -HUP "$SUP_PID"
wait_for -t 10 grep -q 'reload (SIGHUP): the command or \[env\] changed' "$SUP_ERR" ||
    fail "no reload on SIGHUP: $(cat "$SUP_ERR")"
esv_alive "$SUP_PID" || fail "SIGHUP stopped the supervisor"
printf r >"$J/supervise/control"
assert_eq "$(line 3)" "args=v3 A=unset B=2 C=unset HOME=unset" "after SIGHUP and a restart"
touch "$T/go.0"
wait_sup -t 20
assert_eq "$?" 0 "exit status"
note ok
exit 0
