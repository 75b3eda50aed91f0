/*
 * The lines esv-supervise and esv-watchdogd exchange, and the watchdog's
 * status answer (lib/wdchan.c).  What parses formats again, and the
 * formatted line parses to the same thing.
 */
#include <string.h>

#include "fuzz.h"
#include "wdchan.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wd_expired e, e2;
	struct wd_status st, st2;
	pid_t *pids = NULL, *pids2 = NULL;
	size_t n = 0, n2 = 0;
	char err[256], *line, *again;
	int kind;

	line = fuzz_str(data, size);
	kind = wdchan_parse_control(line, &pids, &n, &e, err, sizeof(err));
	CHECK(kind == 'p' || kind == 'e' || kind == -1);
	if (kind == 'p') {
		CHECK((again = wdchan_pids(pids, n)) != NULL);
		CHECK(wdchan_parse_control(again, &pids2, &n2, &e2, err,
		    sizeof(err)) == 'p');
		CHECK(n2 == n && (n == 0 || memcmp(pids, pids2,
		    n * sizeof(*pids)) == 0));
		free(again);
		free(pids2);
	} else if (kind == 'e') {
		CHECK((again = wdchan_expired(&e)) != NULL);
		CHECK(wdchan_parse_control(again, &pids2, &n2, &e2, err,
		    sizeof(err)) == 'e');
		CHECK(e2.pid == e.pid && e2.signal == e.signal &&
		    strcmp(e2.scope, e.scope) == 0);
		free(again);
	} else
		CHECK(err[0] != '\0');
	free(pids);

	if (wdchan_parse_status(line, &st, err, sizeof(err)) == 0) {
		CHECK((again = wdchan_status(&st)) != NULL);
		CHECK(wdchan_parse_status(again, &st2, err, sizeof(err)) == 0);
		CHECK(st2.pid == st.pid && st2.armed == st.armed);
		free(again);
	}
	free(line);
	return 0;
}
