#!/bin/bash
# Worker output: the log directory
# layout, -t/-r (map form too), the console prefix and its template,
# --local-ranks-filter, attempt directories on manual and failure
# restarts; console lines never mixed mid-line; a last partial line of a
# SIGKILLed worker still shows.
. "$(dirname "$0")/lib.sh"
esv_setup 150

PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY is missing"
TALK=$WORKERS/b_talk.sh
PIECES=$WORKERS/b_pieces.py

# run_dir LOGDIR: the single <run_id>_<8 chars> directory under LOGDIR.
run_dir()
{
	local d
	d=$(find "$1" -mindepth 1 -maxdepth 1 -type d)
	[ "$(echo "$d" | wc -l)" -eq 1 ] || fail "$1: wanted one run directory, found: $d"
	echo "$d"
}

# expect_lines FILE PREFIX KIND RANK RC N: FILE holds exactly the lines
# "<PREFIX>KIND RANK RC <pid> 0..N-1", in order, from one pid.
expect_lines()
{
	"$PY" - "$@" <<'EOF' || fail "$1: wrong content: $(head -c 1500 "$1")"
import re, sys
path, prefix, kind, rank, rc, n = sys.argv[1:]
lines = open(path).read().splitlines()
pat = re.compile(re.escape(prefix) + r"%s %s %s (\d+) (\d+)$" % (kind, rank, rc))
got = [pat.match(l) for l in lines]
assert all(got), [l for l, m in zip(lines, got) if not m][:3]
assert [int(m.group(2)) for m in got] == list(range(int(n))), lines[:5]
assert len({m.group(1) for m in got}) == 1, "several pids"
EOF
}

# ---- 26: --log-dir D -t 3.
note "26: -t 3 layout and console prefix"
J=$T/tee
run_sup "$J" --no-python --nproc-per-node 2 --log-dir "$T/L26" -t 3 \
    -- bash "$TALK" 5
