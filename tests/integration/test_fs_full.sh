#!/bin/bash
# A full file system (issue 19.5): JOBDIR and the logs on a 1 MiB tmpfs
# that the test fills up while 4 tee'd workers fail in a loop.  Afterwards
# every line of events.jsonl parses and the file ends in a newline (a
# torn tail left before the start is taken off); every line of the
# workers' log files is a whole line; events_lost and log_lines_lost
# count what was lost; appending resumes once space is freed (an
# "events.lost" event, the counts in supervise/state).
. "$(dirname "$0")/lib.sh"
esv_setup 120

[ "$(id -u)" = 0 ] || skip "needs root to mount a tmpfs"
FS=$T/fs
mkdir "$FS"
mount -t tmpfs -o size=1m,mode=0755 esv-test "$FS" 2>"$T/mount.err" ||
    skip "unable to mount a tmpfs: $(cat "$T/mount.err")"
# Lazily: the supervisor may still hold files there when this runs.
trap 'rc=$?; umount -l "$FS" 2>/dev/null; (exit $rc); esv_cleanup' EXIT

J=$FS/job
mkdir "$J"
# A line cut short by an earlier supervisor's death: taken off at start.
printf '{"event":"old"}\n{"attempt":1,"ev' >"$J/events.jsonl"
# Not start_sup: its .out and .err would land on the full tmpfs.
"$SUP" --no-python --nproc-per-node 4 -t 3 --max-restarts 100000 \
    --restart-delay 100ms --restart-delay-max 100ms "$J" \
    -- bash -c 'bash "$1" 30; exit 1' talk "$WORKERS/b_talk.sh" \
    >"$T/sup.out" 2>"$T/sup.err" </dev/null &
SUP_PID=$!
ESV_SUP_PIDS+=("$SUP_PID")

starts() { grep -c 'started 4 workers' "$T/sup.err"; }
wait_for -t 10 grep -q 'events.jsonl: its last line was cut short: removed' \
    "$T/sup.err" || fail "the torn tail was not removed: $(cat "$T/sup.err")"
wait_for -t 20 eval '[ "$(starts)" -ge 2 ]' ||
    fail "the group did not start twice: $(cat "$T/sup.err")"

note "filling the file system"
dd if=/dev/zero of="$FS/filler" bs=4k 2>/dev/null
wait_for -t 20 grep -q 'unable to append to .*events.jsonl' "$T/sup.err" ||
    fail "no warning about lost events: $(tail -5 "$T/sup.err")"
wait_for -t 20 grep -q 'unable to write its log' "$T/sup.err" ||
    fail "no warning about lost log lines: $(tail -5 "$T/sup.err")"
# More attempts on the full file system: partial writes at page ends.
n=$(starts)
wait_for -t 30 eval '[ "$(starts)" -ge $((n + 5)) ]' ||
    fail "the group did not go on restarting: $(tail -5 "$T/sup.err")"
# Once per episode: the supervisor's own clean-ups free a little space
# now and then, so there may be several, each ended by its "again" line.
episodes()
{
	local said again
	said=$(grep -c "unable to append to .*events.jsonl" "$T/sup.err")
	again=$(grep -c "appending to .*events.jsonl again" "$T/sup.err")
	[ "$said" -eq "$again" ] || [ "$said" -eq $((again + 1)) ] ||
	    fail "lost events said $said times in $again episodes"
}
episodes

note "freeing space"
rm -f "$FS/filler"
wait_for -t 20 grep -q '"event":"events.lost"' "$J/events.jsonl" ||
    fail "appending did not resume: $(tail -c 600 "$J/events.jsonl")"
wait_for -t 20 eval '[ "$(kv "$J/supervise/state" events_lost)" -gt 0 ]' ||
    fail "events_lost: '$(kv "$J/supervise/state" events_lost)'"
wait_for -t 20 eval '[ "$(kv "$J/supervise/state" log_lines_lost)" -gt 0 ]' ||
    fail "log_lines_lost: '$(kv "$J/supervise/state" log_lines_lost)'"
assert_grep "$T/sup.err" 'appending to .*events.jsonl again: [0-9]+ events? lost'
wait_for -t 20 grep -qE 'writing worker logs again: [0-9]+ lines? lost' \
    "$T/sup.err" || fail "the logs were not written again: $(tail -5 "$T/sup.err")"
stop_sup
episodes
note "events lost: $(kv "$J/supervise/state" events_lost)," \
    "log lines lost: $(kv "$J/supervise/state" log_lines_lost)"

"$PY" - "$J/events.jsonl" <<'EOF' || fail "events.jsonl is torn"
import json, sys
data = open(sys.argv[1], "rb").read()
assert data.endswith(b"\n"), "no final newline: %r" % data[-80:]
lost = 0
for i, line in enumerate(data.split(b"\n")[:-1]):
    try:
        ev = json.loads(line)
    except ValueError:
        sys.exit("line %d: %r" % (i + 1, line[:200]))
    assert isinstance(ev, dict) and "event" in ev, line
    if ev["event"] == "events.lost":
        lost += ev["lost"]
assert lost > 0, "no events.lost event counting a loss"
EOF

# State files are written whole or not at all, with no temp file left.
left=$(find "$J" -name '*.new' ! -path "$J/logs/*")
[ -z "$left" ] || fail "temp files left: $left"
for f in "$J"/supervise/state "$J"/workers/*/state; do
	grep -q '^state=' "$f" || fail "$f: $(cat "$f")"
done

find "$J/logs" -name 'std*.log' >"$T/logs"
[ -s "$T/logs" ] || fail "no log files"
"$PY" - "$T/logs" <<'EOF' || fail "a log file holds part of a line"
import re, sys
pat = re.compile(rb"(out|err) [0-3] \d+ \d+ \d+")
for path in open(sys.argv[1]).read().split():
    data = open(path, "rb").read()
    assert data == b"" or data.endswith(b"\n"), "%s: %r" % (path, data[-60:])
    for line in data.split(b"\n")[:-1]:
        assert pat.fullmatch(line), "%s: %r" % (path, line)
EOF
exit 0
