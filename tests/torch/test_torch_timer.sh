#!/bin/bash
# torch's FileTimerClient against esv-watchdogd: a step that overruns
# expires(after=1) is killed between 1.0 and 1.1 s after arming and the
# group restarts; the next attempt's step fits in the deadline and the job
# succeeds.  Arming is timed by the request's deadline (less the 1 s).
ESV_TEST_DIR=$(cd "$(dirname "$0")/../integration" && pwd)
TORCH_DIR=$(cd "$(dirname "$0")" && pwd)
. "$ESV_TEST_DIR/lib.sh"
esv_setup 120
TORCH_PY=/usr/bin/python3
"$TORCH_PY" -c 'import torch.distributed.elastic.timer' 2>/dev/null ||
    skip "$TORCH_PY cannot import torch (install python3-torch)"

TORCHELASTIC_ENABLE_FILE_TIMER=1 REC=$T/rec run_sup -t 60 "$T/job" \
    --max-restarts 1 --python "$TORCH_PY" -- "$TORCH_DIR/timer_worker.py"
assert_eq "$SUP_RC" 0 "exit status ($(cat "$T/job.err"))"
read -r _ _ pid0 t0 < <(grep '^arm 0 ' "$T/rec")
assert_eq "$(count_lines "$T/rec" '^done 0 ')" 0 "the overrunning step finished"
assert_eq "$(count_lines "$T/rec" '^done 1 ')" 1 "the second attempt's step"
t1=$(grep -h '"worker.exit"' "$T/job/events.jsonl" | grep "\"pid\": *$pid0[,}]" |
    "$PY" -c 'import json,sys; e=json.load(sys.stdin); print(e["time"], e["signal"])')
read -r t1 sig <<<"$t1"
assert_eq "$sig" SIGKILL "signal of the overrunning worker"
# Arming is the request torch's client writes: its deadline less 1 s
# (torch spends a few ms, more on a loaded machine, before computing it).
dl=$(grep -h '"timer.expired"' "$T/job/events.jsonl" |
    "$PY" -c 'import json,sys; print(json.load(sys.stdin)["deadline"])')
dt=$("$PY" -c "print('%.3f' % ($t1 - ($dl - 1)))")
note "killed ${dt} s after arming ($("$PY" -c "print('%.3f' % ($t1 - $t0))") s after the worker's own stamp before expires())"
"$PY" -c "import sys; sys.exit(0 if 1.0 <= $dt <= 1.1 else 1)" ||
    fail "killed $dt s after arming, not within 1.0-1.1 s"
assert_eq "$(kv "$T/job/supervise/state" restart_count)" 1 "restart count"
assert_eq "$(kv "$T/job/supervise/state" timers_expired)" 1 "timers expired"
exit 0
