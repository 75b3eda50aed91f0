/*
 * cgroup v2 accounting read from a cgroup directory (lib/cgstat.c), on a
 * tree of plain files made here: this host has no memory controller on
 * cgroup v2, so the OOM path is checked this way, down to the failure
 * message (supervisor/report/failure.c).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgstat.h"
#include "../../supervisor/report/failure.h"

static void
put(int dfd, const char *name, const char *text)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd != -1);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void
test_keyed(void **state)
{
	(void)state;
	assert_int_equal(cgstat_keyed("usage_usec 12\nuser_usec 3\n",
	    "usage_usec"), 12);
	assert_int_equal(cgstat_keyed("usage_usec 12\nuser_usec 3\n",
	    "user_usec"), 3);
	assert_int_equal(cgstat_keyed("xusage_usec 12\n", "usage_usec"), -1);
	assert_int_equal(cgstat_keyed("usage_usec\n", "usage_usec"), -1);
	assert_int_equal(cgstat_keyed("usage_usec 1x\n", "usage_usec"), -1);
	assert_int_equal(cgstat_keyed("usage_usec -4\n", "usage_usec"), -1);
	assert_int_equal(cgstat_keyed("", "usage_usec"), -1);
	assert_int_equal(cgstat_keyed("low 0\nhigh 0\nmax 7\noom 2\n"
	    "oom_kill 1\noom_group_kill 0", "oom_kill"), 1);
}

static void
test_tree(void **state)
{
	char dir[] = "/tmp/test_cgstat.XXXXXX";
	struct cgstat st;
	struct worker_failure f = { .local_rank = 3, .rank = 3, .pid = 4242,
	    .exitcode = -SIGKILL };
	static const char *const files[] = { "cpu.stat", "memory.current",
	    "memory.peak", "memory.events", "cgroup.events" };
	size_t i;
	int dfd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_true((dfd = open(dir, O_RDONLY | O_DIRECTORY)) != -1);
	/* Only cgroup.events and cpu.stat: no memory controller. */
	put(dfd, "cgroup.events", "populated 1\nfrozen 0\n");
	put(dfd, "cpu.stat", "usage_usec 1500000\nuser_usec 1400000\n"
	    "system_usec 100000\n");
	cgstat_read(dfd, &st, CGSTAT_ALL);
	assert_int_equal(st.cpu_usec, 1500000);
	assert_int_equal(st.populated, 1);
	assert_int_equal(st.frozen, 0);
	assert_int_equal(st.memory_current, -1);
	assert_int_equal(st.memory_peak, -1);
	assert_int_equal(st.oom_kill, -1);
	/* The memory controller: the OOM killer took one process. */
	put(dfd, "memory.current", "0\n");
	put(dfd, "memory.peak", "65712999629\n");
	put(dfd, "memory.events", "low 0\nhigh 0\nmax 12\noom 1\n"
	    "oom_kill 1\noom_group_kill 0\n");
	put(dfd, "cgroup.events", "populated 0\nfrozen 0\n");
	cgstat_read(dfd, &st, CGSTAT_ALL);
	assert_int_equal(st.memory_peak, 65712999629LL);
	assert_int_equal(st.oom_kill, 1);
	assert_int_equal(st.populated, 0);
	/* What is not asked for is not read: CPU time alone, at an exit. */
	cgstat_read(dfd, &st, CGSTAT_CPU);
	assert_int_equal(st.cpu_usec, 1500000);
	assert_int_equal(st.memory_peak, -1);
	assert_int_equal(st.oom_kill, -1);
	assert_int_equal(st.populated, -1);
	cgstat_read(dfd, &st, CGSTAT_CPU | CGSTAT_MEMORY);
	assert_int_equal(st.memory_peak, 65712999629LL);
	assert_int_equal(st.populated, -1);
	/* A file longer than any of the kernel's: not one of ours. */
	{
		char big[5000];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		put(dfd, "cpu.stat", big);
		cgstat_read(dfd, &st, CGSTAT_CPU);
		assert_int_equal(st.cpu_usec, -1);
		put(dfd, "cpu.stat", "usage_usec 1500000\n");
	}
	cgstat_read(dfd, &st, CGSTAT_ALL);
	f.message = strdup("Signal 9 (SIGKILL) received by PID 4242");
	assert_int_equal(failure_note_oom(&f, st.oom_kill, st.memory_peak), 1);
	assert_string_equal(f.message, "Signal 9 (SIGKILL) received by PID "
	    "4242: killed by the OOM killer at 61.2 GiB (memory.peak of its "
	    "cgroup)");
	/* Not an OOM kill: a SIGKILL of a cgroup without one, or a SIGTERM. */
	put(dfd, "memory.events", "oom 0\noom_kill 0\n");
	cgstat_read(dfd, &st, CGSTAT_ALL);
	assert_int_equal(failure_note_oom(&f, st.oom_kill, st.memory_peak), 0);
	f.exitcode = -SIGTERM;
	assert_int_equal(failure_note_oom(&f, 1, 1), 0);
	free(f.message);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlinkat(dfd, files[i], 0);
	close(dfd);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(cgstat_read_path(dir, &st), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keyed),
		cmocka_unit_test(test_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
