#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
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

#include "fifodir.h"

struct fixture {
	char	top[64];
	char	dir[PATH_MAX];
};

/* Every test runs under an alarm: a blocking open or write fails it. */
static void
on_alarm(int sig)
{
	(void)sig;
	fail_msg("blocked: fifodir must never block");
}

static int
setup(void **state)
{
	struct fixture *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return -1;
	strlcpy(f->top, "/tmp/test_fifodir.XXXXXX", sizeof(f->top));
	if (mkdtemp(f->top) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->dir, sizeof(f->dir), "%s/event", f->top);
	if (fifodir_make(f->dir) == -1) {
		rmdir(f->top);
		free(f);
		return -1;
	}
	*state = f;
	alarm(5);
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX + 256];
	struct dirent *de;
	DIR *d;

	alarm(0);
	if ((d = opendir(f->dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			snprintf(path, sizeof(path), "%s/%s", f->dir, de->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(f->dir);
	rmdir(f->top);
	free(f);
	return 0;
}

/* Entries of dir whose names start with prefix. */
static int
count_entries(const char *dir, const char *prefix)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	assert_non_null(d = opendir(dir));
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

/* The next byte in l's FIFO, or -1 if there is none (it never blocks). */
static int
next_byte(const struct fifodir_listener *l)
{
	char c;

	return read(l->fd, &c, 1) == 1 ? (unsigned char)c : -1;
}

static void
test_make_mode(void **state)
{
	struct fixture *f = *state;
	char file[PATH_MAX + 8];
	struct stat sb;
	int fd;

	/* setup ran under the test runner's umask (022 or stricter). */
	assert_int_equal(stat(f->dir, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 03730);
	assert_int_equal(fifodir_make(f->dir), 0);

	snprintf(file, sizeof(file), "%s/file", f->top);
	assert_true((fd = open(file, O_WRONLY | O_CREAT, 0600)) != -1);
	close(fd);
	assert_int_equal(fifodir_make(file), -1);
	assert_int_equal(errno, ENOTDIR);
	unlink(file);
}

static void
test_two_listeners(void **state)
{
	struct fixture *f = *state;
	struct fifodir_listener a, b;

	assert_int_equal(fifodir_listen(f->dir, &a), 0);
	assert_int_equal(fifodir_listen(f->dir, &b), 0);
	assert_string_not_equal(a.path, b.path);
	assert_int_equal(count_entries(f->dir, "ftrig1:"), 2);
	assert_int_equal(count_entries(f->dir, ".ftrig1:"), 0);
	assert_int_equal(next_byte(&a), -1);

	fifodir_broadcast(f->dir, 'u');
	fifodir_broadcast(f->dir, 'd');
	assert_int_equal(next_byte(&a), 'u');
	assert_int_equal(next_byte(&a), 'd');
	assert_int_equal(next_byte(&a), -1);
	assert_int_equal(next_byte(&b), 'u');
	assert_int_equal(next_byte(&b), 'd');
	assert_int_equal(next_byte(&b), -1);

	fifodir_unlisten(&a);
	assert_int_equal(a.fd, -1);
	assert_int_equal(access(b.path, F_OK), 0);
	assert_int_equal(count_entries(f->dir, "ftrig1:"), 1);
	fifodir_broadcast(f->dir, 'x');
	assert_int_equal(next_byte(&b), 'x');
	fifodir_unlisten(&b);
	assert_int_equal(count_entries(f->dir, "ftrig1:"), 0);
}

/* A listener that died without unlisten leaves a FIFO with no reader. */
static void
test_dead_listener_unlinked(void **state)
{
	struct fixture *f = *state;
	struct fifodir_listener dead, live;
	char path[PATH_MAX];

	assert_int_equal(fifodir_listen(f->dir, &dead), 0);
	assert_int_equal(fifodir_listen(f->dir, &live), 0);
	strlcpy(path, dead.path, sizeof(path));
	close(dead.fd);
	close(dead.keep);
	assert_int_equal(access(path, F_OK), 0);

	fifodir_broadcast(f->dir, 'f');
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(next_byte(&live), 'f');
	assert_int_equal(access(live.path, F_OK), 0);
	fifodir_unlisten(&live);
}

/* A listener that never reads must not stall the broadcaster. */
static void
test_full_fifo_does_not_block(void **state)
{
	struct fixture *f = *state;
	struct fifodir_listener l;
	char buf[4096];
	int n = 0;

	assert_int_equal(fifodir_listen(f->dir, &l), 0);
	memset(buf, 'z', sizeof(buf));
	assert_int_not_equal(fcntl(l.keep, F_SETFL, O_NONBLOCK), -1);
	while (write(l.keep, buf, sizeof(buf)) > 0)
		;
	while (write(l.keep, buf, 1) == 1)
		;
	assert_int_equal(errno, EAGAIN);

	fifodir_broadcast(f->dir, 'u');
	fifodir_broadcast(f->dir, 'd');

	/* Still subscribed: the bytes were dropped, not the listener. */
	assert_int_equal(access(l.path, F_OK), 0);
	while (next_byte(&l) == 'z')
		n++;
	assert_true(n > 0);
	fifodir_broadcast(f->dir, 'x');
	assert_int_equal(next_byte(&l), 'x');
	fifodir_unlisten(&l);
}

static void
test_missing_dir(void **state)
{
	struct fixture *f = *state;
	struct fifodir_listener l;
	char path[PATH_MAX + 8];

	snprintf(path, sizeof(path), "%s/nope", f->top);
	errno = 0;
	fifodir_broadcast(path, 'u');
	assert_int_equal(errno, 0);
	assert_int_equal(fifodir_listen(path, &l), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(l.fd, -1);
	assert_int_equal(l.keep, -1);
	/* Harmless on a listener that never got going. */
	fifodir_unlisten(&l);
}

/*
 * A listener of the directory's group may plant any name: a symlink or a
 * plain file under a listener's name gets nothing written into it.
 */
static void
test_only_fifos_written(void **state)
{
	struct fixture *f = *state;
	char victim[PATH_MAX], path[PATH_MAX + 32], buf[16];
	struct stat st;
	int fd;

	snprintf(victim, sizeof(victim), "%s/victim", f->top);
	assert_int_not_equal(fd = open(victim, O_WRONLY | O_CREAT | O_CLOEXEC,
	    0600), -1);
	assert_int_equal(write(fd, "secret", 6), 6);
	close(fd);
	snprintf(path, sizeof(path), "%s/ftrig1:link", f->dir);
	assert_int_equal(symlink(victim, path), 0);
	snprintf(path, sizeof(path), "%s/ftrig1:file", f->dir);
	assert_int_not_equal(fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC,
	    0600), -1);
	close(fd);

	fifodir_broadcast(f->dir, 'u');
	assert_int_not_equal(fd = open(victim, O_RDONLY | O_CLOEXEC), -1);
	assert_int_equal(read(fd, buf, sizeof(buf)), 6);
	assert_memory_equal(buf, "secret", 6);
	close(fd);
	assert_int_equal(unlink(victim), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_make_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_listeners, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_dead_listener_unlinked,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_fifo_does_not_block,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_dir, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_only_fifos_written, setup,
		    teardown),
	};

	/* fifodir_broadcast's callers ignore SIGPIPE; so does this one. */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