assert_eq "$SUP_RC" 0 "exit status"
R=$(run_dir "$T/L26")
[[ ${R##*/} =~ ^none_[A-Za-z0-9_]{8}$ ]] || fail "run directory name: ${R##*/}"
for r in 0 1; do
	expect_lines "$R/attempt_0/$r/stdout.log" "" out $r 0 5
	expect_lines "$R/attempt_0/$r/stderr.log" "" err $r 0 5
	grep "^\\[default$r\\]:out " "$J.out" >"$T/c.out"
	expect_lines "$T/c.out" "[default$r]:" out $r 0 5
	grep "^\\[default$r\\]:err " "$J.err" >"$T/c.err"
	expect_lines "$T/c.err" "[default$r]:" err $r 0 5
done
assert_no_grep "$J.out" '^\[default[01]\]:err ' "console stdout"
assert_no_grep "$J.out" '^\[default[01]\]: ' "console stdout (space after the colon)"
[ "$(grep -c . "$J.out")" -eq 10 ] || fail "console stdout: wanted 10 lines: $(cat "$J.out")"
assert_eq "$(ls "$R")" attempt_0 "attempts"
assert_eq "$(kv "$J/supervise/state" attempt_dir)" "$R/attempt_0" "attempt_dir in supervise/state"

# -r 0:1,1:2: stdout of rank 0 and stderr of rank 1 to files only; the
# other two streams reach the console as they are.
note "26: -r 0:1,1:2"
J=$T/redir
run_sup "$J" --no-python --nproc-per-node 2 --log-dir "$T/Lr" -r 0:1,1:2 \
    -- bash "$TALK" 4
assert_eq "$SUP_RC" 0 "exit status"
R=$(run_dir "$T/Lr")
expect_lines "$R/attempt_0/0/stdout.log" "" out 0 0 4
expect_lines "$R/attempt_0/1/stderr.log" "" err 1 0 4
assert_no_file "$R/attempt_0/0/stderr.log"
assert_no_file "$R/attempt_0/1/stdout.log"
assert_no_grep "$J.out" '^out 0 ' "console stdout (rank 0 redirected)"
assert_no_grep "$J.err" '^err 1 ' "console stderr (rank 1 redirected)"
grep '^out 1 ' "$J.out" >"$T/c.out"
expect_lines "$T/c.out" "" out 1 0 4
grep '^err 0 ' "$J.err" >"$T/c.err"
expect_lines "$T/c.err" "" err 0 0 4
assert_no_grep "$J.out" '^\[' "console stdout (no prefix without tee)"

# ---- 27: the prefix template; unknown macros stay as they are.
note "27: TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"
J=$T/tmpl
TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='[${role_name}/${rank}] ' \
    run_sup "$J" --no-python --nproc-per-node 2 --node-rank 0 -t 1 \
    --log-dir "$T/L27" -- bash "$TALK" 2
assert_eq "$SUP_RC" 0 "exit status"
assert_grep "$J.out" '^\[default/1\] out 1 0 [0-9]+ 0$' "console"
assert_grep "$J.out" '^\[default/0\] out 0 0 [0-9]+ 1$' "console"
J=$T/tmpl2
TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='${foo}$bar[${local_rank}|${role_name}]:' \
    run_sup "$J" --no-python --nproc-per-node 2 --role trainer -t 1 \
    --log-dir "$T/L27b" -- bash "$TALK" 1
assert_eq "$SUP_RC" 0 "exit status"
assert_grep_F "$J.out" '${foo}$bar[1|trainer]:out 1 0 ' "console (unknown macros)"
# The option wins over the environment.
J=$T/tmpl3
TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='env:' \
    run_sup "$J" --no-python --nproc-per-node 1 -t 1 --log-dir "$T/L27c" \
    --log-line-prefix-template '<${rank}>' -- bash "$TALK" 1
assert_eq "$SUP_RC" 0 "exit status"
assert_grep "$J.out" '^<0>out 0 0 ' "console (--log-line-prefix-template)"

# ---- 28: --local-ranks-filter 0 -t 3: only rank 0 on the console, both
# ranks' files complete.
note "28: --local-ranks-filter"
J=$T/filter
run_sup "$J" --no-python --nproc-per-node 2 --log-dir "$T/L28" -t 3 \
    --local-ranks-filter 0 -- bash "$TALK" 50
assert_eq "$SUP_RC" 0 "exit status"
R=$(run_dir "$T/L28")
for r in 0 1; do
	expect_lines "$R/attempt_0/$r/stdout.log" "" out $r 0 50
	expect_lines "$R/attempt_0/$r/stderr.log" "" err $r 0 50
done
expect_lines "$J.out" "[default0]:" out 0 0 50
grep '^\[default' "$J.err" >"$T/c.err"
expect_lines "$T/c.err" "[default0]:" err 0 0 50
# Without tee, the filtered-out rank's output is discarded.
J=$T/filter2
run_sup "$J" --no-python --nproc-per-node 2 --log-dir "$T/L28b" \
    --local-ranks-filter 1 -- bash "$TALK" 3
assert_eq "$SUP_RC" 0 "exit status"
expect_lines "$J.out" "" out 1 0 3
assert_no_grep "$J.err" '^err 0 ' "console stderr (rank 0 filtered out)"
assert_grep "$J.err" '^err 1 0 [0-9]+ 2$' "console stderr"

# ---- 29: no restart loses a log.  Three manual restarts (t, r, k) each
# get a directory of their own next to attempt_0 (attempt_0.1, .2, .3),
# a failure restart makes attempt_1 as torch does; every run's output
# stays, as written.
note "29: attempt directories"
J=$T/att
W=$T/att.go
start_sup "$J" --no-python --nproc-per-node 2 --log-dir "$T/L29" -r 3 \
    --max-restarts 1 --shutdown-timeout 5 -- bash "$TALK" 3 "$W"
has3()
{
	[ "$(grep -c "^out $2 " "$1" 2>/dev/null)" -eq 3 ]
}
wait_for -t 10 eval '[ -d "$T/L29" ] && R=$(run_dir "$T/L29") && has3 "$R/attempt_0/0/stdout.log" 0' ||
    fail "attempt 0 wrote no log: $(cat "$SUP_ERR")"
R=$(run_dir "$T/L29")
wait_for -t 5 has3 "$R/attempt_0/1/stdout.log" 1 || fail "rank 1 wrote no log"
n=0
for letter in t r k; do
	n=$((n + 1))
	prev=$(kv "$J/supervise/state" attempt_dir)
	timeout 5 bash -c 'printf "$2" >"$1/supervise/control"' _ "$J" "$letter" ||
	    fail "could not write $letter"
	wait_for -t 10 eval '[ "$(kv "$J/supervise/state" manual_restarts)" = $n ] &&
	    [ "$(kv "$J/supervise/state" state)" = running ] &&
	    has3 "$R/attempt_0.$n/0/stdout.log" 0 && has3 "$R/attempt_0.$n/1/stdout.log" 1' ||
	    fail "no attempt_0.$n after $letter: $(ls "$R"); $(cat "$SUP_ERR")"
	assert_eq "$(kv "$J/supervise/state" attempt_dir)" "$R/attempt_0.$n" "attempt_dir after $letter"
	assert_grep_F "$SUP_ERR" "control: '$letter'" "the stderr line of $letter"
done
for d in attempt_0 attempt_0.1 attempt_0.2 attempt_0.3; do
	expect_lines "$R/$d/0/stdout.log" "" out 0 0 3
	expect_lines "$R/$d/1/stderr.log" "" err 1 0 3
done
# Rank 0 fails: attempt_1, with restart count 1; the others are kept.
echo 1 >"$W.0"
wait_for -t 10 eval '[ -d "$R/attempt_1/0" ] && has3 "$R/attempt_1/0/stdout.log" 0' ||
    fail "no attempt_1 after a failure: $(ls "$R"); $(cat "$SUP_ERR")"
expect_lines "$R/attempt_1/0/stdout.log" "" out 0 1 3
expect_lines "$R/attempt_0/0/stdout.log" "" out 0 0 3
assert_eq "$(kv "$J/supervise/state" attempt_dir)" "$R/attempt_1" "attempt_dir after the failure"
wait_for -t 5 has3 "$R/attempt_1/1/stdout.log" 1 || fail "rank 1 of attempt 1 wrote no log"
: >"$W.0"
: >"$W.1"
wait_sup -t 15
assert_eq "$?" 0 "exit status"
assert_eq "$(ls "$R" | tr '\n' ' ')" "attempt_0 attempt_0.1 attempt_0.2 attempt_0.3 attempt_1 " "attempt directories"
assert_grep "$SUP_ERR" "exit 0: job succeeded after 5 attempts \\(restarts: 1 after failures, 3 manual, 0 membership\\)" "the last line"
assert_eq "$(tail -n 1 "$SUP_ERR" | grep -c '^esv-supervise: exit 0: ')" 1 "exit line last"

# ---- Lines are never mixed: 4 workers, 2000 lines of 200 bytes each,
# every line written in 3 pieces; without and with a prefix.
check_pieces()	# FILE PREFIXED
{
	"$PY" - "$1" "$2" <<'EOF' || fail "$1: console lines mixed"
import re, sys
path, prefixed = sys.argv[1], sys.argv[2] == "1"
want = {r: 0 for r in range(4)}
bad = 0
for n, l in enumerate(open(path, "rb").read().decode().split("\n")[:-1]):
    m = re.fullmatch(r"(\[default(\d)\]:)?r(\d) i(\d{5}) ([a-z]+)", l)
    ok = m is not None and (m.group(1) is not None) == prefixed
    if ok:
        r, i = int(m.group(3)), int(m.group(4))
        ok = (not prefixed or m.group(2) == m.group(3)) and i == want[r] \
            and m.group(5) == chr(ord("a") + (r + i) % 26) * 189
    if not ok:
        bad += 1
        if bad <= 3:
            print("line %d: %r" % (n + 1, l[:120]), file=sys.stderr)
        continue
    want[r] += 1
assert bad == 0, "%d bad lines" % bad
assert want == {r: 2000 for r in range(4)}, want
EOF
}
note "whole lines only"
J=$T/pieces
run_sup -t 60 "$J" --no-python --nproc-per-node 4 --log-dir "$T/Lp" \
    -- "$PY" "$PIECES" 2000
assert_eq "$SUP_RC" 0 "exit status"
check_pieces "$J.out" 0
J=$T/pieces2
run_sup -t 60 "$J" --no-python --nproc-per-node 4 --log-dir "$T/Lp2" -t 1 \
    -- "$PY" "$PIECES" 2000
assert_eq "$SUP_RC" 0 "exit status"
check_pieces "$J.out" 1

# A last line without a newline, then SIGKILL: it still appears, whole.
note "partial last line of a killed worker"
J=$T/partial
run_sup "$J" --no-python --nproc-per-node 1 --log-dir "$T/Lk" \
    -- bash -c 'printf "first\npartial-tail"; kill -KILL $$'
assert_eq "$SUP_RC" 1 "exit status"
assert_eq "$(cat "$J.out")" "$(printf 'first\npartial-tail')" "console stdout"
assert_eq "$(tail -c 1 "$J.out" | od -An -c | tr -d ' ')" '\n' "last byte of console stdout"
J=$T/partial2
run_sup "$J" --no-python --nproc-per-node 1 --log-dir "$T/Lk2" -t 3 \
    -- bash -c 'printf "first\npartial-tail"; kill -KILL $$'
assert_eq "$SUP_RC" 1 "exit status"
assert_eq "$(cat "$J.out")" "$(printf '[default0]:first\n[default0]:partial-tail')" "console stdout (tee)"
R=$(run_dir "$T/Lk2")
assert_grep_F "$R/attempt_0/0/stdout.log" partial-tail "stdout.log"

note ok
exit 0
