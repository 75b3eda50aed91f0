# Sourced by the bench scripts: where the bench and the tree are, python
# with torch, and the work directory ($BENCH_KEEP if set, else a temporary
# one removed at exit; its name takes $1 as a tag).
bench=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$bench")
python=/usr/bin/python3

export BENCH_KEEP=${BENCH_KEEP:-}
if [ -n "$BENCH_KEEP" ]; then
	work=$BENCH_KEEP
	mkdir -p "$work"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/esv-${1:-bench}.XXXXXX")
	trap 'rm -rf "$work"' EXIT
fi

# cc_bench SRC OUT [FLAGS...]: a worker or loop, static when the C library
# allows it: no dynamic loader in any exec, so the worker's own start-up
# cost is the same small constant for everyone.
cc_bench() {
	local src=$1 out=$2
	shift 2
	gcc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra "$@" -static -o "$out" \
	    "$src" 2>/dev/null || gcc -std=c17 -D_GNU_SOURCE -O2 -Wall -Wextra \
	    "$@" -o "$out" "$src"
}
