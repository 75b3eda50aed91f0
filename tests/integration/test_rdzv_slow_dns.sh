#!/bin/bash
# A rendezvous host name whose DNS server never answers does not hold up
# the supervisor: the lookup runs in a child (rendezvous/client/lookup.c)
# while the loop goes on.  In a private mount and network namespace,
# /etc/resolv.conf names a resolver on 127.0.0.1 that takes every query
# and answers none (glibc then waits 5 s per try); while the lookup is
# in flight, `esv-ctl down` must be acted on at once, and the supervisor
# must stop on SIGTERM.
. "$(dirname "$0")/lib.sh"
esv_setup 90
. "$ESV_TEST_DIR/rdzv.sh"

[ "$(id -u)" = 0 ] || skip "namespaces need root"
command -v unshare >/dev/null || skip "unshare(1) is not installed"
command -v ip >/dev/null || skip "ip(8) (iproute2) is not installed"
make_token "$T/token"
printf 'nameserver 127.0.0.1\noptions timeout:5 attempts:2\n' >"$T/resolv.conf"
cat >"$T/dns.py" <<'P'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
open(sys.argv[1], "w").close()
while True:
    data, peer = s.recvfrom(512)
    with open(sys.argv[2], "a") as f:
        f.write("query\n")
P

cat >"$T/inner.sh" <<'I'
T=$1
. "$ESV_TEST_DIR/lib.sh"
ip link set lo up || fail "lo up"
mount --bind "$T/resolv.conf" /etc/resolv.conf || exit 77
"$PY" "$T/dns.py" "$T/dns.up" "$T/dns.log" &
wait_for -t 5 test -e "$T/dns.up" || fail "the silent resolver did not start"
"$SUP" --rdzv-backend esv --rdzv-endpoint esv-slow-dns.test:29400 \
    --rdzv-id slow --nnodes 1:2 --rdzv-conf "token_file=$T/token" \
    --no-python "$T/job" -- /bin/true >"$T/job.out" 2>"$T/job.err" &
sup=$!
# The lookup is in flight: the resolver has its query.
wait_for -t 10 test -s "$T/dns.log" || fail "no DNS query: $(cat "$T/job.err")"
t0=$(date +%s%N)
"$CTL" down "$T/job" >/dev/null || fail "esv-ctl down"
"$CTL" wait down -t 3 "$T/job" >/dev/null ||
    fail "down not acted on within 3 s while the lookup hangs: $(cat "$T/job.err")"
echo "down acted on $((($(date +%s%N) - t0) / 1000000)) ms after it was asked, the lookup still hanging" >"$T/down.ms"
kill -TERM "$sup"
wait_for -t 10 eval '! esv_alive '"$sup" || fail "the supervisor did not stop on SIGTERM"
wait "$sup"
exit 0
I
ESV_TEST_DIR=$ESV_TEST_DIR SUP=$SUP CTL=$CTL PY=$PY unshare -mn bash "$T/inner.sh" "$T"
rc=$?
[ "$rc" = 77 ] && skip "mount --bind /etc/resolv.conf refused in a mount namespace"
assert_eq "$rc" 0 "the run in the namespaces"
note "$(cat "$T/down.ms")"
exit 0
