#!/bin/bash
# supervise/state lists the pids of the live workers (esv-control(5)): a
# worker that succeeds while the others run leaves the list at once.  It
# once stayed there until some other change rewrote the file (for ever, in
# a quiet job), so that a reader was told of a pid that might by then be
# another process's; esv-healthd's /status showed the same.
. "$(dirname "$0")/lib.sh"
esv_setup 60
# Worker 1 exits 0 once the start's reports are surely written; worker 0
# runs on.
cat >"$T/w.sh" <<'EOS'
#!/bin/sh
[ "$LOCAL_RANK" = 0 ] && exec sleep 30
sleep 1
exit 0
EOS
chmod +x "$T/w.sh"
start_sup "$T/job" --nproc-per-node 2 --no-python -- "$T/w.sh"
wait_for -t 10 eval '[ "$(kv "$T/job/workers/1/state" state)" = succeeded ]' ||
	fail "worker 1 did not succeed: $(cat "$T/job.err")"
w0=$(kv "$T/job/workers/0/state" pid)
# The worker's state is written first, supervise/state right after it.
wait_for -t 5 eval '[ "$(kv "$T/job/supervise/state" pids)" = "$w0" ]' ||
	fail "supervise/state still lists pids '$(kv "$T/job/supervise/state" pids)' with only worker 0 ($w0) alive"
stop_sup
exit 0
