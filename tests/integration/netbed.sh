# Separate hosts on one machine, for the tests that cross a network:
# one network namespace per host, joined by a bridge that lives in a
# namespace of its own (the "switch"), so that nothing is added to the
# machine's own namespace and two tests can use the same addresses at once.
# Source it after lib.sh (and esv_setup); it needs root and iproute2 and
# skips (77) without them.
#	bed_init [-f]	make the switch; trap the bed's removal.  With
#			-f (freezable hosts) each host also gets a cgroup
#			v2 of its own, BED_CG/NAME (BED_CG: esv-bed.PID at
#			the root of the cgroup2 mount), that every process
#			bed_run and bed_sup start for it is put in before
#			it runs, and its mount namespace gets the cgroup2
#			mount (ip netns exec mounts a fresh /sys) so that
#			esv-supervise nests its job's cgroups under it and
#			they freeze with it.  Skips (77) without a writable
#			cgroup v2 that can freeze
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
#	bed_rdzv NAME		esv-rdzv on host NAME, port 29400, with a fresh
#			token in $T/token (rdzv.sh: source it first);
#			returns once it listens; sets EP
#	bed_freeze NAME		freeze every process of host NAME at once
#			(its cgroup.freeze; bed_init -f), as a paused VM or
#			a host that lost its CPU: returns once the kernel
#			says the cgroup is frozen (cgroup.events "frozen 1")
#	bed_thaw NAME		thaw it; returns once "frozen 0"
#	bed_cleanup		thaw every host first (a frozen process does
#			not die until thawed), kill what is left in the
#			hosts' cgroups, remove the cgroups and every
#			namespace of the bed (the trap bed_init sets calls
#			it before esv_cleanup).  bed_init -f also sweeps the
#			cgroups of earlier beds whose test is gone (one
#			killed with SIGKILL cannot clean up)
[ "$(id -u)" = 0 ] || skip "separate hosts (network namespaces) need root"
command -v ip >/dev/null || skip "ip(8) (iproute2) is not installed"
command -v unshare >/dev/null || skip "unshare(1) is not installed"

BED_TAG=esv$$
BED_SW=$BED_TAG-sw
BED_HOSTS=()
BED_NEXT=1
BED_CG=

# Thaw, kill and remove one bed's cgroups (D: BED_CG of this bed or of a
# gone one).  Thawed first: a frozen process does not act on SIGKILL.
bed_cg_remove()
{
	local d=$1 h
	[ -d "$d" ] || return 0
	for h in "$d"/*/; do
		[ -e "$h/cgroup.freeze" ] && echo 0 >"$h/cgroup.freeze"
	done 2>/dev/null
	for h in "$d"/*/; do
		[ -e "$h/cgroup.kill" ] && echo 1 >"$h/cgroup.kill"
	done 2>/dev/null
	wait_for -t 5 eval '! grep -qx "populated 1" "$d/cgroup.events"'
	# The job's cgroups of esv-supervise nest below: leaves first.
	find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	[ ! -d "$d" ] || echo "${0##*/}: bed: $d is left" >&2
	return 0
}

bed_cleanup()
{
	local h
	if [ -n "$BED_CG" ]; then
		bed_cg_remove "$BED_CG"
	fi
	for h in "${BED_HOSTS[@]}"; do
		ip netns del "$BED_TAG-$h" 2>/dev/null
	done
	ip netns del "$BED_SW" 2>/dev/null
	return 0
}

# Thaw every host, before anything is killed.
bed_thaw_all()
{
	local h
	[ -n "$BED_CG" ] || return 0
	for h in "${BED_HOSTS[@]}"; do
		echo 0 >"$BED_CG/$h/cgroup.freeze"
	done 2>/dev/null
	return 0
}

bed_init()
{
	local mnt d pid
	trap 'rc=$?; bed_thaw_all; esv_kill_tagged; bed_cleanup; (exit $rc); esv_cleanup' EXIT
	if [ "${1:-}" = -f ]; then
		mnt=$(cgroup2_mount)
		[ -n "$mnt" ] || skip "freezable hosts need a cgroup v2 mount"
		for d in "$mnt"/esv-bed.*; do
			pid=${d##*.}
			[ -d "$d" ] && ! kill -0 "$pid" 2>/dev/null &&
			    bed_cg_remove "$d"
		done
		mkdir "$mnt/esv-bed.$$" 2>"$T/bed.err" ||
		    skip "no writable cgroup v2: $(cat "$T/bed.err")"
		BED_CG=$mnt/esv-bed.$$
		mkdir "$BED_CG/probe" && [ -e "$BED_CG/probe/cgroup.freeze" ] ||
		    skip "no cgroup.freeze in $BED_CG/probe (Linux 5.2)"
		rmdir "$BED_CG/probe"
	fi
	ip netns add "$BED_SW" 2>"$T/bed.err" ||
	    skip "ip netns add refused: $(cat "$T/bed.err")"
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
	if [ -n "$BED_CG" ]; then
		mkdir "$BED_CG/$name" || fail "mkdir $BED_CG/$name"
	fi
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

# The command that runs what follows it on host $1.  With cgroups: into
# the host's cgroup first, for ip netns exec and all it starts; its new
# mount namespace has a fresh /sys, where cgroup2 is mounted again (a
# failure there costs esv-supervise its own cgroups, not the freeze).
bed_prefix()
{
	BED_PREFIX=()
	if [ -n "$BED_CG" ]; then
		BED_PREFIX=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"'
		    "$BED_CG/$1")
	fi
	local mnt='mount -t cgroup2 cgroup2 /sys/fs/cgroup ||
	    echo "bed: no cgroup2 on /sys/fs/cgroup of $0" >&2; '
	[ -n "$BED_CG" ] || mnt=
	BED_PREFIX+=(ip netns exec "$BED_TAG-$1" unshare --uts sh -c
	    "$mnt"'hostname "$0" && exec "$@"' "$1")
}

bed_run()
{
	local name=$1
	shift
	bed_prefix "$name"
	"${BED_PREFIX[@]}" "$@"
}

bed_sup()
{
	local name=$1
	shift
	bed_prefix "$name"
	SUP_PREFIX=("${BED_PREFIX[@]}")
	start_sup "$@"
	SUP_PREFIX=()
}

bed_link()
{
	local sw
	sw=$(eval "echo \$BED_SWIF_$1")
	ip -n "$BED_SW" link set "$sw" "$2" || fail "link of $1 $2"
}

bed_freeze()
{
	[ -n "$BED_CG" ] || fail "bed_freeze $1: the bed is not freezable (bed_init -f)"
	echo 1 >"$BED_CG/$1/cgroup.freeze" || fail "freezing $1"
	wait_for -t 10 grep -qx 'frozen 1' "$BED_CG/$1/cgroup.events" ||
	    fail "$1 not frozen: $(cat "$BED_CG/$1/cgroup.events")"
}

bed_thaw()
{
	echo 0 >"$BED_CG/$1/cgroup.freeze" || fail "thawing $1"
	wait_for -t 10 grep -qx 'frozen 0' "$BED_CG/$1/cgroup.events" ||
	    fail "$1 not thawed: $(cat "$BED_CG/$1/cgroup.events")"
}

bed_rdzv()
{
	make_token "$T/token"
	EP=$(bed_addr "$1"):29400
	bed_run "$1" "$RDZV" --listen "$EP" --token-file "$T/token" \
	    >"$T/rdzv.out" 2>"$T/rdzv.err" </dev/null &
	wait_for -t 10 grep -q '^listening ' "$T/rdzv.out" ||
	    fail "esv-rdzv did not start: $(cat "$T/rdzv.err")"
}
