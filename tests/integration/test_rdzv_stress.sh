#!/bin/bash
# Jobs of 3 and then 4 nodes lose a node to kill -9 at random moments (of
# the supervisor alone, its guardian then killing its workers; or of every
# process of the node, as when a host dies), half the time just after a
# worker of another node was killed, and a new node takes its place,
# sometimes before the last round has formed.  A sampler reads the
# environment of every live worker every 5 ms: no global rank may ever be
# held by two nodes or two rounds at once.  At the end the job runs one
# round of all its nodes.  STRESS_KILLS sets the kills per job (6).
. "$(dirname "$0")/lib.sh"
esv_setup 170
. "$ESV_TEST_DIR/rdzv.sh"

KILLS=${STRESS_KILLS:-6}
SAMPLER="$PY $ESV_TEST_DIR/rank_sampler.py"
# Every loss here is a kill -9, seen at once by its connection's end.  A
# node a crash has stopped (and not yet killed), or a supervisor starved
# of the CPU on a loaded machine, must not be taken for lost by its
# heartbeat while its workers live: that is a partition, not this test.
start_rdzv --heartbeat 2000
RZ_CONF="token_file=$T/token,last_call_timeout=0.3s,join_timeout=60s"

sampled()
{
	$SAMPLER check "$T" "$@" >/dev/null
}

# ms N: a random delay of 0..N ms, in seconds for sleep.
ms()
{
	printf '0.%03d' $((RANDOM % ($1 + 1)))
}

# node_pids ERE: pids of the processes of the nodes whose names match ERE
# (supervisor, guardian, workers and their children): they all carry
# RZ_NODE=NAME in the env.
node_pids()
{
	local f pid
	for f in $(grep -lzxE "RZ_NODE=($1)" /proc/[0-9]*/environ 2>/dev/null); do
		pid=${f#/proc/}
		pid=${pid%/environ}
		grep -qzxF "ESV_ITEST_TAG=$T" "$f" 2>/dev/null && echo "$pid"
	done
}

# worker_pid NAME: a worker of node NAME (a process holding a RANK).
worker_pid()
{
	local pid
	for pid in $(node_pids "$1"); do
		grep -qz '^RANK=' "/proc/$pid/environ" 2>/dev/null &&
		    { echo "$pid"; return; }
	done
}

# crash ERE: kill -9 every process of those nodes at once, as when a host
# dies.  Going through /proc takes a while on a loaded machine: every
# process found is stopped, until a pass finds no new one (a stopped
# process forks no more), and only then are they all killed, so that none
# outlives the others, nor its supervisor.
crash()
{
	local pid pids=() seen=" " new tries
	for tries in 1 2 3 4 5 6 7 8 9 10; do
		new=0
		for pid in $(node_pids "$1"); do
			case $seen in *" $pid "*) continue ;; esac
			seen="$seen$pid "
			pids+=("$pid")
			new=1
		done
		[ "$new" = 0 ] && break
		kill -STOP "${pids[@]}" 2>/dev/null
	done
	[ ${#pids[@]} -gt 0 ] && kill -KILL "${pids[@]}" 2>/dev/null
	wait_for -t 5 eval '[ -z "$(node_pids "'"$1"'")" ]' ||
	    fail "processes of $1 outlived kill -9: $(node_pids "$1")"
}

run_job()
{
	local n=$1 job=job$1 nodes=() i k victim other name pid out=$T/sample.$1
	RZ_JOB=$job
	RZ_NNODES=1:$n
	for ((i = 0; i < n; i++)); do
		nodes+=("j${n}n$i")
		node "j${n}n$i" --nproc-per-node 2 --max-restarts 1000
	done
	wait_for -t 30 sampled --nodes "$(IFS=,; echo "${nodes[*]}")" \
	    --world $((2 * n)) || fail "job of $n: no first round: $($SAMPLER check "$T")"
	rm -f "$T/stop.$n"
	$SAMPLER sample "$T" "$T/stop.$n" "$out" &
	ESV_SUP_PIDS+=("$!")
	for ((k = 1; k <= KILLS; k++)); do
		i=$((RANDOM % n))
		victim=${nodes[$i]}
		sleep "$(ms 400)"
		pid=$(eval echo "\$NODE_PID_$victim")
		# Half the time a worker of another node fails about then:
		# its group rejoins while the RESTART of the loss is on its
		# way (the race of a node joining twice).
		if ((RANDOM % 2)); then
			other=${nodes[$(((i + 1 + RANDOM % (n - 1)) % n))]}
			note "job of $n, kill $k: a worker of $other fails"
			kill -KILL "$(worker_pid "$other")" 2>/dev/null
			sleep "$(ms 50)"
		fi
		if ((RANDOM % 2)); then
			note "job of $n, kill $k: kill -9 the supervisor of $victim"
			kill -KILL "$pid"
		else
			note "job of $n, kill $k: $victim crashes"
			crash "$victim"
		fi
		name=j${n}n${i}k$k
		nodes[$i]=$name
		node "$name" --nproc-per-node 2 --max-restarts 1000
		# Half the time the next kill comes before the round forms.
		((RANDOM % 2)) && continue
		wait_for -t 30 sampled --nodes "$(IFS=,; echo "${nodes[*]}")" \
		    --world $((2 * n)) ||
		    fail "job of $n after kill $k: $($SAMPLER check "$T")"
	done
	wait_for -t 30 sampled --nodes "$(IFS=,; echo "${nodes[*]}")" \
	    --world $((2 * n)) || fail "job of $n at the end: $($SAMPLER check "$T")"
	touch "$T/stop.$n"
	wait_for -t 10 test -s "$out" || fail "the sampler of job $n did not end"
	note "job of $n: $(head -1 "$out")"
	grep -q ' violations=0$' "$out" ||
	    fail "job of $n: a rank held twice: $(cat "$out")"
	# A sample every 5 ms plus the scan, over some seconds.
	[ "$(sed -n 's/^samples=\([0-9]*\) .*/\1/p' "$out")" -ge 100 ] ||
	    fail "job of $n: too few samples: $(head -1 "$out")"
	crash "j${n}n.*"
}

run_job 3
run_job 4
exit 0
