#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../supervisor/config/trust.h"

struct fixture {
	char	dir[64];
	int	fd;
	char	err[512];
};

static int
setup(void **state)
{
	struct fixture *fx;

	if ((fx = calloc(1, sizeof(*fx))) == NULL)
		return -1;
	strlcpy(fx->dir, "/tmp/test_trust.XXXXXX", sizeof(fx->dir));
	if (mkdtemp(fx->dir) == NULL)
		return -1;
	fx->fd = open(fx->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = fx;
	return fx->fd == -1 ? -1 : 0;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;

	close(fx->fd);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

static int
check(struct fixture *fx, mode_t mode, int flags)
{
	assert_int_equal(fchmod(fx->fd, mode), 0);
	fx->err[0] = '\0';
	return trust_check(fx->fd, fx->dir, flags, fx->err, sizeof(fx->err));
}

static void
test_modes(void **state)
{
	struct fixture *fx = *state;
	char want[256];

	assert_int_equal(check(fx, 0700, 0), 0);
	assert_int_equal(check(fx, 0755, 0), 0);
	assert_int_equal(check(fx, 0775, 0), -1);
	assert_int_equal(errno, EPERM);
	snprintf(want, sizeof(want), "%s: owner uid %u, mode 0775: writable "
	    "by group or others, so esv does not trust it; chmod go-w it",
	    fx->dir, (unsigned)geteuid());
	assert_string_equal(fx->err, want);
	assert_int_equal(check(fx, 0757, 0), -1);
	/* Sticky: a /tmp for the log base, never for JOBDIR. */
	assert_int_equal(check(fx, 01777, TRUST_STICKY_OK), 0);
	assert_int_equal(check(fx, 01777, 0), -1);
	assert_non_null(strstr(fx->err, "mode 1777"));
	assert_int_equal(check(fx, 0777, TRUST_STICKY_OK), -1);
	assert_non_null(strstr(fx->err, "chmod go-w it, or chmod +t it"));
}

static void
test_owner(void **state)
{
	struct fixture *fx = *state;

	if (geteuid() != 0)
		skip();
	assert_int_equal(fchmod(fx->fd, 0700), 0);
	assert_int_equal(fchown(fx->fd, 65534, 65534), 0);
	assert_int_equal(trust_check(fx->fd, "D", 0, fx->err,
	    sizeof(fx->err)), -1);
	assert_string_equal(fx->err, "D: owner uid 65534, mode 0700: owned by "
	    "another user, so esv does not trust it; chown it to uid 0");
	assert_int_equal(fchown(fx->fd, 0, 0), 0);
	assert_int_equal(check(fx, 0700, 0), 0);
}

/* trust_open_dir on fx->dir/rel: the fd's path in fx->err on success. */
static int
walk(struct fixture *fx, const char *rel, int flags, char *real,
    size_t reallen)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", fx->dir, rel);
	fx->err[0] = '\0';
	fd = trust_open_dir(path, flags, 0755, real, reallen, fx->err,
	    sizeof(fx->err));
	if (fd != -1)
		close(fd);
	return fd == -1 ? -1 : 0;
}

static void
assert_real(struct fixture *fx, const char *real, const char *rel)
{
	char want[256];

	snprintf(want, sizeof(want), "%s/%s", fx->dir, rel);
	assert_string_equal(real, want);
}

/* Remove what the walk tests made in the fixture's directory. */
static int
teardown_tree(void **state)
{
	struct fixture *fx = *state;
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx %s; rm -rf %s", fx->dir,
	    fx->dir);
	if (system(cmd) != 0)
		return -1;
	close(fx->fd);
	free(fx);
	return 0;
}

