#!/bin/bash
# A JOBDIR, job.ini or supervise/ that another user owns or can write is
# refused, and no symlink in JOBDIR is followed, by esv-supervise or by
# esv-ctl (issue 20, part 2; esv-supervise(8), Trust); so is a rendezvous
# token file another user owns (they would know the token).  The attacker is a
# second, unprivileged user.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_trust_jobdir.sh
. "$(dirname "$0")/lib.sh"
. "$ESV_TEST_DIR/trustlib.sh"
esv_setup 120
trust_user
# A shared place like /tmp, where the other user makes its files.
P=$T/pub
mkdir -m 1777 "$P"

# The worker tells what [env] it was given, if it runs at all.
RAN=$T/ran
WORKER=(/bin/sh -c 'echo "pwned=$ESV_PWNED" >"$0"' "$RAN")
EVIL_INI='[env]
ESV_PWNED = yes'

# refused JOBDIR WHAT ERE: exit 100, one line naming JOBDIR, no worker.
refused()
{
	assert_eq "$SUP_RC" 100 "$2: exit status"
	[ -e "$RAN" ] && fail "$2: a worker ran: $(cat "$RAN")"
	assert_grep_F "$SUP_ERR" "$1"
	assert_grep "$SUP_ERR" "$3"
	assert_eq "$(grep -c . "$SUP_ERR")" 1 "$2: lines of stderr"
}

note "a JOBDIR made by another user, its supervise/ a link to root's"
J=$P/evil
mkdir "$T/victim"
echo keep >"$T/victim/control"
as_user mkdir "$J" || fail "$TU cannot make $J"
printf '%s\n' "$EVIL_INI" | as_user tee "$J/job.ini" >/dev/null
as_user ln -s "$T/victim" "$J/supervise"
run_sup -t 30 "$J" --no-python -- "${WORKER[@]}"
assert_eq "$(cd "$T/victim" && ls -A | tr '\n' ' ')" "control " \
    "root's directory behind $J/supervise"
assert_eq "$(cat "$T/victim/control")" keep "root's $T/victim/control"
refused "$J: owner uid $TUID, mode 0755: owned by another user" \
    "$TU's JOBDIR" "chown it to uid 0$"

note "root's JOBDIR, another user's job.ini"
J=$T/theirini
mkdir "$J"
printf '%s\n' "$EVIL_INI" >"$J/job.ini"
chown "$TU:" "$J/job.ini"
run_sup -t 30 "$J" --no-python -- "${WORKER[@]}"
refused "$J/job.ini: owner uid $TUID" "$TU's job.ini" "owned by another user"

note "root's job.ini, a link to another user's file"
J=$T/linkini
mkdir "$J"
printf '%s\n' "$EVIL_INI" >"$T/their.ini"
chown "$TU:" "$T/their.ini"
ln -s "$T/their.ini" "$J/job.ini"
run_sup -t 30 "$J" --no-python -- "${WORKER[@]}"
refused "$J/job.ini: is a symbolic link" "a job.ini link" "put the file itself there"

note "a JOBDIR that others can write"
J=$T/open
mkdir "$J"
chmod 0777 "$J"
run_sup -t 30 "$J" --no-python -- "${WORKER[@]}"
refused "$J: owner uid 0, mode 0777: writable by group or others" \
    "a mode 0777 JOBDIR" "chmod go-w it$"

note "root's JOBDIR, another user's supervise/"
J=$T/theirsup
mkdir "$J"
as_user mkdir "$P/theirs"
mv "$P/theirs" "$J/supervise"
run_sup -t 30 "$J" --no-python -- "${WORKER[@]}"
refused "$J/supervise: owner uid $TUID" "$TU's supervise/" "owned by another user"

note "esv-ctl on another user's JOBDIR whose control is a link"
J=$P/evilctl
echo keep >"$T/ctlvictim"
as_user mkdir -p "$J/supervise"
as_user ln -s "$T/ctlvictim" "$J/supervise/control"
assert_rc 111 "$CTL" up "$J"
assert_eq "$(cat "$T/ctlvictim")" keep "root's file behind $J/supervise/control"
assert_grep_F "$T/err" "$J/supervise/control: not a FIFO"

note "a rendezvous token file of another user"
J=$T/token
echo secret-secret-secret >"$T/their.token"
chmod 600 "$T/their.token"
chown "$TU:" "$T/their.token"
run_sup -t 30 "$J" --rdzv-backend esv --rdzv-endpoint 127.0.0.1:1 \
    --rdzv-conf token_file="$T/their.token" --no-python -- "${WORKER[@]}"
refused "$T/their.token: owner uid $TUID, mode 0600: owned by another user" \
    "$TU's token file" "chown it to uid 0$"

note "a JOBDIR of ours is fine"
J=$T/ours
mkdir "$J"
chmod 0700 "$J"
printf '%s\n' "[env]" "ESV_PWNED = no" >"$J/job.ini"
chmod 0600 "$J/job.ini"
run_sup -t 30 "$J" --no-python -- "${WORKER[@]}"
assert_eq "$SUP_RC" 0 "exit status in our own JOBDIR"
assert_eq "$(cat "$RAN")" pwned=no "what the worker was given"
exit 0
