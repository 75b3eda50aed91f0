#!/bin/bash
# The round's nodes reach the agent store's allowed set on both backends
# (esv-stored(8), "Trust model"; RZ_BACKEND esv, or etcd as
# test_stored_members_etcd): two nodes on this host join a round; the one
# of group rank 0 writes supervise/store.allow naming their address
# (127.0.0.1) and its esv-stored is given it, and the other does not; the
# workers of both run.  test_stored_netbed checks who is let in, across
# hosts.
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/rdzv.sh"
start_rdzv
node a --agent-store
node b --agent-store
# rank0: the node whose store serves the round of 2, in $r0.
rank0()
{
	local h
	for h in a b; do
		[ "$(kv "$T/$h/supervise/state" group_world_size 2>/dev/null)" = 2 ] || continue
		[ -n "$(kv "$T/$h/supervise/state" store_listen)" ] || continue
		r0=$h
		return 0
	done
	return 1
}
wait_for -t 40 rank0 || fail "no store for a round of 2: a: $(tail -5 "$T/a.err") b: $(tail -5 "$T/b.err")"
other=a
[ "$r0" = a ] && other=b
note "group rank 0 is $r0"
allow=$T/$r0/supervise/store.allow
assert_file "$allow"
assert_eq "$(sort -u "$allow")" 127.0.0.1 "the round's address in $allow"
pgrep -a -x esv-stored | grep -qF -- "--allow-file $allow" ||
	fail "esv-stored not given $allow: $(pgrep -a -x esv-stored)"
assert_no_file "$T/$other/supervise/store.allow"
wait_recs a "world=2 " 1 && wait_recs b "world=2 " 1 ||
	fail "the workers did not run: $(tail -3 "$T/rec.a") / $(tail -3 "$T/rec.b")"
exit 0
