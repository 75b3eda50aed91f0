#!/bin/bash
# esv-run: torchrun's command line, unchanged.  The script comes first with
# its own arguments after it (no JOBDIR, no --), both spellings of the
# options and PET_* work, the job directory is made from the run id and
# printed, and esv-run execs the agent: no process of ours between.
. "$(dirname "$0")/lib.sh"
esv_setup 90

RUN=$ESV_BIN_DIR/esv-run
[ -x "$RUN" ] || skip "$RUN is not built"
export XDG_RUNTIME_DIR=$T/xdg
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
export ESV_ITEST_TAG=$T

# A worker that records its ranks and arguments, one file per rank.
cat >"$T/w.sh" <<'W'
#!/bin/sh
echo "rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK args=$*" >"$REC.$RANK"
W
chmod +x "$T/w.sh"

note "script first, its own options after it, both spellings"
REC=$T/a "$RUN" --nproc_per_node 2 --no-python --max-restarts=0 \
    --start_method spawn --run_path "$T/w.sh" --lr 0.1 --nproc_per_node=9 \
    >"$T/a.out" 2>"$T/a.err" &
pid=$!
wait "$pid"
assert_eq $? 0 "esv-run's exit status: $(cat "$T/a.err")"
assert_eq "$(cat "$T/a.0")" "rank=0 world=2 local=0 args=--lr 0.1 --nproc_per_node=9" "rank 0"
assert_eq "$(cat "$T/a.1")" "rank=1 world=2 local=1 args=--lr 0.1 --nproc_per_node=9" "rank 1"
assert_grep "$T/a.err" "--start-method spawn: ignored"
# Where it ran: told, under XDG_RUNTIME_DIR/esv/, with torch's default id
# "none" made unique by the agent's pid, which is esv-run's own (exec).
jd=$(sed -n 's/^esv-supervise: job directory \([^ ]*\) .*/\1/p' "$T/a.err")
assert_eq "$jd" "$XDG_RUNTIME_DIR/esv/none.$pid" "the job directory"
assert_eq "$(kv "$jd/supervise/state" supervisor_pid)" "$pid" "the agent's pid is esv-run's"
assert_eq "$(kv "$jd/supervise/state" state)" succeeded "the job's state"
assert_grep_F "$T/a.err" "logs in $jd/logs"

note "the run id names the directory; PET_* as torchrun"
REC=$T/b PET_NPROC_PER_NODE=3 PET_RDZV_ID=myjob PET_NO_PYTHON=1 \
    "$RUN" "$T/w.sh" >"$T/b.out" 2>"$T/b.err"
assert_eq $? 0 "esv-run with PET_*: $(cat "$T/b.err")"
assert_file "$XDG_RUNTIME_DIR/esv/myjob/supervise/state"
assert_eq "$(ls "$T"/b.* | grep -c '/b\.[0-9]$')" 3 "workers from PET_NPROC_PER_NODE"
# Not running any more (exit 1), its last state kept.
assert_rc 1 "$CTL" status "$XDG_RUNTIME_DIR/esv/myjob"
assert_grep "$T/out" "succeeded"

note "--jobdir says where"
REC=$T/c "$RUN" --jobdir "$T/mine" --no-python "$T/w.sh" >"$T/c.out" 2>"$T/c.err"
assert_eq $? 0 "esv-run --jobdir: $(cat "$T/c.err")"
assert_eq "$(kv "$T/mine/supervise/state" state)" succeeded "the --jobdir job"

note "-m runs a module, as python3 -u -m"
mkdir -p "$T/mod"
cat >"$T/mod/hello_esv.py" <<'P'
import os, sys
with open(os.environ["REC"] + "." + os.environ["RANK"], "w") as f:
    f.write("module %s %s\n" % (os.environ["WORLD_SIZE"], " ".join(sys.argv[1:])))
P
REC=$T/m PYTHONPATH=$T/mod "$RUN" --nproc-per-node 2 --python "$PY" -m hello_esv --x 1 \
    >"$T/m.out" 2>"$T/m.err"
assert_eq $? 0 "esv-run -m: $(cat "$T/m.err")"
assert_eq "$(cat "$T/m.1")" "module 2 --x 1" "the module's rank 1"

note "--standalone: a fresh run id names the directory"
REC=$T/s "$RUN" --standalone --nnodes 1 --no-python "$T/w.sh" >"$T/s.out" 2>"$T/s.err"
assert_eq $? 0 "esv-run --standalone: $(cat "$T/s.err")"
assert_grep "$T/s.err" "job directory $XDG_RUNTIME_DIR/esv/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12} "

note "bad input: one line, exit 100"
assert_rc 100 "$RUN" --nproc_per_node 0 "$T/w.sh"
assert_eq "$(wc -l <"$T/err")" 1 "error lines"
assert_rc 100 "$RUN" --no-such-option "$T/w.sh"
assert_grep "$T/err" "no-such-option: unknown option"
# torchrun's words typed to esv-supervise: pointed to esv-run.
assert_rc 100 "$SUP" --nproc-per-node 2 "$T/w.sh"
assert_grep "$T/err" "w.sh: a file, not a job directory; to run a script as torchrun does, use esv-run"
assert_rc 0 "$RUN" --help
assert_grep "$T/out" "esv-run"
exit 0
