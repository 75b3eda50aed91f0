#!/usr/bin/env bash
# Every libFuzzer harness of tests/fuzz for a number of executions (10
# million by default) or a time budget, whichever ends first, from its
# seed corpus; prints one line per harness: executions, wall time,
# executions a second, coverage (libFuzzer's edges "cov" and features
# "ft"), peak RSS, and the verdict.  A crash, leak or sanitizer report
# leaves its input in the work directory and fails the script.  The code's
# own messages are dropped (-close_fd_mask=2: esv-rdzv's warnings alone
# would fill gigabytes); libFuzzer's and the sanitizers' reports are kept.
# Usage: bench/fuzz.sh [HARNESS...]
#   FUZZ_RUNS (10000000), FUZZ_SECS (budget per harness, 7200),
#   FUZZ_JOBS (harnesses at once, 1), ESV_BUILD (build-fuzz),
#   FUZZ_TIMEOUT (seconds one input may take, 10: raise it when the
#   fuzzers run at a low priority beside other work, which can starve
#   them that long),
#   BENCH_KEEP=DIR keeps the corpora grown, to resume from.
set -euo pipefail
. "$(dirname "$0")/common.sh" fuzz

runs=${FUZZ_RUNS:-10000000}
secs=${FUZZ_SECS:-7200}
jobs=${FUZZ_JOBS:-1}
timeout=${FUZZ_TIMEOUT:-10}
build=$root/${ESV_BUILD:-build-fuzz}
if [ ! -f "$build/build.ninja" ]; then
	(cd "$root" && CC=clang bash tools/setup.sh "${ESV_BUILD:-build-fuzz}" \
	    -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
	    -Dstatic_supervisor=false)
fi
ninja -C "$build" >/dev/null
# Their inputs go through files: keep them on tmpfs.
[ -d /dev/shm ] && [ -w /dev/shm ] && export TMPDIR=/dev/shm

if [ $# -gt 0 ]; then
	names=("$@")
else
	names=()
	for f in "$root"/tests/fuzz/fuzz_*.c; do
		n=${f##*/}
		n=${n%.c}
		[ "$n" = fuzz_common ] || names+=("$n")
	done
fi

one() {
	local n=$1 log start end rc=0
	mkdir -p "$work/$n/corpus" "$work/$n/artifacts"
	log=$work/$n/log
	start=$(date +%s.%N)
	"$build/tests/fuzz/$n" -seed=1 -runs="$runs" -max_total_time="$secs" \
	    -max_len=8192 -timeout="$timeout" -rss_limit_mb=2048 -print_final_stats=1 \
	    -close_fd_mask=2 \
	    -artifact_prefix="$work/$n/artifacts/" "$work/$n/corpus" \
	    "$root/tests/fuzz/corpus/$n" >"$log" 2>&1 || rc=$?
	end=$(date +%s.%N)
	"$python" - "$n" "$log" "$start" "$end" "$rc" <<'PY'
import re, sys
name, log, start, end, rc = sys.argv[1:]
text = open(log, errors="replace").read()
def stat(key):
    m = re.search(r"^stat::%s:\s+(\d+)" % key, text, re.M)
    return int(m.group(1)) if m else 0
execs = stat("number_of_executed_units")
wall = float(end) - float(start)
cov = re.findall(r"cov: (\d+) ft: (\d+)", text)
c, f = cov[-1] if cov else ("?", "?")
verdict = "ok" if rc == "0" else "FAILED (exit %s, see %s)" % (rc, log)
print("%-16s %11d execs %8.0f s %9.0f/s  cov %5s ft %6s  rss %4d MiB  %s" %
      (name, execs, wall, execs / wall if wall else 0, c, f,
       stat("peak_rss_mb"), verdict))
PY
	[ "$rc" -eq 0 ]
}

echo "fuzz: $runs executions or ${secs} s each, $(nproc) CPUs, $(date -u +%FT%TZ)"
echo "fuzz: work directory $work"
failed=0
export -f one
export work runs secs timeout build root python
printf '%s\n' "${names[@]}" | xargs -P "$jobs" -I{} bash -c 'one {}' || failed=1
[ "$failed" -eq 0 ] || { echo "fuzz: a harness failed" >&2; exit 1; }
