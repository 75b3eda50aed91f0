#!/bin/bash
# Whoever could change a directory on the way to a job directory could
# make the job's user write where they say: esv-run's base ($TMPDIR/esv-UID,
# $XDG_RUNTIME_DIR/esv, /run/esv) must be the user's own with mode 0700,
# root ignores an XDG_RUNTIME_DIR it does not own, and no JOBDIR is reached
# through a directory others can write or another user's link (issue 34,
# defect 8; esv-run(1), SECURITY; esv-supervise(8), Trust).  The victim is
# esv-trust, then root; the attacker nobody, then esv-trust.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_trust_runbase.sh
. "$(dirname "$0")/lib.sh"
. "$ESV_TEST_DIR/trustlib.sh"
esv_setup 120
trust_user
RUN=$ESV_BIN_DIR/esv-run
NUID=$(id -u nobody)

# A /tmp of the test's own; the victim's home, and a place for its worker.
TMPD=$T/tmp
mkdir -m 1777 "$TMPD"
VH=$T/vhome
mkdir "$VH" "$T/u"
echo keep >"$VH/precious"
chown -R "$TU:" "$VH" "$T/u"
BASE=$TMPD/esv-$TUID

# The worker writes its error record once $T/u/go exists, as torch's
# @record does, and fails.
WORKER=(/bin/sh -c 'echo ran >"$0.ran"
    while [ ! -e "$0" ]; do sleep 0.05; done
    printf "{\"message\": \"boom\"}\n" >"$TORCHELASTIC_ERROR_FILE"; exit 1'
    "$T/u/go")

# victim_run OUT ARGS...: the victim's esv-run in the background (RUN_PID),
# its stderr in OUT.err.
victim_run()
{
	local out=$1
	shift
	as_user env -u XDG_RUNTIME_DIR TMPDIR="$TMPD" "$RUN" "$@" \
	    >"$out.out" 2>"$out.err" </dev/null &
	RUN_PID=$!
}

running_or_gone()
{
	[ "$(kv "$1/supervise/state" state 2>/dev/null)" = running ] ||
	    ! esv_alive "$RUN_PID"
}

# refused ERR WHAT ERE...: one line of stderr, matching each ERE.
refused()
{
	local err=$1 what=$2
	shift 2
	assert_eq "$(grep -c . "$err")" 1 "$what: lines of stderr: $(cat "$err")"
	for ere; do
		assert_grep "$err" "$ere" "$what"
	done
}

untouched()
{
	assert_eq "$(cd "$VH" && ls -A | tr '\n' ' ')" "precious " \
	    "the victim's home, $1"
	assert_eq "$(cat "$VH/precious")" keep "$VH/precious, $1"
}

note "another user's $BASE (0777), job1 a link to the victim's home"
as_nobody mkdir -m 0777 "$BASE" || fail "nobody cannot make $BASE"
as_nobody ln -s "$VH" "$BASE/job1"
victim_run "$T/a" --no-python --rdzv-id job1 --max-restarts 0 "${WORKER[@]}"
touch "$T/u/go"
wait_sup -t 30 "$RUN_PID"
assert_eq $? 100 "esv-run's exit status in another user's base"
untouched "behind $BASE/job1"
assert_no_file "$T/u/go.ran"
refused "$T/a.err" "another user's base" \
    "^esv-supervise: fatal: $BASE: owner uid $NUID, mode 0777: another user's" \
    "name a job directory with --jobdir$"

note "another user's base: job2 renamed away, error.json planted as a link"
rm -f "$T/u/go" "$BASE/job1"
victim_run "$T/b" --no-python --rdzv-id job2 --max-restarts 0 "${WORKER[@]}"
wait_for -t 20 running_or_gone "$BASE/job2" || fail "the worker never ran"
if esv_alive "$RUN_PID"; then
	rd=$(ls -d "$BASE"/job2/logs/job2_* 2>/dev/null | head -n 1)
	[ -n "$rd" ] || fail "no run directory in $BASE/job2/logs"
	as_nobody /bin/sh -c 'cd "$1" && mv job2 job2.old &&
	    mkdir -p "job2/logs/$2/attempt_0/0" &&
	    ln -s "$3" "job2/logs/$2/attempt_0/0/error.json"' sh "$BASE" \
	    "${rd##*/}" "$VH/precious" || fail "the attack could not be set up"
fi
touch "$T/u/go"
wait_sup -t 30 "$RUN_PID"
assert_eq $? 100 "esv-run's exit status, error.json planted"
untouched "behind a planted error.json"
refused "$T/b.err" "another user's base (2)" "$BASE: owner uid $NUID, mode 0777"

note "the victim's own base, open to others: refused, not tightened"
as_nobody rmdir "$BASE"
as_user mkdir -m 0755 "$BASE"
victim_run "$T/c" --no-python --rdzv-id job3 /bin/true
wait_sup -t 30 "$RUN_PID"
assert_eq $? 100 "esv-run's exit status in a base of mode 0755"
refused "$T/c.err" "a base of mode 0755" \
    "$BASE: owner uid $TUID, mode 0755: open to others.*chmod 700 it$"
