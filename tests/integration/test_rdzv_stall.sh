#!/bin/bash
# A stall of a supervisor inside its lease is harmless (esv-supervise(8),
# Leases, Stalls): with the defaults (lease 1.5 s, grace 0.3 s, our PINGs
# every 0.15 s, acknowledged at once), a supervisor stopped for 0.6 s,
# then for 0.9 s (any stall under 1 s is promised harmless), finds, when
# it goes on, that esv-rdzv acknowledged what it sent before the stall,
# and renews its lease by a PING; nothing is fenced, nothing restarts, on
# either node.  On etcd (test_rdzv_stall_etcd) the same with its defaults:
# TTL 2 s, grace 0.4 s, PINGs to esv-rdzv-etcd every 0.2 s, and the end of
# its etcd lease, told to the supervisor and its guardian, renewed by
# keep-alives every third of a second while workers run.
. "$(dirname "$0")/lib.sh"
esv_setup 90
. "$ESV_TEST_DIR/rdzv.sh"

if [ "$RZ_BACKEND" = esv ]; then
	start_rdzv --heartbeat 300	# the default: a fifth of the default lease
else
	start_rdzv
fi
RZ_NNODES=2:2 RZ_STOP_FLAG=$T/stop node a
RZ_NNODES=2:2 RZ_STOP_FLAG=$T/stop node b
for n in a b; do
	wait_recs $n 'world=2 ' 1 || fail "$n: no round: $(cat "$T/$n.err")"
	wait_state $n state running || fail "$n's state"
done
wpid=$(field "$(last_rec a)" pid)

for stall in 0.6 0.9; do
	note "a stopped for $stall s"
	kill -STOP "$NODE_PID_a"
	sleep "$stall"	# the stall itself: the fault, not a wait for an event
	kill -CONT "$NODE_PID_a"
	cont=$EPOCHREALTIME
	# Had the stall cost a's lease, the fence would come within a lease
	# of going on (SIGTERM at L - G after the last renewal), and b's
	# restart within the time the rendezvous takes to notice a loss
	# (RZ_LOSS_MS: 2 s on esv, the TTL and etcd's sweep on etcd), and
	# 0.3 s to spare.
	sleep_until "$(awk -v t="$cont" -v l="$RZ_LOSS_MS" \
	    'BEGIN { printf "%.3f", t + l / 1000 + 0.3 }')"
	for n in a b; do
		assert_no_grep "$T/$n/events.jsonl" \
		    '"event":"(rdzv\.fenced|rdzv\.membership|group\.stop)"' \
		    "$n's events"
		assert_eq "$(recs $n .)" 1 "$n: worker starts"
	done
	esv_alive "$wpid" || fail "a's worker died"
	assert_no_grep "$T/a.err" 'lease|lost'
done
nodes_exit_0 20 a b
exit 0
