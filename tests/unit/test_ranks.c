#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ranks.h"

static void
check(const struct rank_assignment *ra, unsigned base, unsigned world,
    unsigned base_role, unsigned role_world, unsigned lws)
{
	assert_int_equal(ra->base_rank, base);
	assert_int_equal(ra->world_size, world);
	assert_int_equal(ra->base_role_rank, base_role);
	assert_int_equal(ra->role_world_size, role_world);
	assert_int_equal(ra->local_world_size, lws);
}

/* 2 nodes x 4: ranks 0-3 on group rank 0, 4-7 on group rank 1. */
static void
test_two_by_four(void **state)
{
	struct group_info g[] = { { "default", 4 }, { "default", 4 } };
	struct rank_assignment ra;

	(void)state;
	assert_int_equal(ranks_assign(g, 2, 0, &ra), 0);
	check(&ra, 0, 8, 0, 8, 4);
	assert_int_equal(ra.group_rank, 0);
	assert_int_equal(ra.group_world_size, 2);
	assert_int_equal(ranks_assign(g, 2, 1, &ra), 0);
	check(&ra, 4, 8, 4, 8, 4);
	assert_int_equal(ra.group_rank, 1);
	assert_int_equal(ra.group_world_size, 2);
}

static void
test_heterogeneous(void **state)
{
	struct group_info g[] = { { "default", 2 }, { "default", 3 } };
	struct rank_assignment ra;

	(void)state;
	assert_int_equal(ranks_assign(g, 2, 0, &ra), 0);
	check(&ra, 0, 5, 0, 5, 2);
	assert_int_equal(ranks_assign(g, 2, 1, &ra), 0);
	check(&ra, 2, 5, 2, 5, 3);
}

static void
test_multi_role(void **state)
{
	struct group_info g[] = {
		{ "trainer", 2 }, { "ps", 1 }, { "trainer", 2 },
	};
	struct rank_assignment ra;

	(void)state;
	assert_int_equal(ranks_assign(g, 3, 0, &ra), 0);
	check(&ra, 0, 5, 0, 4, 2);
	assert_int_equal(ranks_assign(g, 3, 1, &ra), 0);
	check(&ra, 2, 5, 0, 1, 1);
	assert_int_equal(ranks_assign(g, 3, 2, &ra), 0);
	check(&ra, 3, 5, 2, 4, 2);
	assert_int_equal(ra.group_world_size, 3);
}

static void
test_out_of_range(void **state)
{
	struct group_info g[] = { { "default", 2 } };
	struct group_info big[] = { { "default", UINT_MAX }, { "default", 1 } };
	struct rank_assignment ra = { .base_rank = 77 };

	(void)state;
	assert_int_equal(ranks_assign(g, 1, 1, &ra), -1);
	assert_int_equal(ranks_assign(g, 0, 0, &ra), -1);
	assert_int_equal(ranks_assign(big, 2, 0, &ra), -1);
	assert_int_equal(ra.base_rank, 77);	/* untouched on error */
	assert_int_equal(ranks_assign_static(2, 2, 4, &ra), -1);
	assert_int_equal(ranks_assign_static(0, 2, UINT_MAX, &ra), -1);
}

static void
test_static(void **state)
{
	struct rank_assignment ra;

	(void)state;
	assert_int_equal(ranks_assign_static(1, 2, 4, &ra), 0);
	check(&ra, 4, 8, 4, 8, 4);
	assert_int_equal(ra.group_rank, 1);
	assert_int_equal(ra.group_world_size, 2);
	assert_int_equal(ranks_assign_static(0, 1, 2, &ra), 0);
	check(&ra, 0, 2, 0, 2, 2);
	assert_int_equal(ra.group_world_size, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_by_four),
		cmocka_unit_test(test_heterogeneous),
		cmocka_unit_test(test_multi_role),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_static),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
