#!/bin/sh
# One harness of the fuzz-smoke suite: its seed corpus (tests/fuzz/corpus/
# NAME, every file a regression input), then RUNS mutations from a fixed
# seed.  New inputs go to a scratch directory, never into the tree.
# Usage: smoke.sh HARNESS CORPUS RUNS
set -eu
harness=$1 corpus=$2 runs=$3
# The harnesses write their inputs to files: on tmpfs that costs nothing.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
	export TMPDIR=/dev/shm
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/esv-fuzz-smoke.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/new"
"$harness" -seed=1 -runs="$runs" -max_len=8192 -timeout=10 \
    -rss_limit_mb=1024 -print_final_stats=1 \
    -artifact_prefix="$scratch/" "$scratch/new" "$corpus" 2>"$scratch/log" || {
	rc=$?
	tail -50 "$scratch/log" >&2
	for f in "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-* \
	    "$scratch"/oom-*; do
		[ -e "$f" ] || continue
		echo "smoke: $f: $(od -c "$f" | head -5)" >&2
	done
	exit "$rc"
}
grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|cov:' \
    "$scratch/log" | tail -3
