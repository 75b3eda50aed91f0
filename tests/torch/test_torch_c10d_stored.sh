#!/bin/bash
# torch's own agents on esv-stored: two torch 1.13 elastic agents
# (LocalElasticAgent, as torchrun runs it) form their c10d rendezvous
# through an esv-stored they only connect to (is_host=false), then their
# workers all_reduce with gloo.  esv-stored's --state-file must count the
# rendezvous keys torch wrote, and no agent may have hosted a store.
TEST_NAME=test_torch_c10d_stored
. "$(dirname "$0")/common.sh"

STORED=$ESV_BIN_DIR/../store/esv-stored
[ -x "$STORED" ] || { echo "FAIL: $STORED is not built"; exit 1; }
"$STORED" --listen 127.0.0.1:0 --state-file "$T/store" >"$T/stored.out" \
    2>"$T/stored.err" &
BG_PIDS+=("$!")
for _ in $(seq 100); do
	grep -q '^listening' "$T/stored.out" && break
	sleep 0.05
done
port=$(sed -n 's/^listening 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/stored.out")
[ -n "$port" ] || { fail "esv-stored did not start$(show stderr "$T/stored.err")"; finish; }

pids=()
for n in 0 1; do
	timeout 120 "$TORCH_PY" "$TORCH_DIR/agent_c10d.py" "127.0.0.1:$port" \
	    c10d-on-stored "$TORCH_DIR/allreduce_worker.py" "$T/logs$n" \
	    >"$T/node$n.out" 2>"$T/node$n.err" &
	pids+=("$!")
done
for n in 0 1; do
	wait "${pids[$n]}"
	rc=$?
	[ "$rc" -eq 0 ] || fail "agent $n exited $rc$(show stderr "$T/node$n.err")"
	grep -q 'get_world_size=2 sum=3$' "$T/node$n.out" ||
	    fail "node $n's worker did not all_reduce to 3$(show stdout "$T/node$n.out")"
	grep -q 'hosts the TCP store' "$T/node$n.err" &&
	    fail "agent $n hosted a store itself$(show stderr "$T/node$n.err")"
done
keys=$(sed -n 's/^keys=//p' "$T/store")
[ "${keys:-0}" -ge 1 ] ||
    fail "esv-stored holds no rendezvous key$(show state "$T/store")"
kill -0 "${BG_PIDS[0]}" 2>/dev/null || fail "esv-stored died$(show stderr "$T/stored.err")"
finish
