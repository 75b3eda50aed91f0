#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "atomicfile.h"
#include "kvfile.h"

struct fixture {
	char	dir[64];
	int	dfd;
	char	path[PATH_MAX];		/* dir/status */
};

static int
setup(void **state)
{
	struct fixture *fx;

	if ((fx = calloc(1, sizeof(*fx))) == NULL)
		return -1;
	strlcpy(fx->dir, "/tmp/test_kvfile.XXXXXX", sizeof(fx->dir));
	if (mkdtemp(fx->dir) == NULL)
		return -1;
	fx->dfd = open(fx->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fx->dfd == -1)
		return -1;
	if (pathf(fx->path, sizeof(fx->path), "%s/status", fx->dir) == -1)
		return -1;
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;

	close(fx->dfd);
	remove_tree(fx->dir);
	free(fx);
	return 0;
}

/* The whole file, NUL-terminated, for byte-exact checks. */
static char *
slurp(const char *path)
{
	static char buf[8192];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_int_not_equal(fd, -1);
	n = read(fd, buf, sizeof(buf) - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
	return buf;
}

/* Names in the directory other than . and .., for "no temp left". */
static int
count_entries(const char *dir)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	assert_non_null(d = opendir(dir));
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static void
test_roundtrip(void **state)
{
	struct fixture *fx = *state;
	struct kvbuf kb = { 0 };
	struct kvlist kl;

	kv_add(&kb, "state", "running");
	kv_addf(&kb, "pid", "%d", 4242);
	kv_addf(&kb, "since", "%.3f", 12.5);
	kv_add(&kb, "empty", "");
	kv_add(&kb, "eq", "a=b");
	assert_int_equal(kv_write_at(&kb, fx->dfd, "status"), 0);
	kv_free(&kb);

	assert_string_equal(slurp(fx->path),
	    "state=running\npid=4242\nsince=12.500\nempty=\neq=a=b\n");

	assert_int_equal(kv_read(fx->path, &kl), 0);
	assert_int_equal(kl.n, 5);
	assert_string_equal(kv_get(&kl, "state"), "running");
	assert_string_equal(kv_get(&kl, "pid"), "4242");
	assert_string_equal(kv_get(&kl, "since"), "12.500");
	assert_string_equal(kv_get(&kl, "empty"), "");
	assert_string_equal(kv_get(&kl, "eq"), "a=b");
	kv_list_free(&kl);
}

/* A value longer than kv_addf's stack buffer takes its other path. */
static void
test_addf_long(void **state)
{
	struct fixture *fx = *state;
	struct kvbuf kb = { 0 };
	struct kvlist kl;
	char want[1001];

	memset(want, 'x', 1000);
	want[1000] = '\0';
	kv_addf(&kb, "long", "%s", want);
	kv_add(&kb, "after", "1");
	assert_int_equal(kv_write_at(&kb, fx->dfd, "status"), 0);
	kv_free(&kb);

	assert_int_equal(kv_read(fx->path, &kl), 0);
	assert_int_equal(kl.n, 2);
	assert_string_equal(kv_get(&kl, "long"), want);
	assert_string_equal(kv_get(&kl, "after"), "1");
	kv_list_free(&kl);
}

static void
test_newline_not_forged(void **state)
{
	struct fixture *fx = *state;
	struct kvbuf kb = { 0 };
	struct kvlist kl;

	kv_add(&kb, "msg", "first\nstate=forged");
	kv_addf(&kb, "why", "a\r\nb%s", "\nrank=7");
	kv_add(&kb, "state", "real");
	assert_int_equal(kv_write_at(&kb, fx->dfd, "status"), 0);
	kv_free(&kb);

	assert_string_equal(slurp(fx->path),
	    "msg=first state=forged\nwhy=a  b rank=7\nstate=real\n");
	assert_int_equal(kv_read(fx->path, &kl), 0);
	assert_int_equal(kl.n, 3);
	assert_string_equal(kv_get(&kl, "msg"), "first state=forged");
	assert_string_equal(kv_get(&kl, "state"), "real");
	assert_null(kv_get(&kl, "rank"));
	kv_list_free(&kl);
}

static void
test_missing_key(void **state)
{
	struct fixture *fx = *state;
	struct kvbuf kb = { 0 };
	struct kvlist kl;

	kv_add(&kb, "a", "1");
	assert_int_equal(kv_write_at(&kb, fx->dfd, "status"), 0);
	kv_free(&kb);
	assert_int_equal(kv_read(fx->path, &kl), 0);
	assert_null(kv_get(&kl, "b"));
	assert_null(kv_get(&kl, "a="));
	assert_null(kv_get(&kl, ""));
	kv_list_free(&kl);
}

static void
test_missing_file(void **state)
{
	struct fixture *fx = *state;
	struct kvlist kl;

	errno = 0;
	assert_int_equal(kv_read(fx->path, &kl), -1);
	assert_int_equal(errno, ENOENT);
}

static void
test_lines_without_eq(void **state)
{
	struct fixture *fx = *state;
	static const char text[] =
	    "junk\n\n=novalue\nk=v\n# comment\nlast=x";
	struct kvlist kl;

	assert_int_equal(atomic_write(fx->path, text, sizeof(text) - 1,
	    0644), 0);
	assert_int_equal(kv_read(fx->path, &kl), 0);
	assert_int_equal(kl.n, 2);
	assert_string_equal(kl.pairs[0].key, "k");
	assert_string_equal(kl.pairs[0].value, "v");
	assert_string_equal(kv_get(&kl, "last"), "x");	/* no final '\n' */
	assert_null(kv_get(&kl, "junk"));
	assert_null(kv_get(&kl, "# comment"));
	kv_list_free(&kl);
}

static void
test_parse_empty(void **state)
{
	struct kvlist kl;
	char *text;

	(void)state;
	assert_non_null(text = strdup(""));
	assert_int_equal(kv_parse(text, &kl), 0);
	assert_int_equal(kl.n, 0);
	assert_null(kv_get(&kl, "a"));
	kv_list_free(&kl);
}

static void
test_atomic_replace(void **state)
{
	struct fixture *fx = *state;
	struct kvbuf kb = { 0 };
	struct kvlist kl;

	kv_add(&kb, "state", "one");
	kv_add(&kb, "extra", "gone later");
	assert_int_equal(kv_write_at(&kb, fx->dfd, "status"), 0);
	kv_reset(&kb);
	kv_add(&kb, "state", "two");
	assert_int_equal(kv_write_at(&kb, fx->dfd, "status"), 0);
	kv_free(&kb);

	assert_string_equal(slurp(fx->path), "state=two\n");
	assert_int_equal(faccessat(fx->dfd, "status.new", F_OK, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(count_entries(fx->dir), 1);

	assert_int_equal(kv_read(fx->path, &kl), 0);
	assert_int_equal(kl.n, 1);
	assert_null(kv_get(&kl, "extra"));
	kv_list_free(&kl);
}

static void
test_write_empty(void **state)
{
	struct fixture *fx = *state;
	struct kvbuf kb = { 0 };
	struct kvlist kl;

	assert_int_equal(kv_write_at(&kb, fx->dfd, "status"), 0);
	assert_string_equal(slurp(fx->path), "");
	assert_int_equal(kv_read(fx->path, &kl), 0);
	assert_int_equal(kl.n, 0);
	kv_list_free(&kl);
	kv_free(&kb);
}

/* A buffer that lost an allocation must not replace a good file. */
static void
test_failed_not_written(void **state)
{
	struct fixture *fx = *state;
	struct kvbuf kb = { 0 };

	kv_add(&kb, "state", "good");
	assert_int_equal(kv_write_at(&kb, fx->dfd, "status"), 0);
	kv_reset(&kb);
	kv_add(&kb, "state", "partial");
	kb.failed = 1;
	assert_int_equal(kv_write_at(&kb, fx->dfd, "status"), -1);
	assert_int_equal(errno, ENOMEM);
	assert_string_equal(slurp(fx->path), "state=good\n");
	kv_reset(&kb);
	assert_int_equal(kb.failed, 0);
	kv_free(&kb);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addf_long, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newline_not_forged, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_missing_key, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_missing_file, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_lines_without_eq, setup,
		    teardown),
		cmocka_unit_test(test_parse_empty),
		cmocka_unit_test_setup_teardown(test_atomic_replace, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_write_empty, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_failed_not_written, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
