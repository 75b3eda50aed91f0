#!/bin/bash
# A log directory (--log-dir) that another user can write must not let that
# user read or delete root's files through esv-supervise: it is refused,
# unless it has the sticky bit (issue 20, part 1; esv-supervise(8), Trust).
# So is one reached through a directory another user owns or can write, or
# through another user's symbolic link (issue 34, defect 11).
# The attacks below are carried out by a second, unprivileged user.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_trust_logdir.sh
. "$(dirname "$0")/lib.sh"
. "$ESV_TEST_DIR/trustlib.sh"
esv_setup 120
trust_user

SECRET=secret-$RANDOM$RANDOM
printf '{"message": "%s"}\n' "$SECRET" >"$T/secret"
chmod 600 "$T/secret"
# The worker fails once $T/go exists (the attacker has done its part).
WAIT_GO=(/bin/sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done; exit 1'
    "$T/go")

run_dir()
{
	ls -d "$1"/trust_* 2>/dev/null | head -n 1
}

# The worker runs, or the supervisor gave up at once.
running_or_gone()
{
	[ "$(kv "$1/supervise/state" state)" = running ] ||
	    ! esv_alive "$SUP_PID"
}

# refused LOGDIR WHAT ERE: the supervisor exited 100 naming LOGDIR.
refused()
{
	assert_eq "$SUP_RC" 100 "$2: exit status"
	assert_grep_F "$SUP_ERR" "log directory $1: owner"
	assert_grep "$SUP_ERR" "$3"
	assert_eq "$(grep -c . "$SUP_ERR")" 1 "$2: lines of stderr"
}

note "a log directory of another user: error.json swapped for a link"
L=$T/shared
mkdir "$L"
chown "$TU:" "$L"
J=$T/leak
start_sup "$J" --no-python --rdzv-id trust --log-dir "$L" --max-restarts 0 \
    -- "${WAIT_GO[@]}"
wait_for -t 20 running_or_gone "$J" || fail "the worker never ran"
if esv_alive "$SUP_PID"; then
	rd=$(run_dir "$L")
	[ -n "$rd" ] || fail "no run directory in $L"
	as_user /bin/sh -c 'cd "$1" && mv "$2" "$2.old" &&
	    mkdir -p "$2/attempt_0/0" &&
	    ln -s "$3" "$2/attempt_0/0/error.json"' sh "$L" "${rd##*/}" \
	    "$T/secret" || fail "the attack could not be set up"
fi
touch "$T/go"
wait_sup -t 30
SUP_RC=$?
if grep -rlF "$SECRET" "$J" "$J.err" >"$T/leaks" 2>/dev/null; then
	fail "root's secret was copied into $(tr '\n' ' ' <"$T/leaks")"
fi
refused "$L" "$TU's log directory" "owner uid $TUID, mode 0755: owned by another user.*chown it to uid 0$"

note "a log directory of another user: the run directory swapped for a link"
L=$T/shared2
mkdir "$L" "$T/victim" "$T/victim/attempt_1"
echo keep >"$T/victim/attempt_1/precious"
chown "$TU:" "$L"
rm -f "$T/go"
J=$T/remove
start_sup "$J" --no-python --rdzv-id trust --log-dir "$L" --max-restarts 1 \
    --redirects 3 -- "${WAIT_GO[@]}"
wait_for -t 20 running_or_gone "$J" || fail "the worker never ran"
if esv_alive "$SUP_PID"; then
	rd=$(run_dir "$L")
	[ -n "$rd" ] || fail "no run directory in $L"
	as_user /bin/sh -c 'cd "$1" && mv "$2" "$2.old" && ln -s "$3" "$2"' \
	    sh "$L" "${rd##*/}" "$T/victim" ||
	    fail "the attack could not be set up"
fi
touch "$T/go"
wait_sup -t 30
SUP_RC=$?
[ -f "$T/victim/attempt_1/precious" ] ||
    fail "root's file $T/victim/attempt_1/precious was deleted through the link"
assert_eq "$(cd "$T/victim" && find . | sort | tr '\n' ' ')" \
    ". ./attempt_1 ./attempt_1/precious " "root's directory $T/victim"
refused "$L" "$TU's log directory (2)" "owned by another user"

