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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "atomicfile.h"

struct fixture {
	char	dir[64];
	int	dfd;
};

static int
setup(void **state)
{
	struct fixture *fx;

	if ((fx = calloc(1, sizeof(*fx))) == NULL)
		return -1;
	strlcpy(fx->dir, "/tmp/test_atomicfile.XXXXXX", sizeof(fx->dir));
	if (mkdtemp(fx->dir) == NULL)
		return -1;
	fx->dfd = open(fx->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fx->dfd == -1)
		return -1;
	umask(022);
	*state = fx;
	return 0;
}

/* Not remove_tree: it is under test, and must not clean up after itself. */
static int
teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	close(fx->dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	if (system(cmd) != 0)
		return -1;
	free(fx);
	return 0;
}

static void
path_in(const struct fixture *fx, char *buf, size_t len, const char *name)
{
	assert_int_equal(pathf(buf, len, "%s/%s", fx->dir, name), 0);
}

static char *
slurp_at(int dfd, const char *name)
{
	static char buf[4096];
	ssize_t n;
	int fd;

	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	assert_int_not_equal(fd, -1);
	n = read(fd, buf, sizeof(buf) - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
	return buf;
}

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

static mode_t
perms_at(int dfd, const char *name)
{
	struct stat sb;

	assert_int_equal(fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW), 0);
	return sb.st_mode & 07777;
}

