#!/bin/bash
# Workers inherit descriptors 0-2 and the job's group lock, nothing else:
# not what the caller of esv-supervise left open (torchrun's Popen closes
# those too), nor any of the supervisor's own pipes, FIFOs or sockets.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_fds.sh
. "$(dirname "$0")/lib.sh"
esv_setup 60

# ls in place of the worker (exec: no shell descriptors of its own) lists
# what it inherited, plus its own handle on /proc/self/fd.
cat >"$T/fds.sh" <<'EOF2'
#!/bin/sh
exec ls -l /proc/self/fd >"$1/fds.$LOCAL_RANK"
EOF2
chmod +x "$T/fds.sh"

J=$T/job
# A stray descriptor of the caller, not close-on-exec: 7.
exec 7<"$T/fds.sh"
run_sup "$J" --nproc-per-node 2 --no-python -t 3 -- "$T/fds.sh" "$T"
exec 7<&-
assert_eq "$SUP_RC" 0 "exit status ($(cat "$SUP_ERR"))"

for r in 0 1; do
	f=$T/fds.$r
	assert_file "$f"
	got=$(awk '$(NF-1) == "->" && $NF !~ "^/proc/[0-9]+/fd$" {print $(NF-2)}' "$f" |
	    sort -n | tr '\n' ' ')
	lock=$(awk '$(NF-1) == "->" && $NF ~ /supervise\/group\.lock$/ {print $(NF-2)}' "$f")
	[ -n "$lock" ] || fail "worker $r does not hold supervise/group.lock: $(cat "$f")"
	assert_eq "$got" "$(printf '%s\n' 0 1 2 "$lock" | sort -n | tr '\n' ' ')" \
	    "descriptors of worker $r ($(cat "$f"))"
done
note ok
