#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../watchdog/request.h"

static int
parse(const char *line, struct request *r, char *err, size_t errlen)
{
	err[0] = '\0';
	return request_parse(line, strlen(line), r, err, errlen);
}

/* Parse, expect a refusal whose text contains want. */
static void
refused(const char *line, const char *want)
{
	struct request r;
	char err[256];

	assert_int_equal(parse(line, &r, err, sizeof(err)), -1);
	if (strstr(err, want) == NULL)
		fail_msg("%s: error \"%s\" lacks \"%s\"", line, err, want);
}

static void
test_torch_line(void **state)
{
	struct request r;
	char err[256];

	(void)state;
	/* Exactly what FileTimerRequest.to_json writes. */
	assert_int_equal(parse("{\"version\": 1, \"pid\": 14966, \"scope_id\": "
	    "\"step\", \"expiration_time\": 1796225099.087, \"signal\": 9}",
	    &r, err, sizeof(err)), 0);
	assert_int_equal(r.pid, 14966);
	assert_string_equal(r.scope, "step");
	assert_true(r.expiration == 1796225099.087);
	assert_int_equal(r.signal, 9);
	assert_false(r.release);
	/* The release torch sends. */
	assert_int_equal(parse("{\"version\": 1, \"pid\": 3, \"scope_id\": "
	    "\"step\", \"expiration_time\": -1, \"signal\": 0}", &r, err,
	    sizeof(err)), 0);
	assert_true(r.release);
	assert_int_equal(r.signal, 0);
	/* version is optional; an integer deadline is a number too. */
	assert_int_equal(parse("{\"pid\": 3, \"scope_id\": \"\", "
	    "\"expiration_time\": 17, \"signal\": -2}  \r", &r, err,
	    sizeof(err)), 0);
	assert_true(r.expiration == 17.0);
	assert_int_equal(r.signal, -2);
	assert_false(r.release);
}

static void
test_blank(void **state)
{
	struct request r;
	char err[64];

	(void)state;
	assert_int_equal(parse("", &r, err, sizeof(err)), 1);
	assert_int_equal(parse("  \t\r", &r, err, sizeof(err)), 1);
}

static void
test_bad(void **state)
{
	(void)state;
	refused("{\"pid\": 3, \"scope_id\": \"s\", \"expiration_time\": 1",
	    "malformed JSON");
	refused("[1, 2]", "not an object");
	refused("{\"pid\": 3, \"scope_id\": \"s\", \"expiration_time\": 1, "
	    "\"signal\": 9, \"colour\": 1}", "unknown field \"colour\"");
	refused("{\"pid\": 3, \"pid\": 4, \"scope_id\": \"s\", "
	    "\"expiration_time\": 1, \"signal\": 9}", "duplicate");
	refused("{\"scope_id\": \"s\", \"expiration_time\": 1, \"signal\": 9}",
	    "missing field pid");
	refused("{\"pid\": 3, \"expiration_time\": 1, \"signal\": 9}",
	    "missing field scope_id");
	refused("{\"pid\": 3, \"scope_id\": \"s\", \"signal\": 9}",
	    "missing field expiration_time");
	refused("{\"pid\": 3, \"scope_id\": \"s\", \"expiration_time\": 1}",
	    "missing field signal");
	refused("{\"pid\": \"3\", \"scope_id\": \"s\", \"expiration_time\": 1, "
	    "\"signal\": 9}", "pid: not an integer");
	refused("{\"pid\": 0, \"scope_id\": \"s\", \"expiration_time\": 1, "
	    "\"signal\": 9}", "pid: 0 out of range");
	refused("{\"pid\": -5, \"scope_id\": \"s\", \"expiration_time\": 1, "
	    "\"signal\": 9}", "pid: -5 out of range");
	refused("{\"pid\": 3.5, \"scope_id\": \"s\", \"expiration_time\": 1, "
	    "\"signal\": 9}", "pid: not an integer");
	refused("{\"pid\": 3, \"scope_id\": 7, \"expiration_time\": 1, "
	    "\"signal\": 9}", "scope_id: not a string");
	refused("{\"pid\": 3, \"scope_id\": \"s\", \"expiration_time\": \"1\", "
	    "\"signal\": 9}", "expiration_time: not a number");
	refused("{\"pid\": 3, \"scope_id\": \"s\", \"expiration_time\": 1, "
	    "\"signal\": 65}", "signal: 65 out of range");
	refused("{\"pid\": 3, \"scope_id\": \"s\", \"expiration_time\": 1, "
	    "\"signal\": null}", "signal: not an integer");
	refused("{\"version\": \"1\", \"pid\": 3, \"scope_id\": \"s\", "
	    "\"expiration_time\": 1, \"signal\": 9}", "version: not an integer");
	refused("{\"pid\": 3, \"scope_id\": \"a\\u0000b\", \"expiration_time\": "
	    "1, \"signal\": 9}", "malformed JSON");
}

