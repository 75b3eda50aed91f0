#!/bin/bash
# Fencing (issue 34, defect 1): a node cut off from the rendezvous stops
# its workers before any other node is given their ranks.
#
# Three nodes on hosts of their own (netbed.sh), esv-rdzv on a fourth;
# --nnodes 2:3, 2 workers each, the default lease (1.5 s).  The link of
# the node holding rank 0 goes down: no FIN, no RST.  From then on its
# workers ignore SIGTERM and its --shutdown-timeout is 60 s, so only the
# fence's SIGKILL at the lease's end can end them in time.
#
# Checked (fence_check.py): per global rank, the lifetimes of its holders
# never overlap: a worker's start is its own record, its end the
# worker.exit event its supervisor writes once it has reaped it.  The
# survivors go on with world 4; the cut-off node counts no restart, logs
# the rdzv.fenced event and says on stderr that the lease ran out; after
# the heal it joins again (world 6), and the job ends well.
. "$(dirname "$0")/lib.sh"
esv_setup 150
. "$ESV_TEST_DIR/rdzv.sh"
. "$ESV_TEST_DIR/netbed.sh"
. "$ESV_TEST_DIR/fencebed.sh"

fence_bed fencejob 60s
cut=$(sed -n 's/^start node=\([a-c]\) rank=0 world=6 .*/\1/p' "$T/rec")
[ -n "$cut" ] || fail "nobody holds rank 0: $(cat "$T/rec")"
alive=()
for n in a b c; do
	[ "$n" = "$cut" ] || alive+=("$n")
done

note "the link of $cut (rank 0) goes down"
touch "$T/stubborn.$cut"
t_cut=$EPOCHREALTIME
bed_link "$cut" down
wait_for -t 30 eval '[ "$(count_lines "$T/rec" " world=4 ")" -ge 4 ]' ||
    fail "the survivors did not go on with world 4: $(cat "$T/${alive[0]}.err")"
# Its workers are dead by now, if the fence works; their supervisor may
# still be writing their exits: give it a moment, then judge.
wait_for -t 5 eval '[ "$(count_lines "$T/$cut/events.jsonl" "\"worker.exit\"")" -ge 2 ]'
"$PY" "$ESV_TEST_DIR/fence_check.py" "$T/rec" "$T/a" "$T/b" "$T/c" \
    >"$T/check" || fail "two live workers held one rank: $(cat "$T/check")"
grep -q '"rdzv.fenced"' "$T/$cut/events.jsonl" ||
    fail "$cut logged no rdzv.fenced event"
assert_grep "$T/$cut.err" 'lease .* ends at .*: stopping the workers now'
assert_grep "$T/$cut.err" 'lease of the workers.* ran out: SIGKILL'
assert_no_grep "$T/$cut/events.jsonl" '"group.restart"' "$cut's events"
assert_eq "$(kv "$T/$cut/supervise/state" restart_count)" 0 \
    "$cut's restart count"
t_fenced=$(grep -h '"worker.exit"' "$T/$cut/events.jsonl" | tail -1 |
    "$PY" -c 'import json,sys; print(json.load(sys.stdin)["time"])')
t_noticed=$(grep -h '"rdzv.membership"' "$T/${alive[0]}/events.jsonl" |
    "$PY" -c 'import json,sys
print(min(t for t in (json.loads(l)["time"] for l in sys.stdin)
    if t > '"$t_cut"'))')
note "$cut's workers dead $(awk -v a="$t_cut" -v b="$t_fenced" \
    'BEGIN { printf "%.0f", (b - a) * 1000 }') ms after the cut," \
    "survivors noticed after $(awk -v a="$t_cut" -v b="$t_noticed" \
    'BEGIN { printf "%.0f", (b - a) * 1000 }') ms"

note "the link of $cut comes back: it joins again"
rm -f "$T/stubborn.$cut"
bed_link "$cut" up
wait_for -t 40 eval '[ "$(count_lines "$T/rec" " world=6 ")" -ge 12 ]' ||
    fail "$cut did not join again: $(tail -5 "$T/$cut.err")"
touch "$T/stop"
for n in a b c; do
	eval "p=\$pid_$n"
	wait_sup -t 30 "$p"
	assert_eq $? 0 "$n's exit status"
done
"$PY" "$ESV_TEST_DIR/fence_check.py" "$T/rec" "$T/a" "$T/b" "$T/c" \
    >"$T/check" || fail "two live workers held one rank: $(cat "$T/check")"
assert_eq "$(kv "$T/$cut/supervise/state" restart_count)" 0 \
    "$cut's restart count"
exit 0
