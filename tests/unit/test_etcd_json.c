/*
 * etcd's JSON conventions as esv-rdzv-etcd reads them: int64s as strings
 * (lease ids beyond 2^53, which a double would round), zeros left out,
 * bytes in base64.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../rendezvous/etcd/etcd.h"

static void
test_int(void **state)
{
	json_t *o = json_loads("{\"ID\":\"2324035792682897729\",\"TTL\":\"2\","
	    "\"n\":7,\"neg\":\"-1\",\"bad\":\"12x\",\"empty\":\"\","
	    "\"f\":1.5}", 0, NULL);
	long long v;

	(void)state;
	assert_non_null(o);
	assert_int_equal(etcd_int(o, "ID", &v), 0);
	assert_true(v == 2324035792682897729LL);
	assert_int_equal(etcd_int(o, "TTL", &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(etcd_int(o, "n", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(etcd_int(o, "neg", &v), 0);
	assert_int_equal(v, -1);
	/* etcd omits zeros: absent is 0, not an error. */
	assert_int_equal(etcd_int(o, "absent", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(etcd_int(NULL, "ID", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(etcd_int(o, "bad", &v), -1);
	assert_int_equal(etcd_int(o, "empty", &v), -1);
	assert_int_equal(etcd_int(o, "f", &v), -1);
	json_decref(o);
}

static void
test_b64(void **state)
{
	char buf[64];
	json_t *j;

	(void)state;
	assert_non_null(j = etcd_b64("/esv/job/state", 14));
	assert_string_equal(json_string_value(j), "L2Vzdi9qb2Ivc3RhdGU=");
	assert_int_equal(etcd_unb64(j, buf, sizeof(buf)), 14);
	assert_string_equal(buf, "/esv/job/state");
	/* What does not fit is refused, not cut. */
	assert_int_equal(etcd_unb64(j, buf, 10), -1);
	json_decref(j);
	/* An empty value is left out by etcd. */
	assert_int_equal(etcd_unb64(NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_non_null(j = json_string("not base64!"));
	assert_int_equal(etcd_unb64(j, buf, sizeof(buf)), -1);
	json_decref(j);
	assert_non_null(j = json_integer(3));
	assert_int_equal(etcd_unb64(j, buf, sizeof(buf)), -1);
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int),
		cmocka_unit_test(test_b64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
