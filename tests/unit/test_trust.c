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

#include "../../supervisor/trust.h"

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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
