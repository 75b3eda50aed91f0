#!/usr/bin/env bash
# Every test of esv: unit, integration and real-PyTorch suites, in a normal
# build and again in an ASan+UBSan build; then the fuzz smoke (every
# parser's libFuzzer harness, briefly).  Exit status 0 only if all pass.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh build
meson test -C build --print-errorlogs --num-processes 2

bash tools/setup.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false \
	-Dbuildtype=debug -Dstatic_supervisor=false
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C build-asan --print-errorlogs --num-processes 2
# The parsers under libFuzzer (clang, ASan+UBSan): each harness on its
# seed corpus, then a fixed number of mutations.
CC=clang bash tools/setup.sh build-fuzz -Dfuzz=true -Db_sanitize=address,undefined \
	-Db_lundef=false -Dstatic_supervisor=false
meson test -C build-fuzz --print-errorlogs --suite fuzz-smoke
echo "run-all: every test passed in both builds, and the fuzz smoke"
