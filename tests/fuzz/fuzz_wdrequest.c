/*
 * esv-watchdogd's FIFO (watchdog/request.c): torch's FileTimerClient
 * lines, as any worker may write them.  The first byte of the input sets
 * the size of the reads the stream arrives in (1..256), so that framing
 * across reads is exercised; each line is parsed and made printable.
 */
#include <string.h>

#include "../../watchdog/request.h"
#include "fuzz.h"

static void
line(void *ctx, unsigned long lineno, const char *l, size_t len,
    const char *err)
{
	char why[256], vis[4 * REQ_LINE_MAX + 1];
	struct request r;
	int rc;

	(void)ctx;
	CHECK(lineno > 0);
	if (l == NULL) {
		CHECK(err != NULL && *err != '\0');
		return;
	}
	CHECK(len < REQ_LINE_MAX && memchr(l, '\n', len) == NULL);
	why[0] = '\0';
	rc = request_parse(l, len, &r, why, sizeof(why));
	CHECK(rc == 0 || rc == 1 || rc == -1);
	if (rc == -1)
		CHECK(why[0] != '\0');
	if (rc == 0) {
		CHECK(r.pid > 0);
		CHECK(strlen(r.scope) <= WDCHAN_SCOPE_MAX);
		request_vis(vis, sizeof(vis), r.scope, strlen(r.scope));
	}
	request_vis(vis, sizeof(vis), l, len);
	CHECK(strchr(vis, '\n') == NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reqreader rr;
	size_t chunk, off, n;

	if (size == 0)
		return 0;
	chunk = (size_t)data[0] + 1;
	memset(&rr, 0, sizeof(rr));
	for (off = 1; off < size; off += n) {
		n = size - off < chunk ? size - off : chunk;
		reqreader_feed(&rr, (const char *)data + off, n, line, NULL);
	}
	return 0;
}