static void
test_walk(void **state)
{
	struct fixture *fx = *state;
	char real[256], cwd[256];
	int fd;

	assert_int_equal(fchmod(fx->fd, 0755), 0);
	assert_int_equal(mkdirat(fx->fd, "a", 0755), 0);
	assert_int_equal(mkdirat(fx->fd, "a/b", 0755), 0);
	assert_int_equal(walk(fx, "a/b", 0, real, sizeof(real)), 0);
	assert_real(fx, real, "a/b");
	/* ".", "..", doubled slashes: the path without them. */
	assert_int_equal(walk(fx, "a/./b/..//b/", 0, real, sizeof(real)), 0);
	assert_real(fx, real, "a/b");
	/* Relative to the working directory. */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(fx->dir), 0);
	fd = trust_open_dir("a/b", 0, 0, real, sizeof(real), fx->err,
	    sizeof(fx->err));
	assert_int_equal(chdir(cwd), 0);
	assert_true(fd >= 0);
	close(fd);
	assert_real(fx, real, "a/b");
	/* Missing: ENOENT; made with TRUST_MKDIR, or only the last. */
	assert_int_equal(walk(fx, "a/x/y", 0, NULL, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(walk(fx, "a/x/y", TRUST_MKDIR_LAST, NULL, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(walk(fx, "a/y", TRUST_MKDIR_LAST, NULL, 0), 0);
	assert_int_equal(walk(fx, "a/x/y", TRUST_MKDIR, real, sizeof(real)),
	    0);
	assert_real(fx, real, "a/x/y");
	/* A file on the way. */
	assert_int_equal(close(openat(fx->fd, "a/f", O_WRONLY | O_CREAT,
	    0600)), 0);
	assert_int_equal(walk(fx, "a/f/b", 0, NULL, 0), -1);
	assert_int_equal(errno, ENOTDIR);
}

static void
test_walk_modes(void **state)
{
	struct fixture *fx = *state;
	char want[512];

	assert_int_equal(fchmod(fx->fd, 0755), 0);
	assert_int_equal(mkdirat(fx->fd, "a", 0755), 0);
	assert_int_equal(mkdirat(fx->fd, "a/b", 0755), 0);
	/* Others could rename b away and put anything in its place. */
	assert_int_equal(fchmod(fx->fd, 0777), 0);
	assert_int_equal(walk(fx, "a/b", 0, NULL, 0), -1);
	assert_int_equal(errno, EPERM);
	snprintf(want, sizeof(want), "%s: owner uid %u, mode 0777: writable "
	    "by group or others, so esv does not trust it; chmod go-w it, or "
	    "chmod +t it", fx->dir, (unsigned)geteuid());
	assert_string_equal(fx->err, want);
	/* Sticky, as /tmp: nobody else can rename what is ours in it. */
	assert_int_equal(fchmod(fx->fd, 01777), 0);
	assert_int_equal(walk(fx, "a/b", 0, NULL, 0), 0);
	/* The last is held to the caller's rule. */
	assert_int_equal(walk(fx, "", 0, NULL, 0), -1);
	assert_non_null(strstr(fx->err, "mode 1777: writable by group or "
	    "others, so esv does not trust it; chmod go-w it"));
	assert_int_equal(walk(fx, "", TRUST_STICKY_OK, NULL, 0), 0);
	assert_int_equal(fchmod(fx->fd, 0755), 0);
	assert_int_equal(fchmodat(fx->fd, "a/b", 0775, 0), 0);
	assert_int_equal(walk(fx, "a/b", 0, NULL, 0), -1);
	snprintf(want, sizeof(want), "%s/a/b: owner uid", fx->dir);
	assert_memory_equal(fx->err, want, strlen(want));
}

static void
test_walk_links(void **state)
{
	struct fixture *fx = *state;
	char real[256], target[256];

	assert_int_equal(fchmod(fx->fd, 0755), 0);
	assert_int_equal(mkdirat(fx->fd, "a", 0755), 0);
	assert_int_equal(mkdirat(fx->fd, "a/b", 0755), 0);
	/* Ours: followed, relative and absolute, and gone from real. */
	assert_int_equal(symlinkat("a/b", fx->fd, "rel"), 0);
	snprintf(target, sizeof(target), "%s/a", fx->dir);
	assert_int_equal(symlinkat(target, fx->fd, "abs"), 0);
	assert_int_equal(walk(fx, "rel", 0, real, sizeof(real)), 0);
	assert_real(fx, real, "a/b");
	assert_int_equal(walk(fx, "abs/b/../b", 0, real, sizeof(real)), 0);
	assert_real(fx, real, "a/b");
	/* Not the last with TRUST_NOFOLLOW_LAST; the ones before, yes. */
	assert_int_equal(walk(fx, "rel", TRUST_NOFOLLOW_LAST, NULL, 0), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(walk(fx, "abs/b", TRUST_NOFOLLOW_LAST, NULL, 0), 0);
	/* The target is walked under the same rules. */
	assert_int_equal(fchmodat(fx->fd, "a", 0777, 0), 0);
	assert_int_equal(walk(fx, "rel", 0, NULL, 0), -1);
	assert_int_equal(errno, EPERM);
	assert_non_null(strstr(fx->err, "/a: owner uid"));
	assert_int_equal(fchmodat(fx->fd, "a", 0755, 0), 0);
	/* A loop. */
	assert_int_equal(symlinkat("loop", fx->fd, "loop"), 0);
	assert_int_equal(walk(fx, "loop", 0, NULL, 0), -1);
	assert_int_equal(errno, ELOOP);
}

/* Another user's link or directory on the way: refused, named. */
static void
test_walk_others(void **state)
{
	struct fixture *fx = *state;
	char want[512];

	if (geteuid() != 0)
		skip();
	assert_int_equal(fchmod(fx->fd, 0755), 0);
	assert_int_equal(mkdirat(fx->fd, "a", 0755), 0);
	assert_int_equal(mkdirat(fx->fd, "a/b", 0755), 0);
	assert_int_equal(symlinkat("a", fx->fd, "theirs"), 0);
	assert_int_equal(fchownat(fx->fd, "theirs", 65534, 65534,
	    AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(walk(fx, "theirs/b", 0, NULL, 0), -1);
	assert_int_equal(errno, EPERM);
	snprintf(want, sizeof(want), "%s/theirs: a symbolic link of uid "
	    "65534, another user, so esv does not follow it; name the "
	    "directory without it", fx->dir);
	assert_string_equal(fx->err, want);
	assert_int_equal(fchownat(fx->fd, "a", 65534, 65534, 0), 0);
	assert_int_equal(walk(fx, "a/b", 0, NULL, 0), -1);
	assert_int_equal(errno, EPERM);
	snprintf(want, sizeof(want), "%s/a: owner uid 65534, mode 0755: "
	    "owned by another user", fx->dir);
	assert_memory_equal(fx->err, want, strlen(want));
	/* Made by us, then found to be theirs: the same. */
	assert_int_equal(walk(fx, "a/b/c", TRUST_MKDIR, NULL, 0), -1);
	assert_int_equal(errno, EPERM);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk, setup,
		    teardown_tree),
		cmocka_unit_test_setup_teardown(test_walk_modes, setup,
		    teardown_tree),
		cmocka_unit_test_setup_teardown(test_walk_links, setup,
		    teardown_tree),
		cmocka_unit_test_setup_teardown(test_walk_others, setup,
		    teardown_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
