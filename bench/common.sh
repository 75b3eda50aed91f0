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
