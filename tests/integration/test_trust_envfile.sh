#!/bin/bash
# A file in JOBDIR/env/ that another user owns or that group or others can
# write would set LD_PRELOAD-class variables of root's workers: it is
# refused as job.ini is, with one line naming it, and no worker starts;
# at the first start (exit 100 before any other work) and at a later one
# (issue 34, defect 9; esv-control(5), env/; esv-supervise(8), Trust).
# The other user is a second, unprivileged one.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_trust_envfile.sh
. "$(dirname "$0")/lib.sh"
. "$ESV_TEST_DIR/trustlib.sh"
esv_setup 120
trust_user

# The worker tells what it was given, if it runs at all, and waits for
# $T/go when it is given GO.
RAN=$T/ran
WORKER=(/bin/sh -c 'echo "LD_PRELOAD=${LD_PRELOAD-unset} B=${B-unset}" >>"$0"
    [ -z "$GO" ] || while [ ! -e "$GO" ]; do sleep 0.05; done' "$RAN")
EVIL=$T/evil.so

# job DIR: root's JOBDIR with a root's env/.
job()
{
	mkdir -m 0755 "$1" "$1/env"
	rm -f "$RAN"
}

# refused ERE WHAT: exit 100, the one line of stderr matches, no worker.
refused()
{
	assert_eq "$SUP_RC" 100 "$2: exit status"
	[ -e "$RAN" ] && fail "$2: a worker ran: $(cat "$RAN")"
	assert_eq "$(grep -c . "$SUP_ERR")" 1 "$2: lines of stderr: $(cat "$SUP_ERR")"
	assert_grep "$SUP_ERR" "^esv-supervise: fatal: $1" "$2"
}

note "env/LD_PRELOAD of another user"
J=$T/theirs
job "$J"
echo "$EVIL" >"$J/env/LD_PRELOAD"
chown "$TU:" "$J/env/LD_PRELOAD"
run_sup -t 30 "$J" --no-python -- "${WORKER[@]}"
refused "$J/env/LD_PRELOAD: owner uid $TUID, mode 0644: owned by another user, so esv does not trust it; chown it to uid 0$" \
    "$TU's env/LD_PRELOAD"

note "env/LD_PRELOAD of root's, mode 0666"
J=$T/open
job "$J"
echo "$EVIL" >"$J/env/LD_PRELOAD"
chmod 0666 "$J/env/LD_PRELOAD"
run_sup -t 30 "$J" --no-python -- "${WORKER[@]}"
refused "$J/env/LD_PRELOAD: owner uid 0, mode 0666: writable by group or others, so esv does not trust it; chmod go-w it$" \
    "a mode 0666 env/LD_PRELOAD"

note "env/LD_PRELOAD a link to another user's file"
J=$T/linked
job "$J"
echo "$EVIL" >"$T/their.LD_PRELOAD"
chown "$TU:" "$T/their.LD_PRELOAD"
ln -s "$T/their.LD_PRELOAD" "$J/env/LD_PRELOAD"
run_sup -t 30 "$J" --no-python -- "${WORKER[@]}"
refused "$J/env/LD_PRELOAD: is a symbolic link: refusing to follow it; put the file itself there$" \
    "a link in env/"

note "env/ itself of another user"
J=$T/theirdir
mkdir -m 0755 "$J"
rm -f "$RAN"
mkdir -m 0755 "$J/env"
chown "$TU:" "$J/env"
run_sup -t 30 "$J" --no-python -- "${WORKER[@]}"
refused "$J/env: owner uid $TUID, mode 0755: owned by another user" "$TU's env/"

note "a trusted env/ is applied"
J=$T/ours
job "$J"
echo 1 >"$J/env/B"
run_sup -t 30 "$J" --no-python -- "${WORKER[@]}"
assert_eq "$SUP_RC" 0 "exit status with a trusted env/: $(cat "$SUP_ERR")"
assert_eq "$(cat "$RAN")" "LD_PRELOAD=unset B=1" "what the worker was given"

note "a file made writable by others before a restart: that start is refused"
J=$T/later
job "$J"
echo 1 >"$J/env/B"
GO=$T/go start_sup "$J" --no-python -- "${WORKER[@]}"
wait_for -t 20 eval '[ "$(kv "$J/supervise/state" state)" = running ] && [ -s "$RAN" ]' ||
    fail "the first start never ran: $(cat "$SUP_ERR")"
echo "$EVIL" >"$J/env/LD_PRELOAD"
chmod 0666 "$J/env/LD_PRELOAD"
printf r >"$J/supervise/control"
wait_sup -t 30
assert_eq $? 100 "exit status after the refused start"
assert_eq "$(cat "$RAN")" "LD_PRELOAD=unset B=1" "the workers that ran"
assert_grep "$SUP_ERR" "unable to start the worker group: $J/env/LD_PRELOAD: owner uid 0, mode 0666: writable by group or others" \
    "the refused start"
assert_eq "$(grep -c "env/LD_PRELOAD" "$SUP_ERR")" 1 "lines naming env/LD_PRELOAD"
assert_eq "$(kv "$J/supervise/state" state)" failed "the job's state"
exit 0
