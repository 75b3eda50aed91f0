# Separate hosts on one machine, for the tests that cross a network:
# one network namespace per host, joined by a bridge that lives in a
# namespace of its own (the "switch"), so that nothing is added to the
# machine's own namespace and two tests can use the same addresses at once.
# Source it after lib.sh (and esv_setup); it needs root and iproute2 and
# skips (77) without them.
#	bed_init		make the switch; trap the bed's removal
#	bed_host NAME [N]	a host NAME at 198.18.0.N/24 (default: the next
#			free N from 1); sets BED_ADDR_<NAME>
#	bed_addr NAME		print its address
#	bed_run NAME CMD...	run CMD on host NAME: its network namespace,
#			its own UTS namespace with hostname NAME.  In the
#			background as any command (`bed_run a cmd &`)
#	bed_sup NAME JOBDIR [OPTIONS...] [-- ENTRY...]
#			start_sup on host NAME
#	bed_link NAME down|up	cut or heal NAME's cable at the switch: no
#			FIN, no RST, only silence, as a pulled cable
#	bed_ns NAME		print the namespace's name (for ip -n, nsenter)
#	bed_cleanup		remove every namespace of the bed (the trap
#			bed_init sets calls it before esv_cleanup)
[ "$(id -u)" = 0 ] || skip "separate hosts (network namespaces) need root"
command -v ip >/dev/null || skip "ip(8) (iproute2) is not installed"
command -v unshare >/dev/null || skip "unshare(1) is not installed"

BED_TAG=esv$$
BED_SW=$BED_TAG-sw
BED_HOSTS=()
BED_NEXT=1

bed_cleanup()
{
	local h
	for h in "${BED_HOSTS[@]}"; do
		ip netns del "$BED_TAG-$h" 2>/dev/null
	done
	ip netns del "$BED_SW" 2>/dev/null
	return 0
}

bed_init()
{
	ip netns add "$BED_SW" 2>"$T/bed.err" ||
	    skip "ip netns add refused: $(cat "$T/bed.err")"
	trap 'rc=$?; esv_kill_tagged; bed_cleanup; (exit $rc); esv_cleanup' EXIT
	ip -n "$BED_SW" link add br0 type bridge &&
	ip -n "$BED_SW" link set br0 up &&
	ip -n "$BED_SW" link set lo up || fail "making the switch"
}

bed_ns()
{
	echo "$BED_TAG-$1"
}

bed_host()
{
	local name=$1 n=${2:-$BED_NEXT} ns=$BED_TAG-$1
	# Interface names: at most 15 bytes, unique in the switch.
	local sw=s$$${#BED_HOSTS[@]}
	ip netns add "$ns" || fail "ip netns add $ns"
	BED_HOSTS+=("$name")
	ip link add "$sw" netns "$BED_SW" type veth peer name eth0 netns "$ns" \
	    2>"$T/bed.err" || skip "veth refused: $(cat "$T/bed.err")"
	ip -n "$BED_SW" link set "$sw" master br0 &&
	ip -n "$BED_SW" link set "$sw" up &&
	ip -n "$ns" addr add "198.18.0.$n/24" dev eth0 &&
	ip -n "$ns" link set lo up &&
	ip -n "$ns" link set eth0 up || fail "configuring host $name"
	eval "BED_ADDR_$name=198.18.0.$n"
	eval "BED_SWIF_$name=$sw"
	[ "$n" -ge "$BED_NEXT" ] && BED_NEXT=$((n + 1))
	return 0
}

bed_addr()
{
	eval "echo \$BED_ADDR_$1"
}

bed_run()
{
	local name=$1
	shift
	ip netns exec "$BED_TAG-$name" unshare --uts \
	    sh -c 'hostname "$0" && exec "$@"' "$name" "$@"
}

bed_sup()
{
	local name=$1
	shift
	SUP_PREFIX=(ip netns exec "$BED_TAG-$name" unshare --uts
	    sh -c 'hostname "$0" && exec "$@"' "$name")
	start_sup "$@"
	SUP_PREFIX=()
}

bed_link()
{
	local sw
	sw=$(eval "echo \$BED_SWIF_$1")
	ip -n "$BED_SW" link set "$sw" "$2" || fail "link of $1 $2"
}
