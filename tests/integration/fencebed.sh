# The fencing bed of the rendezvous tests and of bench/fence.sh, on top of
# lib.sh, rdzv.sh and netbed.sh (source those first): esv-rdzv on a host
# of its own ("rz"), three nodes a, b and c on theirs, --nnodes 2:3, 2
# workers each running workers/fence_worker.sh (records to $T/rec; a
# node's workers ignore SIGTERM while $T/stubborn.NODE exists), the
# default lease, --shutdown-timeout 60 s so that only a fence's SIGKILL
# ends stubborn workers in time.
#	fence_bed JOB JOIN_TIMEOUT	set it up and wait for the round of
#			world 6; sets EP and pid_a, pid_b, pid_c
fence_bed()
{
	local job=$1 join=$2 n
	bed_init
	bed_host rz
	for n in a b c; do
		bed_host $n
	done
	bed_rdzv rz
	for n in a b c; do
		REC=$T/rec RZ_NODE=$n RZ_STOP_FLAG=$T/stop \
		    FENCE_STUBBORN=$T/stubborn.$n bed_sup "$n" "$T/$n" \
		    --rdzv-backend esv --rdzv-endpoint "$EP" --rdzv-id "$job" \
		    --nnodes 2:3 --nproc-per-node 2 \
		    --rdzv-conf "token_file=$T/token,last_call_timeout=1s,join_timeout=$join" \
		    --shutdown-timeout 60s --no-python -- "$WORKERS/fence_worker.sh"
		eval "pid_$n=\$SUP_PID"
	done
	wait_for -t 30 eval '[ "$(count_lines "$T/rec" " world=6 ")" -ge 6 ]' ||
	    fail "no round of 3 nodes: $(cat "$T/a.err" "$T/rdzv.err")"
}
