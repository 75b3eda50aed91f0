#!/bin/bash
# Jobs of 3 and then 4 nodes lose a node to kill -9 at random moments (of
# the supervisor alone, its guardian then killing its workers; or of every
# process of the node, as when a host dies), and a new node takes its
# place, sometimes before the last round has formed.  A sampler reads the
# environment of every live worker every 5 ms: no global rank may ever be
# held by two nodes or two rounds at once.  At the end the job runs one
# round of all its nodes.  STRESS_KILLS sets the kills per job (6).
. "$(dirname "$0")/lib.sh"
esv_setup 170
. "$ESV_TEST_DIR/rdzv.sh"

KILLS=${STRESS_KILLS:-6}
SAMPLER="$PY $ESV_TEST_DIR/rank_sampler.py"
start_rdzv
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

# crash ERE: kill -9 every process of the nodes whose names match ERE
# (supervisor, guardian, workers and their children): they all carry
# RZ_NODE=NAME in the env.  Stopped first and killed until none is left,
# so that none outlives the others by the time it takes to go through the
# list, nor is forked meanwhile, as when a host dies.
crash()
{
	local f pid pids tries
	for tries in 1 2 3 4 5 6 7 8 9 10; do
		pids=()
		for f in $(grep -lzxE "RZ_NODE=($1)" /proc/[0-9]*/environ \
		    2>/dev/null); do
			pid=${f#/proc/}
			pid=${pid%/environ}
			grep -qzxF "ESV_ITEST_TAG=$T" "$f" 2>/dev/null &&
			    pids+=("$pid")
		done
		[ ${#pids[@]} -gt 0 ] || return 0
		kill -STOP "${pids[@]}" 2>/dev/null
		kill -KILL "${pids[@]}" 2>/dev/null
	done
}

run_job()
{
	local n=$1 job=job$1 nodes=() i k victim name pid out=$T/sample.$1
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
