/* JOBDIR/env/ as runit's chpst -e and s6-envdir read it (envdir.h). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "../../supervisor/spawn/envdir.h"

static void
test_value(void **state)
{
	char out[16];

	(void)state;
	assert_int_equal(envdir_value("", 0, out, sizeof(out)), 0);
	assert_int_equal(envdir_value("\n", 1, out, sizeof(out)), 1);
	assert_string_equal(out, "");
	assert_int_equal(envdir_value("abc \t\nsecond", 12, out, sizeof(out)),
	    1);
	assert_string_equal(out, "abc");
	assert_int_equal(envdir_value(" lead", 5, out, sizeof(out)), 1);
	assert_string_equal(out, " lead");
	assert_int_equal(envdir_value("a\0b", 3, out, sizeof(out)), 1);
	assert_string_equal(out, "a\nb");
	assert_int_equal(envdir_value("0123456789abcdef", 16, out,
	    sizeof(out)), -1);
	assert_int_equal(envdir_value("0123456789abcde", 15, out,
	    sizeof(out)), 1);
}

static void
put(int dfd, const char *name, const char *text, size_t n)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd != -1);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
}

static void
test_apply(void **state)
{
	char dir[] = "/tmp/test_envdir.XXXXXX";
	char *base[] = { "KEEP=1", "GONE=2", "OVER=3", NULL };
	struct envbuf eb = { 0 };
	int dfd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_true((dfd = open(dir, O_RDONLY | O_DIRECTORY)) != -1);
	put(dfd, "GONE", "", 0);
	put(dfd, "OVER", "new\n", 4);
	put(dfd, "NEW", "x y  \n", 6);
	put(dfd, ".hidden", "no\n", 3);
	assert_int_equal(mkfifoat(dfd, "FIFO", 0600), 0);
	assert_int_equal(envbuf_copy(&eb, base), 0);
	/* GONE, OVER, NEW: the dot file and the FIFO are skipped. */
	assert_int_equal(envdir_apply(dfd, dir, &eb, NULL, 0), 3);
	assert_string_equal(envbuf_get(&eb, "KEEP"), "1");
	assert_null(envbuf_get(&eb, "GONE"));
	assert_string_equal(envbuf_get(&eb, "OVER"), "new");
	assert_string_equal(envbuf_get(&eb, "NEW"), "x y");
	assert_null(envbuf_get(&eb, ".hidden"));
	assert_null(envbuf_get(&eb, "FIFO"));
	assert_int_equal(eb.len, 3);
	assert_null(eb.vars[eb.len]);
	envbuf_free(&eb);
	unlinkat(dfd, "GONE", 0);
	unlinkat(dfd, "OVER", 0);
	unlinkat(dfd, "NEW", 0);
	unlinkat(dfd, ".hidden", 0);
	unlinkat(dfd, "FIFO", 0);
	close(dfd);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_value),
		cmocka_unit_test(test_apply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
