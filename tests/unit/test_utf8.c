/* lib/utf8.c: what is valid, what is replaced, where a copy is cut. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "utf8.h"

static void
test_valid(void **state)
{
	static const char *good[] = { "", "abc", "\xc3\xa9", "\xe2\x82\xac",
	    "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf" };
	static const char *bad[] = { "\xc3", "\xc0\xaf", "\xc1\xbf",
	    "\xe0\x80\xaf", "\xed\xa0\x80", "\xf0\x80\x80\xaf", "\xf4\x90\x80\x80",
	    "\xf5\x80\x80\x80", "\xff", "\x80", "a\xe2\x82", "\xe2\x28\xa1" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(utf8_valid(good[i], strlen(good[i])));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *fixed = utf8_fix(bad[i]);
		json_t *j;

		assert_false(utf8_valid(bad[i], strlen(bad[i])));
		assert_non_null(fixed);
		assert_true(utf8_valid(fixed, strlen(fixed)));
		/* Whatever jansson takes is what we call valid. */
		assert_null(json_string(bad[i]));
		assert_non_null(j = json_text(bad[i]));
		json_decref(j);
		free(fixed);
	}
}

static void
test_fix(void **state)
{
	char *s;

	(void)state;
	s = utf8_fix("x\\\xc3");
	assert_string_equal(s, "x\\\xef\xbf\xbd");
	free(s);
	s = utf8_fix("\xc3\xa9\xff\xc3\xa9");
	assert_string_equal(s, "\xc3\xa9\xef\xbf\xbd\xc3\xa9");
	free(s);
	s = utf8_fix("plain");
	assert_string_equal(s, "plain");
	free(s);
}

static void
test_strlcpy(void **state)
{
	char buf[4];

	(void)state;
	/* "aé€": 1 + 2 + 3 bytes; 3 fit, the euro sign must not be cut. */
	assert_int_equal(utf8_strlcpy(buf, "a\xc3\xa9\xe2\x82\xac", sizeof(buf)),
	    6);
	assert_string_equal(buf, "a\xc3\xa9");
	assert_int_equal(utf8_strlcpy(buf, "ab\xc3\xa9", sizeof(buf)), 4);
	assert_string_equal(buf, "ab");
	assert_int_equal(utf8_strlcpy(buf, "\xf0\x9f\x98\x80", sizeof(buf)), 4);
	assert_string_equal(buf, "");
	assert_int_equal(utf8_strlcpy(buf, "abc", sizeof(buf)), 3);
	assert_string_equal(buf, "abc");
	assert_int_equal(utf8_strlcpy(buf, "abcd", sizeof(buf)), 4);
	assert_string_equal(buf, "abc");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_fix),
		cmocka_unit_test(test_strlcpy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
