/*
 * The guardian's pipe protocol (supervisor/contain/guardproto.h): what the
 * supervisor and the workers write is read back whole, however the pipe
 * splits it, and nothing else is ever taken for a process group.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../supervisor/contain/guardproto.h"

static char	ops[64];
static pid_t	pgids[64];
static size_t	nseen;

static void
seen(void *ctx, char op, pid_t pgid)
{
	(void)ctx;
	assert_true(nseen < 64);
	ops[nseen] = op;
	pgids[nseen++] = pgid;
}

static void
feed_in_chunks(const char *text, size_t chunk)
{
	struct guard_reader r = { 0 };
	size_t off, n, len = strlen(text);

	nseen = 0;
	for (off = 0; off < len; off += n) {
		n = len - off < chunk ? len - off : chunk;
		guard_feed(&r, text + off, n, seen, NULL);
	}
}

static void
test_roundtrip(void **state)
{
	const pid_t cases[] = { 2, 9, 10, 12345, 4194304, INT_MAX };
	char text[sizeof(cases) / sizeof(cases[0]) * 2 * GUARD_LINE_MAX];
	size_t i, chunk, len = 0;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		len += guard_line(text + len, '+', cases[i]);
		len += guard_line(text + len, '-', cases[i]);
	}
	text[len] = '\0';
	assert_string_equal(text, "+2\n-2\n+9\n-9\n+10\n-10\n+12345\n-12345\n"
	    "+4194304\n-4194304\n+2147483647\n-2147483647\n");
	/* Every way a pipe may cut it: byte by byte up to all at once. */
	for (chunk = 1; chunk <= len; chunk++) {
		feed_in_chunks(text, chunk);
		assert_int_equal(nseen, 12);
		for (i = 0; i < 12; i++) {
			assert_int_equal(ops[i], i % 2 ? '-' : '+');
			assert_int_equal(pgids[i], cases[i / 2]);
		}
	}
}

static void
test_garbage_dropped(void **state)
{
	(void)state;
	feed_in_chunks("+\n+1\n+0\n-1\nx12\n+12a\n+-5\n+ 7\n+7 \n"
	    "+2147483648\n+99999999999999999999\n"
	    /* Too long to be a line: dropped whole, not cut to a number. */
	    "+123456789012345678901234567890\n"
	    "\n\n+42\n", 3);
	assert_int_equal(nseen, 1);
	assert_int_equal(ops[0], '+');
	assert_int_equal(pgids[0], 42);
}

static void
test_partial_line_waits(void **state)
{
	struct guard_reader r = { 0 };

	(void)state;
	nseen = 0;
	guard_feed(&r, "+12", 3, seen, NULL);
	assert_int_equal(nseen, 0);
	guard_feed(&r, "34\n-1", 5, seen, NULL);
	assert_int_equal(nseen, 1);
	assert_int_equal(pgids[0], 1234);
	/* EOF with "-1" unfinished: it never counts. */
	assert_int_equal(nseen, 1);
}

/* The lease's end ("@") and a group that is no worker's ("="). */
static void
test_lease_and_spare(void **state)
{
	struct guard_reader r = { 0 };
	char text[4 * GUARD_LINE_MAX];
	size_t len = 0, off;

	(void)state;
	len += guard_line_ll(text + len, '@', LLONG_MAX);
	len += guard_line(text + len, '=', 77);
	len += guard_line_ll(text + len, '@', 123456789012LL);
	nseen = 0;
	for (off = 0; off < len; off++)
		guard_feed(&r, text + off, 1, seen, NULL);
	assert_int_equal(nseen, 1);
	assert_int_equal(ops[0], '=');
	assert_int_equal(pgids[0], 77);
	assert_true(r.lease_new);
	assert_true(r.lease_end == 123456789012LL);
	/* 0 clears; a time past LLONG_MAX is dropped, not wrapped. */
	r.lease_new = 0;
	guard_feed(&r, "@0\n", 3, seen, NULL);
	assert_true(r.lease_new && r.lease_end == 0);
	r.lease_new = 0;
	guard_feed(&r, "@9223372036854775807\n", 21, seen, NULL);
	assert_true(r.lease_new && r.lease_end == LLONG_MAX);
	r.lease_new = 0;
	guard_feed(&r, "@9223372036854775808\n@12x\n", 26, seen, NULL);
	assert_false(r.lease_new);
	assert_int_equal(nseen, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_garbage_dropped),
		cmocka_unit_test(test_partial_line_waits),
		cmocka_unit_test(test_lease_and_spare),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
