#!/bin/bash
# What job.ini's [env] holds, and what a worker writes into its error file,
# stays readable by the job's user only: workers/ and each env/ are 0700
# with 0600 files, a copied error.json and the agent's own
# TORCHELASTIC_ERROR_FILE are 0600 (issue 20, parts 3 and 6).  A second,
# unprivileged user tries to read them.
# Usage: ESV_BIN_DIR=/path/to/build/supervisor bash test_trust_secrets.sh
. "$(dirname "$0")/lib.sh"
. "$ESV_TEST_DIR/trustlib.sh"
esv_setup 90
trust_user

SECRET=s3cret-$RANDOM$RANDOM
J=$T/job
# As an older esv left it: world-readable.
mkdir -p -m 0755 "$J/workers/0/env"
printf '%s\n' "[env]" "API_SECRET = $SECRET" >"$J/job.ini"
chmod 0600 "$J/job.ini"
AGENT_ERR=$T/agent-error.json
umask 022
TORCHELASTIC_ERROR_FILE=$AGENT_ERR run_sup -t 30 "$J" --no-python \
    --max-restarts 0 -- /bin/sh -c 'printf "{\"message\": \"%s\"}\n" \
    "$API_SECRET" >"$TORCHELASTIC_ERROR_FILE"; exit 1'
assert_eq "$SUP_RC" 1 "exit status"
assert_file "$J/workers/0/env/API_SECRET"
assert_grep_F "$J/workers/0/error.json" "$SECRET"
assert_grep_F "$AGENT_ERR" "$SECRET"

as_user cat "$J/workers/0/env/API_SECRET" >"$T/read" 2>/dev/null &&
    fail "$TU read $J/workers/0/env/API_SECRET: $(cat "$T/read")"
as_user grep -rlF "$SECRET" "$J" "$AGENT_ERR" >"$T/read" 2>/dev/null
[ -s "$T/read" ] && fail "$TU read the secret in: $(tr '\n' ' ' <"$T/read")"

for f in workers:700 workers/0/env:700 workers/0/env/API_SECRET:600 \
    workers/0/error.json:600; do
	assert_eq "$(stat -c %a "$J/${f%:*}")" "${f#*:}" "mode of ${f%:*}"
done
assert_eq "$(stat -c %a "$AGENT_ERR")" 600 "mode of TORCHELASTIC_ERROR_FILE"
exit 0
