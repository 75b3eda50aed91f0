/* --rdzv-conf and --rdzv-endpoint as esv reads them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rdzvconf.h"

static void
test_defaults_and_keys(void **state)
{
	struct rdzv_conf rc;
	char why[256];

	(void)state;
	rdzv_conf_defaults(&rc);
	assert_int_equal(rc.join_timeout_ms, 600000);
	assert_int_equal(rc.last_call_ms, 30000);
	assert_int_equal(rc.exit_barrier_ms, 300000);
	assert_int_equal(rc.is_host, -1);
	assert_int_equal(rdzv_conf_parse("token_file=/t, join_timeout=5,"
	    "last_call_timeout=250ms,exit_barrier_timeout=0,is_host=false,"
	    "read_timeout=60,,timeout=900", &rc, why, sizeof(why)), 0);
	assert_string_equal(rc.token_file, "/t");
	assert_int_equal(rc.join_timeout_ms, 5000);
	assert_int_equal(rc.last_call_ms, 250);
	assert_int_equal(rc.exit_barrier_ms, 0);
	assert_int_equal(rc.is_host, 0);
	assert_int_equal(rdzv_conf_parse("is_host=auto", &rc, why,
	    sizeof(why)), 0);
	assert_int_equal(rc.is_host, -1);
}

static void
test_bad_conf(void **state)
{
	static const struct { const char *in, *why; } cases[] = {
		{ "join_timeout=abc", "join_timeout=abc: not a duration" },
		{ "jion_timeout=5", "jion_timeout: unknown key" },
		{ "token_file", "token_file: not key=value" },
		{ "token_file=", "token_file: empty or too long" },
		{ "is_host=maybe", "is_host=maybe: not true, false or auto" },
	};
	struct rdzv_conf rc;
	char why[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rdzv_conf_defaults(&rc);
		assert_int_equal(rdzv_conf_parse(cases[i].in, &rc, why,
		    sizeof(why)), -1);
		assert_non_null(strstr(why, cases[i].why));
	}
}

static void
test_endpoints(void **state)
{
	static const struct { const char *in, *host; unsigned port; } ok[] = {
		{ "node1:1234", "node1", 1234 },
		{ "node1", "node1", 29400 },
		{ "10.0.0.1:80", "10.0.0.1", 80 },
		{ "[::1]:5000", "::1", 5000 },
		{ "[fe80::1]", "fe80::1", 29400 },
		{ "::1", "::1", 29400 },
	};
	static const char *const bad[] = { "", ":80", "host:0", "host:x",
	    "[::1", "[::1]x", "host:65536" };
	char host[256], why[256];
	unsigned port;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(endpoint_parse(ok[i].in, 29400, host,
		    sizeof(host), &port, why, sizeof(why)), 0);
		assert_string_equal(host, ok[i].host);
		assert_int_equal(port, ok[i].port);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(endpoint_parse(bad[i], 29400, host,
		    sizeof(host), &port, why, sizeof(why)), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_keys),
		cmocka_unit_test(test_bad_conf),
		cmocka_unit_test(test_endpoints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
