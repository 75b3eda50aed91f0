#!/bin/bash
# What esv-healthd shows, and to whom (issue 20.6): by default it listens
# on 127.0.0.1 only, and /status leaves out the job's file and socket
# paths (JOBDIR, the attempt directory, error files, the watchdog's
# socket); --health-status-paths puts them back, and /status is then
# exactly `esv-ctl status --json`.
. "$(dirname "$0")/lib.sh"
esv_setup 90
HD=${ESV_HEALTHD:-$ESV_BIN_DIR/../healthd/esv-healthd}
[ -x "$HD" ] || skip "$HD is not built"
command -v curl >/dev/null || skip "no curl"

# health_where JOBDIR: wait until its esv-healthd listens; print where.
health_where()
{
	local job=$1
	wait_for -t 10 eval '[ -n "$(kv "$job/supervise/state" health_listen)" ]' ||
	    fail "no health server for $job: $(cat "$job.err")"
	kv "$job/supervise/state" health_listen
}
# Worker 1 leaves an error file and exits 0 early (it is left alone), so
# that its state names the file; worker 0 runs on.
cat >"$T/w.sh" <<'EOS'
#!/bin/sh
[ "$LOCAL_RANK" = 0 ] && exec sleep 30
echo '{"message": "x"}' >"$TORCHELASTIC_ERROR_FILE"
exit 0
EOS
chmod +x "$T/w.sh"
# status_shows NAME: GET /status into $T/NAME.json; true once it shows
# worker 1 succeeded, worker 0 running and the job running worker 0 only:
# the supervisor writes the workers' files first, supervise/state after,
# and esv-healthd keeps what it read 100 ms.
status_shows()
{
	local name=$1
	curl -s -m 5 -o "$T/$name.json" "http://$where/status" &&
	    "$PY" -c 'import json, sys
o = json.load(open(sys.argv[1]))
j, w = o["job"], o["workers"]
sys.exit(not (j and j["state"] == "running" and
    w[1]["state"] == "succeeded" and w[0]["state"] == "running" and
    j["pids"] == [w[0]["pid"]]))' "$T/$name.json" 2>/dev/null
}

note "default: 127.0.0.1, no paths in /status"
start_sup "$T/def" --health-port 0 --file-timer --nproc-per-node 2 \
    --no-python -- "$T/w.sh"
where=$(health_where "$T/def")
[[ $where == 127.0.0.1:* ]] || fail "listens on $where by default"
wait_for -t 10 eval '[ "$(kv "$T/def/workers/1/state" state)" = succeeded ] &&
    [ "$(kv "$T/def/workers/0/state" state)" = running ]' ||
    fail "workers: $(cat "$T/def.err")"
wait_for -t 5 status_shows def ||
    fail "GET /status: not the workers' state: $(cat "$T/def.json")"
ctl status --json "$T/def" >"$T/def.ctl"
"$PY" - "$T/def.json" "$T/def.ctl" "$T" <<'EOS' || fail "/status shows paths: $(cat "$T/def.json")"
import json, sys
http, ctl = (json.load(open(p)) for p in sys.argv[1:3])
# The paths are there to hide: esv-ctl (local, by file) shows them.
assert ctl["job"]["attempt_dir"] and ctl["job"]["watchdog_socket"], ctl
assert ctl["workers"][1]["error_file"], ctl["workers"]
assert "jobdir" not in http, http.keys()
for k in ("attempt_dir", "watchdog_socket"):
    assert k not in http["job"], k
for w in http["workers"]:
    assert "error_file" not in w, w
assert sys.argv[3] not in open(sys.argv[1]).read(), "a path of the job"
assert http["workers"][0]["pid"] > 0 and http["job"]["master_port"] > 0
EOS
stop_sup

note "--health-status-paths: /status is esv-ctl status --json"
start_sup "$T/paths" --health-port 0 --health-status-paths \
    --nproc-per-node 2 --no-python -- "$T/w.sh"
where=$(health_where "$T/paths")
wait_for -t 10 eval '[ "$(kv "$T/paths/workers/1/state" state)" = succeeded ] &&
    [ "$(kv "$T/paths/workers/0/state" state)" = running ]' ||
    fail "workers: $(cat "$T/paths.err")"
wait_for -t 5 status_shows paths ||
    fail "GET /status: not the workers' state: $(cat "$T/paths.json")"
# same_as_ctl: /status is what esv-ctl status --json says.  The state
# file gains health_listen once esv-healthd listens; a view esv-healthd
# read before that answers for up to 100 ms.
same_as_ctl()
{
	curl -s -m 5 -o "$T/paths.json" "http://$where/status" &&
	    ctl status --json "$T/paths" >"$T/paths.ctl" &&
	    "$PY" - "$T/paths.json" "$T/paths.ctl" 2>"$T/paths.diff" <<'EOS'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a == b, (a, b)
assert a["jobdir"] and a["job"]["attempt_dir"], a
assert a["workers"][1]["error_file"], a["workers"]
EOS
}
wait_for -t 5 same_as_ctl || fail "/status and esv-ctl differ: $(cat "$T/paths.diff")"
stop_sup

note "--health-address '*': every interface"
start_sup "$T/all" --health-port 0 --health-address '*' --no-python \
    -- sleep 30
where=$(health_where "$T/all")
[[ $where == 0.0.0.0:* || $where == \[::\]:* ]] ||
    fail "--health-address '*' listens on $where"
curl -s -m 5 -o /dev/null "http://127.0.0.1:${where##*:}/healthz" ||
    fail "not reachable on 127.0.0.1"
stop_sup
exit 0