note "a log directory that others can write, without the sticky bit"
L=$T/open
mkdir "$L"
chmod 0777 "$L"
J=$T/open-job
run_sup -t 30 "$J" --no-python --rdzv-id trust --log-dir "$L" -- /bin/true
refused "$L" "a mode 0777 log directory" "mode 0777: writable by group or others.*chmod go-w it, or chmod \\+t it"
assert_eq "$(run_dir "$L")" "" "run directories in $L"

note "a sticky log directory that others can write (like /tmp) is fine"
L=$T/sticky
mkdir "$L"
chmod 1777 "$L"
J=$T/sticky-job
run_sup -t 30 "$J" --no-python --rdzv-id trust --log-dir "$L" -- /bin/true
assert_eq "$SUP_RC" 0 "exit status with a sticky log directory"
rd=$(run_dir "$L")
[ -n "$rd" ] || fail "no run directory in $L"
assert_eq "$(stat -c '%U %a' "$rd")" "root 700" "owner and mode of $rd"

# refused_at LOGDIR WHAT ERE: exit 100, one line naming LOGDIR, then ERE.
refused_at()
{
	assert_eq "$SUP_RC" 100 "$2: exit status"
	assert_eq "$(grep -c . "$SUP_ERR")" 1 "$2: lines of stderr: $(cat "$SUP_ERR")"
	assert_grep "$SUP_ERR" "^esv-supervise: fatal: log directory $1: $3" "$2"
}

note "a log directory through another user's link higher up"
P=$T/pub
mkdir -m 1777 "$P"
mkdir -m 0700 "$T/rootonly"
as_user ln -s "$T/rootonly" "$P/link"
J=$T/linked-job
run_sup -t 30 "$J" --no-python --rdzv-id trust --log-dir "$P/link/logs" -- /bin/true
refused_at "$P/link/logs" "a log directory through $TU's link" \
    "$P/link: a symbolic link of uid $TUID, another user, so esv does not follow it"
assert_eq "$(ls -A "$T/rootonly")" "" "root's directory behind $P/link"

note "a log directory in a directory of another user's"
mkdir "$T/theirs"
mkdir "$T/theirs/sub"
chown "$TU:" "$T/theirs"
J=$T/theirs-job
run_sup -t 30 "$J" --no-python --rdzv-id trust --log-dir "$T/theirs/sub/logs" -- /bin/true
refused_at "$T/theirs/sub/logs" "a log directory under $TU's" \
    "$T/theirs: owner uid $TUID, mode 0755: owned by another user"
assert_eq "$(ls -A "$T/theirs/sub")" "" "what esv made under $T/theirs"

note "a log directory under a directory others can write, without the sticky bit"
mkdir -m 0777 "$T/open2"
J=$T/open2-job
run_sup -t 30 "$J" --no-python --rdzv-id trust --log-dir "$T/open2/a/logs" -- /bin/true
refused_at "$T/open2/a/logs" "a log directory under a mode 0777 one" \
    "$T/open2: owner uid 0, mode 0777: writable by group or others"

note "root's own link on the way is followed, and the logs named without it"
mkdir "$T/real"
ln -s "$T/real" "$T/mine"
J=$T/mine-job
run_sup -t 30 "$J" --no-python --rdzv-id trust --log-dir "$T/mine/deep/logs" -- /bin/true
assert_eq "$SUP_RC" 0 "exit status with root's link on the way: $(cat "$SUP_ERR")"
[ -n "$(run_dir "$T/real/deep/logs")" ] || fail "no run directory in $T/real/deep/logs"
assert_grep_F "$SUP_ERR" "logs in $T/real/deep/logs/trust_"
# The missing ones are made, mode 0755 less the umask.
m=$(printf '%o' $((0755 & ~0$(umask))))
assert_eq "$(stat -c '%U %a' "$T/real/deep" "$T/real/deep/logs" | tr '\n' ' ')" \
    "root $m root $m " "owner and mode of the directories made"

note "JOBDIR/logs, the default, made by esv itself"
J=$T/plain
run_sup -t 30 "$J" --no-python --rdzv-id trust -- /bin/true
assert_eq "$SUP_RC" 0 "exit status with the default log directory"
[ -n "$(run_dir "$J/logs")" ] || fail "no run directory in $J/logs"
exit 0
