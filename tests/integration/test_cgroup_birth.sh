#!/bin/bash
# Workers are born in their cgroups (clone3 with CLONE_INTO_CGROUP), and
# where that cannot be, each moves itself there; either way each worker
# is in its own cgroup and nothing else changes:
#  - born: no worker moves, also at a restart after a cgroup.kill (a
#    child born into a cgroup whose kill count differs from its parent's
#    is killed at birth on Linux 6.18: such a restart needs new cgroups);
#  - a supervisor whose own cgroup counted a cgroup.kill: its first
#    worker dies at birth; it says so once and moves the workers instead,
#    that worker included;
#  - clone3 refused by a seccomp filter (ENOSYS, as container runtimes
#    do): the workers move.
. "$(dirname "$0")/lib.sh"
esv_setup 150

MNT=$(cgroup2_mount)
[ -n "$MNT" ] || skip "no cgroup2 mount"

# The worker records the cgroup it runs in (its child grep's, the same)
# and ignores SIGTERM: a stop ends with SIGKILL and cgroup.kill after
# the shutdown timeout.
WORKER='grep "^0::" /proc/self/cgroup > "$1/cg.$LOCAL_RANK"
trap "" TERM
while :; do sleep 1; done'

# check_cgroups JOB: each of its 2 workers recorded its own cgroup.
check_cgroups()
{
	local j=$1 cg i
	wait_for -t 20 eval '[ -s "$T/cg.0" ] && [ -s "$T/cg.1" ]' ||
	    fail "the workers did not start: $(cat "$SUP_ERR")"
	# The workers can write before the supervisor's first state does
	# (CI's ASan build, section 2, where the first child dies at birth).
	wait_for -t 20 eval '[ -n "$(kv "$j/supervise/state" cgroup)" ]' ||
	    fail "no cgroup in $j/supervise/state: $(cat "$SUP_ERR")"
	cg=$(kv "$j/supervise/state" cgroup)
	for i in 0 1; do
		assert_eq "$(cat "$T/cg.$i")" "0::${cg#"$MNT"}/workers/$i" \
		    "the cgroup of worker $i"
	done
	rm -f "$T"/cg.*
}

note "born in their cgroups, also after a cgroup.kill"
OPTS=(--no-python --nproc-per-node 2 --shutdown-timeout 1s)
start_sup "$T/a" "${OPTS[@]}" -- sh -c "$WORKER" sh "$T"
wait_for -t 20 eval '[ -n "$(kv "$T/a/supervise/state" containment)" ]' ||
    fail "no state: $(cat "$SUP_ERR")"
[ "$(kv "$T/a/supervise/state" containment)" = cgroup2 ] ||
    skip "no cgroup containment here: $(kv "$T/a/supervise/state" containment_why)"
check_cgroups "$T/a"
printf r >"$T/a/supervise/control"
wait_for -t 20 grep -q 'sending SIGKILL' "$SUP_ERR" || fail "no SIGKILL at the restart: $(cat "$SUP_ERR")"
check_cgroups "$T/a"
assert_no_grep "$SUP_ERR" 'moves itself' "a worker moved: not born in its cgroup"
stop_sup

note "the supervisor's cgroup counted a cgroup.kill: the first child dies at birth, the workers move"
KCG=$MNT/esv-test-killed.$$
mkdir "$KCG" || fail "mkdir $KCG"
trap 'rc=$?; rmdir "$KCG" 2>/dev/null; (exit $rc); esv_cleanup' EXIT
[ -z "$(cat "$KCG/cgroup.controllers")" ] ||
    skip "$KCG has controllers: the supervisor would leave it for a leaf of its own"
echo 1 >"$KCG/cgroup.kill"
SUP_PREFIX=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$KCG")
start_sup "$T/b" "${OPTS[@]}" -- sh -c "$WORKER" sh "$T"
check_cgroups "$T/b"
assert_eq "$(grep -c 'killed at birth: each worker moves itself' "$SUP_ERR")" 1 \
    "lines about the child killed at birth"
stop_sup
SUP_PREFIX=()
wait_for -t 10 rmdir "$KCG" 2>/dev/null || fail "$KCG is not empty: $(cat "$KCG/cgroup.procs")"

note "clone3 refused by seccomp: the workers move"
CC=$(command -v cc || command -v gcc) || skip "no C compiler"
cat >"$T/noclone3.c" <<'EOF'
/* noclone3 CMD...: CMD under a seccomp filter that fails clone3 with ENOSYS. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == -1)
		return 111;
	execvp(argv[1], argv + 1);
	return 127;
}
EOF
"$CC" -o "$T/noclone3" "$T/noclone3.c" 2>"$T/cc.err" || fail "noclone3: $(cat "$T/cc.err")"
SUP_PREFIX=("$T/noclone3")
start_sup "$T/c" "${OPTS[@]}" -- sh -c "$WORKER" sh "$T"
check_cgroups "$T/c"
assert_grep "$SUP_ERR" 'clone3 into a cgroup: Function not implemented: each worker moves itself' \
    "the fallback's line"
stop_sup
note ok
exit 0
