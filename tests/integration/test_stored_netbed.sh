#!/bin/bash
# esv-stored's trust model across hosts (esv-stored(8), "Trust model"), on
# netbed.sh's separate hosts:
#  - esv-stored --allow-file on host a serves b (named) and refuses c,
#    with a line naming the peer; rewritten and SIGHUP'd, it serves c,
#    drops b's open connection and refuses b: no restart; a bad line is
#    said and skipped, a file gone leaves the set as it was.  On a's own
#    address a local process of uid 65534 is refused, root served;
#  - --max-conns-per-addr 3: a fourth connection from b is refused, this
#    host's own are not capped;
#  - a job of two nodes (a, b; esv rendezvous): the node of group rank 0
#    serves its workers' store to the other node and not to host o, which
#    is in no round; once node c has joined, the new round's store serves
#    c and still refuses o; supervise/store.allow names a, b and c, and
#    esv-stored is given it and --max-conns-per-addr 512;
#  - a job of one node on host o binds its store on 127.0.0.1 only: not
#    reachable on o's address from a, served on o's loopback.
. "$(dirname "$0")/lib.sh"
esv_setup 120
. "$ESV_TEST_DIR/netbed.sh"
. "$ESV_TEST_DIR/rdzv.sh"
STORED=$ESV_BIN_DIR/../store/esv-stored
[ -x "$STORED" ] || fail "$STORED is not built"
command -v setpriv >/dev/null || skip "setpriv(1) is not installed"
bed_init
for h in a b c o; do bed_host $h; done
A=$(bed_addr a) B=$(bed_addr b) C=$(bed_addr c) O=$(bed_addr o)

# reach HOST ADDR PORT [UID]: 0 if a PING from HOST is answered, 1 if the
# connection is refused or hung up on.
reach()
{
	bed_run "$1" setpriv --reuid="${4:-0}" --regid="${4:-0}" --clear-groups \
	    "$PY" - "$ESV_TEST_DIR" "$2" "$3" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import storecli
try:
    storecli.C(int(sys.argv[3]), host=sys.argv[2], timeout=5)
except (EOFError, ConnectionError, BrokenPipeError) as e:
    print("no:", e)
    sys.exit(1)
PY
}

note "esv-stored --allow-file on a: b served, c refused"
printf '# the round\n%s\nnot-an-address\n%s\n' "$A" "$B" >"$T/allow"
bed_run a "$STORED" --listen "0.0.0.0:0" --allow-file "$T/allow" \
    >"$T/st.out" 2>"$T/st.err" &
ESV_SUP_PIDS+=("$!")
wait_for test -s "$T/st.out" || fail "esv-stored did not start: $(cat "$T/st.err")"
port=$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$T/st.out")
spid=$(pgrep -f "esv-stored --listen 0.0.0.0:0 --allow-file $T/allow")
reach b "$A" "$port" || fail "b was refused: $(cat "$T/st.err")"
reach c "$A" "$port" && fail "c, not in the allowed set, was served"
assert_grep "$T/st.err" "$C:[0-9]*: refused: not a node of the round" "the refusal names c"
assert_grep "$T/st.err" "$T/allow:3: not a numeric address: not-an-address" "a bad line said"
note "on a's own address: uid 65534 refused, root served"
reach a "$A" "$port" 65534 && fail "a local uid 65534 was served on $A"
assert_grep "$T/st.err" "$A:[0-9]*: refused: a local process of uid 65534" "the local refusal"
reach a "$A" "$port" || fail "root on a was refused"

note "the set rewritten and SIGHUP'd: c served, b's open connection dropped"
mkfifo "$T/held"
exec 5<>"$T/held"
bed_run b "$PY" - "$ESV_TEST_DIR" "$A" "$port" "$T/held" <<'PY' &
import sys
sys.path.insert(0, sys.argv[1])
import storecli
c = storecli.C(int(sys.argv[3]), host=sys.argv[2], timeout=30)
with open(sys.argv[4], "w") as f:
    f.write("held\n")
print("dropped" if c.closed() else "open")
PY
held=$!
read -r -t 10 -u 5 line || fail "b's held connection did not start"
printf '%s\n' "$C" >"$T/allow.new" && mv "$T/allow.new" "$T/allow"
kill -HUP "$spid"
wait_for -t 10 eval '[ "$(grep -c "remote addresses allowed" "$T/st.err")" -ge 2 ]' ||
	fail "no reload: $(cat "$T/st.err")"
wait "$held" || fail "b's held connection"
assert_grep "$T/st.err" "$B:[0-9]*: no longer a node of the round: closing" "b's connection dropped"
reach c "$A" "$port" || fail "c was refused after the reload: $(cat "$T/st.err")"
reach b "$A" "$port" && fail "b was served after the reload"
esv_alive "$spid" || fail "esv-stored did not survive the reload"
note "an unreadable file leaves the set as it was"
rm "$T/allow"
kill -HUP "$spid"
wait_for -t 10 grep -q "$T/allow: unable to read (the allowed set is unchanged)" "$T/st.err" ||
	fail "the missing file not said: $(tail -3 "$T/st.err")"
reach c "$A" "$port" || fail "c was refused once the file was gone"

