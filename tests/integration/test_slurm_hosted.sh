#!/bin/bash
# Under a real Slurm (issue 34, defect 3): a step whose esv-supervise hosts
# esv-rdzv (--rdzv-backend c10d, an endpoint of this host).  The hosted
# server used to outlive the step by 10 s, holding its port and its
# stdout (a step of a 0 s job took 10.1 s), and a cancel made the stopping
# supervisor start anew the esv-rdzv Slurm had just killed (the job stayed
# COMPLETING while it lived).  A Slurm of its own: munged, slurmctld and
# slurmd in a network namespace, every file under $T.
. "$(dirname "$0")/lib.sh"
esv_setup 150
[ "$(id -u)" = 0 ] || skip "a Slurm of its own needs root"
for c in munged slurmctld slurmd srun squeue scancel sinfo ip unshare; do
	command -v "$c" >/dev/null || skip "$c is not installed"
done
NS=esv-slurm-$$
S=$T/slurm
ADDR=10.99.0.1
ip netns add "$NS" 2>"$T/ns.err" || skip "ip netns add refused: $(cat "$T/ns.err")"
slurm_down()
{
	local f
	for f in "$S"/slurmd.pid "$S"/slurmctld.pid "$S"/munged.pid; do
		[ -s "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	ip netns del "$NS" 2>/dev/null
	return 0
}
trap 'rc=$?; esv_kill_tagged; slurm_down; (exit $rc); esv_cleanup' EXIT
# Slurm resolves with AI_ADDRCONFIG: an address besides loopback.
ip -n "$NS" link add vs0 type veth peer name vs1 2>"$T/ns.err" ||
    skip "veth refused: $(cat "$T/ns.err")"
ip -n "$NS" addr add "$ADDR/24" dev vs0 && ip -n "$NS" link set lo up &&
ip -n "$NS" link set vs0 up && ip -n "$NS" link set vs1 up ||
    fail "configuring $NS"

mkdir -p "$S/spool" "$S/state"
head -c 1024 /dev/urandom >"$S/munge.key"
chmod 600 "$S/munge.key"
printf '127.0.0.1 localhost\n%s esvnode\n' "$ADDR" >"$S/hosts"
if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
	printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' >"$S/cgroup.conf"
else
	printf 'CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n' >"$S/cgroup.conf"
fi
plugins=$(dirname "$(find /usr/lib* -name 'proctrack_linuxproc.so' 2>/dev/null | head -1)")
[ "$plugins" != . ] || skip "Slurm's plugins not found"
cat >"$S/slurm.conf" <<EOF
ClusterName=esvtest
SlurmctldHost=esvnode($ADDR)
AuthType=auth/munge
AuthInfo=socket=$S/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/linear
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
PluginDir=$plugins
NodeName=esvnode NodeAddr=$ADDR CPUs=$(nproc) State=UNKNOWN
PartitionName=p Nodes=esvnode Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$S/slurm.conf
# sl CMD...: CMD on the Slurm host (its namespace, host name, /etc/hosts).
sl()
{
	ip netns exec "$NS" unshare --uts --mount --propagation private \
	    sh -c 'hostname esvnode && mount --bind "$0" /etc/hosts &&
	    exec "$@"' "$S/hosts" "$@"
}
sl munged --force --socket="$S/munge.sock" --key-file="$S/munge.key" \
    --pid-file="$S/munged.pid" --seed-file="$S/munge.seed" \
    --log-file="$S/munged.log" || skip "munged: $(cat "$S/munged.log")"
sl slurmctld -f "$SLURM_CONF" && sl slurmd -f "$SLURM_CONF" ||
    skip "Slurm did not start: $(tail -5 "$S"/*.log)"
wait_for -t 20 eval '[ "$(sl sinfo -h -o %t 2>/dev/null)" = idle ]' ||
    skip "no idle Slurm node: $(tail -5 "$S"/slurmd.log "$S"/slurmctld.log)"
# A listener on the rendezvous port, on the Slurm host.
port_taken()
{
	[ -n "$(ip netns exec "$NS" ss -ltnH 'sport = :29400')" ]
}
step()
{
	local job=$1
	shift
	sl srun -N1 -n1 "$SUP" --rdzv-backend c10d --rdzv-endpoint \
	    "$ADDR:29400" --rdzv-id "$job" --nnodes 1 --shutdown-timeout 3s \
	    --no-python "$T/$job" -- "$@"
}

note "a step of a 0 s job: nothing of it is left when srun returns"
step zero /bin/true >"$T/zero.out" 2>&1
rc=$?
t_ret=$EPOCHREALTIME
assert_eq $rc 0 "srun's exit status: $(cat "$T/zero.out")"
assert_grep "$T/zero.out" 'hosting esv-rdzv'
# srun returns once nothing holds the step's output: the supervisor's
# exit, not the 10 s a leftover esv-rdzv took to go idle.
t_exit=$(event_time "$T/zero" supervisor.exit)
[ -n "$t_exit" ] || fail "no supervisor.exit event in $T/zero"
late=$(awk -v a="$t_ret" -v b="$t_exit" 'BEGIN { printf "%d", (a - b) * 1000 }')
note "srun returned $late ms after the supervisor's exit"
[ "$late" -lt 5000 ] || fail "srun returned $late ms after the supervisor's exit"
! port_taken || fail "port 29400 still taken after the step: $(pgrep -af esv-rdzv)"

note "scancel while the workers take their time to stop"
cat >"$T/slow.sh" <<'EOF'
#!/bin/sh
trap '' TERM
while :; do sleep 0.1; done
EOF
chmod +x "$T/slow.sh"
step cancel "$T/slow.sh" >"$T/cancel.out" 2>&1 &
srun_pid=$!
wait_for -t 20 grep -q 'started 1 worker' "$T/cancel.out" ||
    fail "the step did not start: $(cat "$T/cancel.out")"
jid=$(sl squeue -h -o %i | head -1)
[ -n "$jid" ] || fail "no job in squeue"
t0=$(date +%s%3N)
sl scancel "$jid"
# The supervisor's 3 s --shutdown-timeout, and Slurm's own pace.
wait_for -t 30 eval '[ -z "$(sl squeue -h -j '"$jid"' -o %T 2>/dev/null)" ]' ||
    fail "job $jid still $(sl squeue -h -j "$jid" -o %T): $(cat "$T/cancel.out")"
note "job $jid gone $(($(date +%s%3N) - t0)) ms after scancel"
wait "$srun_pid"
assert_eq "$(count_lines "$T/cancel.out" 'hosting esv-rdzv')" 1 \
    "esv-rdzv started during the step"
! port_taken || fail "port 29400 still taken after the cancel"
exit 0