assert_eq "$(ls -A "$BASE")" "" "what esv-run made in $BASE"
assert_eq "$(stat -c %a "$BASE")" 755 "the mode of $BASE, left as it was"

note "a base of the victim's, mode 0700: fine, the job directory in it"
chmod 0700 "$BASE"
victim_run "$T/d" --no-python --rdzv-id job4 /bin/true
wait_sup -t 30 "$RUN_PID"
assert_eq $? 0 "esv-run's exit status in its own base: $(cat "$T/d.err")"
assert_grep_F "$T/d.err" "job directory $BASE/job4 "
assert_eq "$(stat -c %U "$BASE/job4")" "$TU" "owner of $BASE/job4"
# Even a link of the victim's own is not followed to a job directory.
mkdir "$T/u5"
chown "$TU:" "$T/u5"
as_user ln -s "$T/u5" "$BASE/job5"
victim_run "$T/d5" --no-python --rdzv-id job5 /bin/true
wait_sup -t 30 "$RUN_PID"
assert_eq $? 100 "esv-run's exit status, job5 a link"
refused "$T/d5.err" "a job directory that is a link" \
    "$BASE/job5: a symbolic link: refusing to follow it"
assert_eq "$(ls -A "$T/u5")" "" "the directory behind $BASE/job5"

note "root, an XDG_RUNTIME_DIR of another user's: ignored"
ID=esv-itest-$$-$RANDOM
X=$T/xdg
mkdir -m 0700 "$X" "$T/rootvictim"
echo keep >"$T/rootvictim/control"
chown "$TU:" "$X"
as_user mkdir -m 0700 "$X/esv"
as_user ln -s "$T/rootvictim" "$X/esv/$ID"
XDG_RUNTIME_DIR=$X "$RUN" --no-python --rdzv-id "$ID" /bin/true \
    >"$T/e.out" 2>"$T/e.err"
rc=$?
[ -d "/run/esv/$ID" ] && rm -rf "/run/esv/$ID"
assert_eq "$rc" 0 "root's esv-run with $TU's XDG_RUNTIME_DIR: $(cat "$T/e.err")"
assert_grep_F "$T/e.err" "job directory /run/esv/$ID "
assert_eq "$(cd "$T/rootvictim" && ls -A | tr '\n' ' ')" "control " \
    "root's directory behind $X/esv/$ID"

# The victims below are root's: $T/rootfile, $T/rootdir.
echo keep >"$T/rootfile"
mkdir -m 0700 "$T/rootdir"
ROOTWORKER=(/bin/sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done
    printf "{\"message\": \"boom\"}\n" >"$TORCHELASTIC_ERROR_FILE"; exit 1'
    "$T/go")

note "root's JOBDIR in a directory others can write: refused"
mkdir -m 0777 "$T/shared"
J=$T/shared/job
start_sup "$J" --no-python --rdzv-id trust --max-restarts 0 -- "${ROOTWORKER[@]}"
RUN_PID=$SUP_PID
wait_for -t 20 running_or_gone "$J" || fail "the worker never ran"
if esv_alive "$SUP_PID"; then
	rd=$(ls -d "$J"/logs/trust_* 2>/dev/null | head -n 1)
	[ -n "$rd" ] || fail "no run directory in $J/logs"
	as_user /bin/sh -c 'cd "$1" && mv job job.old &&
	    mkdir -p "job/logs/$2/attempt_0/0" &&
	    ln -s "$3" "job/logs/$2/attempt_0/0/error.json"' sh "$T/shared" \
	    "${rd##*/}" "$T/rootfile" || fail "the attack could not be set up"
fi
touch "$T/go"
wait_sup -t 30
assert_eq $? 100 "exit status, JOBDIR in a directory of mode 0777"
assert_eq "$(cat "$T/rootfile")" keep "root's $T/rootfile"
refused "$SUP_ERR" "JOBDIR in a mode 0777 directory" \
    "$T/shared: owner uid 0, mode 0777: writable by group or others.*chmod go-w it, or chmod \\+t it$"

note "root's JOBDIR through another user's link"
P=$T/pub
mkdir -m 1777 "$P"
as_user ln -s "$T/rootdir" "$P/link"
"$SUP" --no-python "$P/link/job" -- /bin/true >"$T/f.out" 2>"$T/f.err"
assert_eq $? 100 "exit status, JOBDIR through $TU's link"
assert_eq "$(ls -A "$T/rootdir")" "" "root's directory behind $P/link"
refused "$T/f.err" "JOBDIR through a link" \
    "$P/link: a symbolic link of uid $TUID, another user, so esv does not follow it"

note "root's own link on the way is followed"
ln -s "$T/rootdir" "$T/mylink"
"$SUP" --no-python "$T/mylink/job" -- /bin/true >"$T/g.out" 2>"$T/g.err"
assert_eq $? 0 "exit status, JOBDIR through root's link: $(cat "$T/g.err")"
assert_file "$T/rootdir/job/supervise/state"
exit 0