note "--max-conns-per-addr 3: a fourth from b refused, a's own not capped"
printf '%s\n' "$B" >"$T/allow.cap"
bed_run a "$STORED" --listen "0.0.0.0:0" --allow-file "$T/allow.cap" \
    --max-conns-per-addr 3 >"$T/cap.out" 2>"$T/cap.err" &
ESV_SUP_PIDS+=("$!")
wait_for test -s "$T/cap.out" || fail "esv-stored (cap) did not start: $(cat "$T/cap.err")"
cport=$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$T/cap.out")
# conns HOST ADDR N: N connections from HOST, all served (0) or the last
# refused (1), the others served.
conns()
{
	bed_run "$1" "$PY" - "$ESV_TEST_DIR" "$2" "$cport" "$3" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import storecli
n = int(sys.argv[4])
held = [storecli.C(int(sys.argv[3]), host=sys.argv[2]) for _ in range(n - 1)]
try:
    held.append(storecli.C(int(sys.argv[3]), host=sys.argv[2]))
except (EOFError, ConnectionError, BrokenPipeError):
    sys.exit(1)
for c in held:
    c.ping()
PY
}
conns b "$A" 4 && fail "a fourth connection from b was served"
assert_grep "$T/cap.err" "$B:[0-9]*: refused: 3 connections from $B already" "the cap said"
conns b "$A" 3 || fail "three from b were not all served: $(tail -3 "$T/cap.err")"
conns a "$A" 6 || fail "a's own connections were capped: $(tail -3 "$T/cap.err")"

note "a job of two nodes: the round's members reach the store, o does not"
make_token "$T/token"
rport=29400
conf="token_file=$T/token,last_call_timeout=1s,join_timeout=30s"
cat >"$T/w.sh" <<'EOS'
#!/bin/sh
exec sleep 600
EOS
chmod +x "$T/w.sh"
jobnode()
{
	bed_sup "$1" "$T/$1" --rdzv-backend esv --rdzv-endpoint "$A:$rport" \
	    --rdzv-id netjob --nnodes 2:3 --rdzv-conf "$conf" \
	    --shutdown-timeout 3s --agent-store --nproc-per-node 1 \
	    --no-python -- "$T/w.sh"
}
# rank0 N: the node whose store serves a round of N nodes; its address
# and port in $saddr and $sport.
rank0()
{
	local h where
	for h in a b c; do
		[ -f "$T/$h/supervise/state" ] || continue
		[ "$(kv "$T/$h/supervise/state" group_world_size)" = "$1" ] || continue
		where=$(kv "$T/$h/supervise/state" store_listen)
		[ -n "$where" ] || continue
		r0=$h saddr=${where%:*} sport=${where##*:}
		return 0
	done
	return 1
}
jobnode a
wait_for -t 10 grep -q 'hosting esv-rdzv' "$T/a.err" ||
	fail "a does not host esv-rdzv: $(cat "$T/a.err")"
jobnode b
wait_for -t 30 rank0 2 || fail "no store for a round of 2: a: $(tail -5 "$T/a.err") b: $(tail -5 "$T/b.err")"
note "round of 2: group rank 0 is $r0, its store at $saddr:$sport"
other=a
[ "$r0" = a ] && other=b
reach "$other" "$saddr" "$sport" || fail "member $other was refused: $(cat "$T/$r0.err")"
reach o "$saddr" "$sport" && fail "host o, in no round, was served"
wait_for -t 5 grep -q "$O:[0-9]*: refused: not a node of the round" "$T/$r0.err" ||
	fail "no refusal of o in $r0's log: $(tail -5 "$T/$r0.err")"

note "node c joins: the new round's store serves c, not o"
jobnode c
wait_for -t 30 rank0 3 || fail "no store for a round of 3: $(tail -5 "$T/c.err")"
note "round of 3: group rank 0 is $r0, its store at $saddr:$sport"
reach c "$saddr" "$sport" || fail "c, now a member, was refused: $(tail -5 "$T/$r0.err")"
reach o "$saddr" "$sport" && fail "host o was served in the round of 3"
allow=$T/$r0/supervise/store.allow
for h in $A $B $C; do
	grep -qx "$h" "$allow" || fail "$h not in $allow: $(cat "$allow")"
done
grep -qx "$O" "$allow" && fail "o in $allow"
args=$(pgrep -a -x esv-stored | grep -F -- "--allow-file $allow" | head -1)
case $args in
*"--max-conns-per-addr 512 "*) ;;
*) fail "rank 0's esv-stored: $args" ;;
esac

note "a job of one node on o: its store on loopback only"
bed_sup o "$T/one" --nnodes 1 --agent-store --nproc-per-node 1 \
    --no-python -- "$T/w.sh"
wait_for -t 15 eval '[ -n "$(kv "$T/one/supervise/state" store_listen)" ]' ||
	fail "no store for the one-node job: $(cat "$T/one.err")"
where=$(kv "$T/one/supervise/state" store_listen)
assert_eq "${where%:*}" 127.0.0.1 "the one-node store's address"
assert_eq "$(tr '\0' '\n' <"/proc/$(kv "$T/one/supervise/state" pids | awk '{print $1}')/environ" | sed -n 's/^MASTER_ADDR=//p')" \
    127.0.0.1 "the workers' MASTER_ADDR"
reach a "$O" "${where##*:}" && fail "the one-node store answered on $O from a"
reach o 127.0.0.1 "${where##*:}" || fail "the one-node store refused its own host"
exit 0
