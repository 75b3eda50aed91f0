#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../supervisor/config/subst.h"

static const struct subst_var vars[] = {
	{ "local_rank", "3" },
	{ "rank", "11" },
	{ "role_name", "default" },
};
#define NVARS (sizeof(vars) / sizeof(vars[0]))

static void
expect(const char *tmpl, const char *want)
{
	char buf[256];
	char *dup;

	assert_int_equal(subst_expand(tmpl, vars, NVARS, buf, sizeof(buf)),
	    strlen(want));
	assert_string_equal(buf, want);
	dup = subst_dup(tmpl, vars, NVARS);
	assert_non_null(dup);
	assert_string_equal(dup, want);
	free(dup);
}

static void
test_macro(void **state)
{
	(void)state;
	expect("--x=${local_rank}", "--x=3");
	expect("--x=$local_rank", "--x=3");
	expect("${local_rank}${rank}", "311");
	expect("no dollars", "no dollars");
	expect("", "");
}

static void
test_unknown_kept(void **state)
{
	(void)state;
	expect("$other", "$other");
	expect("${foo}", "${foo}");
	expect("$local_rankx", "$local_rankx");	/* the name is greedy */
	expect("a$", "a$");
	expect("$1", "$1");
	expect("${", "${");
	expect("${local_rank", "${local_rank");
	expect("${ rank}", "${ rank}");
	expect("${1}", "${1}");
}

static void
test_escape(void **state)
{
	(void)state;
	expect("$$", "$");
	expect("$$local_rank", "$local_rank");
	expect("$$$rank", "$11");
	expect("cost: 5$$", "cost: 5$");
}

static void
test_prefix(void **state)
{
	(void)state;
	expect("[${role_name}${local_rank}]:", "[default3]:");
	expect("[${role_name}/${rank}] ", "[default/11] ");
}

static void
test_truncation(void **state)
{
	char buf[6];

	(void)state;
	memset(buf, 'z', sizeof(buf));
	assert_int_equal(subst_expand("--x=${rank}!", vars, NVARS, buf,
	    sizeof(buf)), 7);
	assert_string_equal(buf, "--x=1");
	assert_int_equal(subst_expand("$$$$", vars, NVARS, buf, sizeof(buf)),
	    2);
	assert_string_equal(buf, "$$");
	/* A zero-size buffer is not written to but still sized. */
	assert_int_equal(subst_expand("${role_name}", vars, NVARS, NULL, 0), 7);
	assert_int_equal(subst_expand("ab", vars, NVARS, buf, 1), 2);
	assert_string_equal(buf, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_macro),
		cmocka_unit_test(test_unknown_kept),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_truncation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