static void
test_nul_byte(void **state)
{
	static const char line[] = "{\"pid\": 3,\0 \"scope_id\": \"s\"}";
	struct request r;
	char err[64];

	(void)state;
	assert_int_equal(request_parse(line, sizeof(line) - 1, &r, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "NUL byte");
}

static void
test_scope_length(void **state)
{
	char line[600], err[256], scope[258];
	struct request r;

	(void)state;
	memset(scope, 'x', 257);
	scope[256] = '\0';
	snprintf(line, sizeof(line), "{\"pid\": 3, \"scope_id\": \"%s\", "
	    "\"expiration_time\": 1, \"signal\": 9}", scope);
	assert_int_equal(parse(line, &r, err, sizeof(err)), 0);
	assert_string_equal(r.scope, scope);
	scope[256] = 'x';
	scope[257] = '\0';
	snprintf(line, sizeof(line), "{\"pid\": 3, \"scope_id\": \"%s\", "
	    "\"expiration_time\": 1, \"signal\": 9}", scope);
	refused(line, "scope_id: longer than 256 bytes");
	/* An unknown field's name is escaped before it is logged. */
	refused("{\"a\\nb\\\"\": 1}", "unknown field \"a\\nb\\\"\"");
}

/* What the reader handed out. */
struct lines {
	int		n;
	unsigned long	lineno[16];
	char		text[16][64];
	bool		toolong[16];
};

static void
collect(void *ctx, unsigned long lineno, const char *line, size_t len,
    const char *err)
{
	struct lines *l = ctx;

	assert_true(l->n < 16);
	l->lineno[l->n] = lineno;
	l->toolong[l->n] = err != NULL;
	if (line != NULL) {
		assert_null(memchr(line, '\n', len));
		snprintf(l->text[l->n], sizeof(l->text[0]), "%.*s", (int)len,
		    line);
	}
	l->n++;
}

static void
feed(struct reqreader *rr, const char *s, struct lines *l)
{
	reqreader_feed(rr, s, strlen(s), collect, l);
}

static void
test_reader_pieces(void **state)
{
	struct reqreader rr = { .len = 0 };
	struct lines l = { .n = 0 };

	(void)state;
	feed(&rr, "one\ntw", &l);
	assert_int_equal(l.n, 1);
	/* A writer may end a line in a later write, after others closed. */
	feed(&rr, "o", &l);
	feed(&rr, "\n\nthree\n", &l);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.text[0], "one");
	assert_string_equal(l.text[1], "two");
	assert_string_equal(l.text[2], "");
	assert_string_equal(l.text[3], "three");
	assert_int_equal(l.lineno[0], 1);
	assert_int_equal(l.lineno[1], 2);
	assert_int_equal(l.lineno[3], 4);
	feed(&rr, "four", &l);
	assert_int_equal(l.n, 4);
}

static void
test_reader_too_long(void **state)
{
	struct reqreader rr = { .len = 0 };
	struct lines l = { .n = 0 };
	char *big;
	int i;

	(void)state;
	big = malloc(REQ_LINE_MAX + 2);
	assert_non_null(big);
	/* Exactly 4096 bytes before the newline: accepted. */
	memset(big, 'a', REQ_LINE_MAX);
	big[REQ_LINE_MAX] = '\n';
	big[REQ_LINE_MAX + 1] = '\0';
	feed(&rr, big, &l);
	assert_int_equal(l.n, 1);
	assert_false(l.toolong[0]);
	/* 4097, in pieces: said once, and the next line is intact. */
	big[REQ_LINE_MAX] = '\0';
	feed(&rr, "ok\n", &l);
	for (i = 0; i < 3; i++)
		feed(&rr, big, &l);
	feed(&rr, "a\nnext\n", &l);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.text[1], "ok");
	assert_true(l.toolong[2]);
	assert_int_equal(l.lineno[2], 3);
	assert_false(l.toolong[3]);
	assert_string_equal(l.text[3], "next");
	assert_int_equal(l.lineno[3], 4);
	free(big);
}

static void
test_vis(void **state)
{
	char out[32];

	(void)state;
	request_vis(out, sizeof(out), "a\nb\"c\001", 6);
	assert_string_equal(out, "a\\nb\\\"c\\001");
	/* Cut to what fits even if every byte needed 4, never overflowed. */
	request_vis(out, 16, "abcdefghijklmnopqrstuvwxyz", 26);
	assert_string_equal(out, "abc");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_torch_line),
		cmocka_unit_test(test_blank),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_nul_byte),
		cmocka_unit_test(test_scope_length),
		cmocka_unit_test(test_reader_pieces),
		cmocka_unit_test(test_reader_too_long),
		cmocka_unit_test(test_vis),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