static void
test_write_replaces(void **state)
{
	struct fixture *fx = *state;
	struct stat before, after;

	assert_int_equal(atomic_write_at(fx->dfd, "f", "first\n", 6, 0644), 0);
	assert_string_equal(slurp_at(fx->dfd, "f"), "first\n");
	assert_int_equal(fstatat(fx->dfd, "f", &before, 0), 0);

	assert_int_equal(atomic_write_at(fx->dfd, "f", "2", 1, 0644), 0);
	assert_string_equal(slurp_at(fx->dfd, "f"), "2");
	/* A new inode: readers holding the old file keep a whole one. */
	assert_int_equal(fstatat(fx->dfd, "f", &after, 0), 0);
	assert_int_not_equal(before.st_ino, after.st_ino);

	assert_int_equal(faccessat(fx->dfd, "f.new", F_OK, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(count_entries(fx->dir), 1);

	assert_int_equal(atomic_write_at(fx->dfd, "f", "", 0, 0644), 0);
	assert_string_equal(slurp_at(fx->dfd, "f"), "");
}

/*
 * A name.new already there, a symlink to another file in particular, is
 * never written through: a crash's leftover is replaced, and a planted
 * link leaves its target alone.
 */
static void
test_write_stale_new(void **state)
{
	struct fixture *fx = *state;
	struct stat sb;

	assert_int_equal(atomic_write_at(fx->dfd, "victim", "secret", 6,
	    0600), 0);
	assert_int_equal(symlinkat("victim", fx->dfd, "f.new"), 0);
	assert_int_equal(atomic_write_at(fx->dfd, "f", "mine", 4, 0644), 0);
	assert_string_equal(slurp_at(fx->dfd, "victim"), "secret");
	assert_int_equal(fstatat(fx->dfd, "f", &sb, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_string_equal(slurp_at(fx->dfd, "f"), "mine");
	assert_int_equal(faccessat(fx->dfd, "f.new", F_OK, AT_SYMLINK_NOFOLLOW),
	    -1);

	/* A plain leftover: gone, its content not kept. */
	assert_int_equal(atomic_write_at(fx->dfd, "g.new", "stale-and-long",
	    14, 0644), 0);
	assert_int_equal(atomic_write_at(fx->dfd, "g", "ok", 2, 0600), 0);
	assert_string_equal(slurp_at(fx->dfd, "g"), "ok");
	assert_int_equal(perms_at(fx->dfd, "g"), 0600);
	assert_int_equal(count_entries(fx->dir), 3);	/* victim f g */
}

static void
test_write_path(void **state)
{
	struct fixture *fx = *state;
	char path[PATH_MAX];

	path_in(fx, path, sizeof(path), "g");
	assert_int_equal(atomic_write(path, "abc", 3, 0644), 0);
	assert_string_equal(slurp_at(fx->dfd, "g"), "abc");
	assert_int_equal(count_entries(fx->dir), 1);
}

static void
test_mode(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(atomic_write_at(fx->dfd, "m", "x", 1, 0640), 0);
	assert_int_equal(perms_at(fx->dfd, "m"), 0640);
	/* Replacing a 0640 file with mode 0600 gives 0600, not the old. */
	assert_int_equal(atomic_write_at(fx->dfd, "m", "y", 1, 0600), 0);
	assert_int_equal(perms_at(fx->dfd, "m"), 0600);
	assert_int_equal(atomic_write_at(fx->dfd, "m", "z", 1, 0644), 0);
	assert_int_equal(perms_at(fx->dfd, "m"), 0644);
}

/* A failed rename must not leave its temp behind. */
static void
test_write_fails_clean(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(mkdirat(fx->dfd, "d", 0755), 0);
	assert_int_equal(mkdirat(fx->dfd, "d/sub", 0755), 0);
	assert_int_equal(atomic_write_at(fx->dfd, "d", "x", 1, 0644), -1);
	assert_true(errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST);
	assert_int_equal(faccessat(fx->dfd, "d.new", F_OK, 0), -1);
	assert_int_equal(count_entries(fx->dir), 1);

	assert_int_equal(atomic_write_at(fx->dfd, "nodir/f", "x", 1, 0644),
	    -1);
	assert_int_equal(errno, ENOENT);
}

static void
test_pathf(void **state)
{
	char buf[8];

	(void)state;
	assert_int_equal(pathf(buf, sizeof(buf), "%s/%d", "abc", 123), 0);
	assert_string_equal(buf, "abc/123");	/* exactly fits */
	errno = 0;
	assert_int_equal(pathf(buf, sizeof(buf), "%s/%d", "abc", 1234), -1);
	assert_int_equal(errno, ENAMETOOLONG);
	errno = 0;
	assert_int_equal(pathf(buf, sizeof(buf), "%s", "a much longer path"),
	    -1);
	assert_int_equal(errno, ENAMETOOLONG);
	assert_int_equal(pathf(buf, 1, "%s", ""), 0);
	assert_string_equal(buf, "");
}

static void
assert_dir(const char *path, mode_t perms)
{
	struct stat sb;

	assert_int_equal(lstat(path, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 0777, perms);
}

static void
test_mkdir_p(void **state)
{
	struct fixture *fx = *state;
	char p[PATH_MAX];

	path_in(fx, p, sizeof(p), "a/b/c");
	assert_int_equal(mkdir_p(p, 0750), 0);
	assert_dir(p, 0750);
	path_in(fx, p, sizeof(p), "a/b");
	assert_dir(p, 0750);
	path_in(fx, p, sizeof(p), "a");
	assert_dir(p, 0750);

	/* Existing, whole or in part, and with a trailing slash. */
	path_in(fx, p, sizeof(p), "a/b/c");
	assert_int_equal(mkdir_p(p, 0750), 0);
	path_in(fx, p, sizeof(p), "a/b/d/");
	assert_int_equal(mkdir_p(p, 0700), 0);
	assert_dir(p, 0700);
	assert_int_equal(mkdir_p(fx->dir, 0700), 0);
	assert_int_equal(mkdir_p("/", 0755), 0);
}

static void
test_mkdir_p_through_file(void **state)
{
	struct fixture *fx = *state;
	char p[PATH_MAX];

	assert_int_equal(atomic_write_at(fx->dfd, "file", "", 0, 0644), 0);
	path_in(fx, p, sizeof(p), "file/sub");
	assert_int_equal(mkdir_p(p, 0755), -1);
	assert_int_equal(errno, ENOTDIR);
}

static void
test_remove_tree(void **state)
{
	struct fixture *fx = *state;
	char p[PATH_MAX], outside[PATH_MAX];
	struct stat sb;

	path_in(fx, p, sizeof(p), "t/x/y/z");
	assert_int_equal(mkdir_p(p, 0755), 0);
	assert_int_equal(mkdirat(fx->dfd, "keep", 0755), 0);
	assert_int_equal(atomic_write_at(fx->dfd, "keep/precious", "p", 1,
	    0644), 0);
	assert_int_equal(atomic_write_at(fx->dfd, "t/f1", "1", 1, 0644), 0);
	assert_int_equal(atomic_write_at(fx->dfd, "t/x/f2", "2", 1, 0600), 0);
	assert_int_equal(atomic_write_at(fx->dfd, "t/x/y/z/f3", "3", 1, 0644),
	    0);
	assert_int_equal(mkfifoat(fx->dfd, "t/x/fifo", 0600), 0);
	/* A symlink to a directory is removed, not followed. */
	path_in(fx, outside, sizeof(outside), "keep");
	assert_int_equal(symlinkat(outside, fx->dfd, "t/x/link"), 0);
	assert_int_equal(symlinkat("/nonexistent", fx->dfd, "t/dangling"), 0);

	path_in(fx, p, sizeof(p), "t");
	assert_int_equal(remove_tree(p), 0);
	assert_int_equal(lstat(p, &sb), -1);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(slurp_at(fx->dfd, "keep/precious"), "p");
	assert_int_equal(count_entries(fx->dir), 1);
}

static void
test_remove_tree_missing(void **state)
{
	struct fixture *fx = *state;
	char p[PATH_MAX];

	path_in(fx, p, sizeof(p), "absent");
	assert_int_equal(remove_tree(p), 0);
	path_in(fx, p, sizeof(p), "absent/deeper");
	assert_int_equal(remove_tree(p), 0);
}

static void
test_remove_tree_file(void **state)
{
	struct fixture *fx = *state;
	char p[PATH_MAX];

	assert_int_equal(atomic_write_at(fx->dfd, "lone", "x", 1, 0644), 0);
	path_in(fx, p, sizeof(p), "lone");
	assert_int_equal(remove_tree(p), 0);
	assert_int_equal(count_entries(fx->dir), 0);
}

/*
 * remove_tree_at walks by fd: a symlink given as the name, or met below
 * it, is unlinked and its target kept.
 */
static void
test_remove_tree_at(void **state)
{
	struct fixture *fx = *state;
	char p[PATH_MAX];

	path_in(fx, p, sizeof(p), "keep/deep");
	assert_int_equal(mkdir_p(p, 0755), 0);
	assert_int_equal(atomic_write_at(fx->dfd, "keep/deep/precious", "p", 1,
	    0644), 0);
	assert_int_equal(symlinkat("keep", fx->dfd, "link"), 0);
	assert_int_equal(remove_tree_at(fx->dfd, "link"), 0);
	assert_string_equal(slurp_at(fx->dfd, "keep/deep/precious"), "p");

	path_in(fx, p, sizeof(p), "t/a/b");
	assert_int_equal(mkdir_p(p, 0700), 0);
	assert_int_equal(symlinkat("../../keep", fx->dfd, "t/a/b/up"), 0);
	assert_int_equal(atomic_write_at(fx->dfd, "t/a/f", "f", 1, 0644), 0);
	assert_int_equal(remove_tree_at(fx->dfd, "t"), 0);
	assert_int_equal(remove_tree_at(fx->dfd, "t"), 0);
	assert_string_equal(slurp_at(fx->dfd, "keep/deep/precious"), "p");
	assert_int_equal(count_entries(fx->dir), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_replaces, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_write_path, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_write_stale_new, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_remove_tree_at, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_fails_clean, setup,
		    teardown),
		cmocka_unit_test(test_pathf),
		cmocka_unit_test_setup_teardown(test_mkdir_p, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mkdir_p_through_file,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_tree, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_remove_tree_missing, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_remove_tree_file, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
