#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../supervisor/core/backoff.h"

/* torchrun restarts at once: initial 0 never delays, however fast. */
static void
test_disabled(void **state)
{
	struct backoff b = { .initial_ms = 0, .max_ms = 60000,
	    .reset_ms = 60000 };
	int i;

	(void)state;
	for (i = 0; i < 10; i++)
		assert_int_equal(backoff_next(&b, 0), 0);
	assert_int_equal(backoff_next(&b, 1000000), 0);
}

static void
test_doubling(void **state)
{
	struct backoff b = { .initial_ms = 100, .max_ms = 60000,
	    .reset_ms = 60000 };

	(void)state;
	assert_int_equal(backoff_next(&b, 10), 100);
	assert_int_equal(backoff_next(&b, 10), 200);
	assert_int_equal(backoff_next(&b, 10), 400);
	assert_int_equal(backoff_next(&b, 10), 800);
	assert_int_equal(backoff_next(&b, 59999), 1600);
}

static void
test_cap(void **state)
{
	struct backoff b = { .initial_ms = 100, .max_ms = 1000,
	    .reset_ms = 60000 };
	int i;

	(void)state;
	assert_int_equal(backoff_next(&b, 0), 100);
	assert_int_equal(backoff_next(&b, 0), 200);
	assert_int_equal(backoff_next(&b, 0), 400);
	assert_int_equal(backoff_next(&b, 0), 800);
	assert_int_equal(backoff_next(&b, 0), 1000);
	/* A long streak stays at the cap, no overflow back to small. */
	for (i = 0; i < 200; i++)
		assert_int_equal(backoff_next(&b, 0), 1000);
}

/* The doubling must not wrap even when the cap is the largest value. */
static void
test_cap_uint_max(void **state)
{
	struct backoff b = { .initial_ms = 100, .max_ms = UINT_MAX,
	    .reset_ms = 60000 };
	unsigned long long want = 100;
	int i;

	(void)state;
	for (i = 0; i < 100; i++) {
		assert_int_equal(backoff_next(&b, 0), want);
		want = want * 2 > UINT_MAX ? UINT_MAX : want * 2;
	}
}

static void
test_reset(void **state)
{
	struct backoff b = { .initial_ms = 100, .max_ms = 60000,
	    .reset_ms = 5000 };

	(void)state;
	assert_int_equal(backoff_next(&b, 10), 100);
	assert_int_equal(backoff_next(&b, 10), 200);
	assert_int_equal(backoff_next(&b, 4999), 400);
	/* Ran exactly reset_ms: the count starts again. */
	assert_int_equal(backoff_next(&b, 5000), 100);
	assert_int_equal(backoff_next(&b, 10), 200);
	assert_int_equal(backoff_next(&b, 1ULL << 40), 100);
	assert_int_equal(backoff_next(&b, 0), 200);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disabled),
		cmocka_unit_test(test_doubling),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_cap_uint_max),
		cmocka_unit_test(test_reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
