#!/bin/bash
# Fencing against a loss in one direction (esv-rdzv(8), LEASES): a node's
# lease is renewed only by esv-rdzv's acknowledgements of what it sent,
# so neither a node that hears nothing (but is heard) nor one that is not
# heard (but hears) can keep its workers past the time its ranks may be
# given away.  Three nodes on hosts of their own (netbed.sh), esv-rdzv on
# a fourth, --nnodes 2:3, 2 workers each, the default lease; the workers
# of the node cut off ignore SIGTERM then (--shutdown-timeout 60 s).
#	1. the packets from esv-rdzv to the node holding rank 0 are dropped
#	   (nft, in its namespace): esv-rdzv still hears it;
#	2. the packets from another node to esv-rdzv are dropped: it still
#	   hears esv-rdzv's PINGs.
# After each: the survivors go on with world 4, per global rank the
# lifetimes of its holders never overlap (fence_check.py), and once the
# rule is gone the node joins again (world 6).
. "$(dirname "$0")/lib.sh"
esv_setup 150
. "$ESV_TEST_DIR/rdzv.sh"
. "$ESV_TEST_DIR/netbed.sh"
. "$ESV_TEST_DIR/fencebed.sh"
command -v nft >/dev/null || skip "nft(8) is not installed"

fence_bed onewayjob 60s
rz=$(bed_addr rz)

# oneway NODE input|output: drop what NODE receives from, or sends to,
# esv-rdzv; then check and heal as the header says.
oneway()
{
	local node=$1 hook=$2 dir n4 n6 nx
	[ "$hook" = input ] && dir=saddr || dir=daddr
	n4=$(count_lines "$T/rec" " world=4 ")
	n6=$(count_lines "$T/rec" " world=6 ")
	nx=$(count_lines "$T/$node/events.jsonl" '"worker.exit"')
	touch "$T/stubborn.$node"
	ip netns exec "$(bed_ns "$node")" nft -f - <<NFT || fail "nft refused the rule"
table inet oneway {
	chain c { type filter hook $hook priority 0; policy accept; ip $dir $rz drop; }
}
NFT
	wait_for -t 30 eval '[ "$(count_lines "$T/rec" " world=4 ")" -ge $((n4 + 4)) ]' ||
	    fail "$hook loss of $node: no world 4 without it: $(tail -3 "$T/rdzv.err")"
	wait_for -t 5 eval '[ "$(count_lines "$T/$node/events.jsonl" "\"worker.exit\"")" -ge $((nx + 2)) ]'
	"$PY" "$ESV_TEST_DIR/fence_check.py" "$T/rec" "$T/a" "$T/b" "$T/c" \
	    >"$T/check" || fail "$hook loss of $node: two live workers held one rank: $(cat "$T/check")"
	grep -q '"rdzv.fenced"' "$T/$node/events.jsonl" ||
	    fail "$hook loss of $node: no rdzv.fenced event"
	rm -f "$T/stubborn.$node"
	ip netns exec "$(bed_ns "$node")" nft delete table inet oneway ||
	    fail "nft: the rule stays"
	wait_for -t 40 eval '[ "$(count_lines "$T/rec" " world=6 ")" -ge $((n6 + 6)) ]' ||
	    fail "$hook loss of $node: it did not join again: $(tail -5 "$T/$node.err")"
}

first=$(sed -n 's/^start node=\([a-c]\) rank=0 world=6 .*/\1/p' "$T/rec")
note "$first hears nothing from esv-rdzv, which hears it"
oneway "$first" input
second=a
[ "$first" = a ] && second=b
note "$second is not heard by esv-rdzv, and hears it"
oneway "$second" output

touch "$T/stop"
for n in a b c; do
	eval "p=\$pid_$n"
	wait_sup -t 30 "$p"
	assert_eq $? 0 "$n's exit status"
	assert_eq "$(kv "$T/$n/supervise/state" restart_count)" 0 \
	    "$n's restart count"
done
"$PY" "$ESV_TEST_DIR/fence_check.py" "$T/rec" "$T/a" "$T/b" "$T/c" \
    >"$T/check" || fail "two live workers held one rank: $(cat "$T/check")"
exit 0
