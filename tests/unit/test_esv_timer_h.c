/*
 * watchdog/esv-timer.h against a real FIFO: the exact line torch's
 * FileTimerServer reads, one line per call, and every refusal.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "../../watchdog/esv-timer.h"

struct fixture {
	char	dir[64];
	char	fifo[96];
	int	rfd;		/* reader, non-blocking */
};

static void
on_alarm(int sig)
{
	(void)sig;
	fail_msg("blocked: esv-timer.h must never block");
}

static int
setup(void **state)
{
	struct fixture *f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return -1;
	strlcpy(f->dir, "/tmp/test_esv_timer_h.XXXXXX", sizeof(f->dir));
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->fifo, sizeof(f->fifo), "%s/timer", f->dir);
	if (mkfifo(f->fifo, 0600) == -1)
		return -1;
	f->rfd = open(f->fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (f->rfd == -1)
		return -1;
	unsetenv(ESV_TIMER_ENV);
	signal(SIGALRM, on_alarm);
	alarm(10);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	alarm(0);
	if (f->rfd != -1)
		close(f->rfd);
	unlink(f->fifo);
	rmdir(f->dir);
	free(f);
	return 0;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Everything in the FIFO; it must be exactly one line. */
static char *
read_line(struct fixture *f, char *buf, size_t len)
{
	ssize_t n;

	n = read(f->rfd, buf, len - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_int_equal(buf[n - 1], '\n');
	assert_ptr_equal(strchr(buf, '\n'), buf + n - 1);
	return buf;
}

/* Nothing written: EOF once every writer closed, or EAGAIN. */
static void
assert_fifo_empty(struct fixture *f)
{
	char c;
	ssize_t n;

	n = read(f->rfd, &c, 1);
	assert_true(n == 0 || (n == -1 && errno == EAGAIN));
}

/* The line as torch parses it: exactly its five keys, with their types. */
static json_t *
parse(const char *line)
{
	json_error_t err;
	json_t *j;

	j = json_loads(line, JSON_REJECT_DUPLICATES, &err);
	if (j == NULL)
		fail_msg("not JSON: %s: %s", err.text, line);
	assert_true(json_is_object(j));
	assert_int_equal(json_object_size(j), 5);
	assert_int_equal(json_integer_value(json_object_get(j, "version")), 1);
	assert_true(json_is_integer(json_object_get(j, "pid")));
	assert_true(json_is_string(json_object_get(j, "scope_id")));
	assert_true(json_is_number(json_object_get(j, "expiration_time")));
	assert_true(json_is_integer(json_object_get(j, "signal")));
	return j;
}

static void
test_arm_line(void **state)
{
	static const char prefix[] = "{\"version\": 1, \"pid\": 4242, "
	    "\"scope_id\": \"step\", \"expiration_time\": ";
	struct fixture *f = *state;
	char buf[8192];
	const char *dot;
	double t0, t, t1;
	json_t *j;

	t0 = now();
	assert_int_equal(esv_timer_arm_pid_path(f->fifo, 4242, 1.5, "step",
	    SIGTERM), 0);
	t1 = now();
	j = parse(read_line(f, buf, sizeof(buf)));
	assert_int_equal(json_integer_value(json_object_get(j, "pid")), 4242);
	assert_string_equal(json_string_value(json_object_get(j, "scope_id")),
	    "step");
	assert_int_equal(json_integer_value(json_object_get(j, "signal")),
	    SIGTERM);
	assert_true(json_is_real(json_object_get(j, "expiration_time")));
	t = json_real_value(json_object_get(j, "expiration_time"));
	assert_true(t >= t0 + 1.5 - 1e-6 && t <= t1 + 1.5 + 1e-6);
	/* Sub-millisecond deadlines: at least 3 decimals on the wire. */
	dot = strstr(buf, "\"expiration_time\": ");
	assert_non_null(dot);
	dot = strchr(dot, '.');
	assert_non_null(dot);
	assert_true(strspn(dot + 1, "0123456789") >= 3);
	/* Byte for byte torch's json.dumps layout, up to the number. */
	assert_memory_equal(buf, prefix, strlen(prefix));
	json_decref(j);
	assert_fifo_empty(f);
}

static void
test_env_and_getpid(void **state)
{
	struct fixture *f = *state;
	char buf[8192];
	json_t *j;

	setenv(ESV_TIMER_ENV, f->fifo, 1);
	assert_int_equal(esv_timer_arm(30, "mine", SIGKILL), 0);
	j = parse(read_line(f, buf, sizeof(buf)));
	assert_int_equal(json_integer_value(json_object_get(j, "pid")),
	    getpid());
	assert_int_equal(json_integer_value(json_object_get(j, "signal")),
	    SIGKILL);
	json_decref(j);
	assert_int_equal(esv_timer_release_pid(77, "theirs"), 0);
	j = parse(read_line(f, buf, sizeof(buf)));
	assert_int_equal(json_integer_value(json_object_get(j, "pid")), 77);
	json_decref(j);
}

static void
test_release_line(void **state)
{
	struct fixture *f = *state;
	char buf[8192];
	json_t *j, *t;

	assert_int_equal(esv_timer_release_path(f->fifo, "step"), 0);
	j = parse(read_line(f, buf, sizeof(buf)));
	assert_int_equal(json_integer_value(json_object_get(j, "pid")),
	    getpid());
	t = json_object_get(j, "expiration_time");
	/* torch's client sends the integer -1 and signal 0. */
	assert_true(json_is_integer(t));
	assert_int_equal(json_integer_value(t), -1);
	assert_int_equal(json_integer_value(json_object_get(j, "signal")), 0);
	assert_non_null(strstr(buf, "\"expiration_time\": -1, \"signal\": 0}"));
	json_decref(j);
}

static void
test_escaping(void **state)
{
	static const char *scopes[] = {
		"a\"b", "back\\slash", "new\nline\ttab\r", "\x01\x1f\x7f",
		"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\\\"", "",
		"</script>{\"pid\": 1}",
	};
	struct fixture *f = *state;
	char buf[8192];
	size_t i;
	json_t *j;

	for (i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		assert_int_equal(esv_timer_arm_pid_path(f->fifo, 9, 1,
		    scopes[i], 9), 0);
		j = parse(read_line(f, buf, sizeof(buf)));
		assert_string_equal(json_string_value(json_object_get(j,
		    "scope_id")), scopes[i]);
		assert_int_equal(json_integer_value(json_object_get(j, "pid")),
		    9);
		json_decref(j);
	}
}

static void
test_invalid_utf8(void **state)
{
	static const char *bad[] = {
		"\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"\xe2\x82",
	};
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		assert_int_equal(esv_timer_arm_pid_path(f->fifo, 9, 1, bad[i],
		    9), -1);
		assert_int_equal(errno, EILSEQ);
	}
	assert_fifo_empty(f);
}

/* 4096 bytes with the newline is the largest line; one more is refused. */
static void
test_msgsize(void **state)
{
	struct fixture *f = *state;
	char scope[ESV_TIMER_LINE_MAX + 1], line[ESV_TIMER_LINE_MAX + 1];
	char buf[8192];
	int base;

	base = esv_timer_format(line, sizeof(line), 9, "", -1, 0);
	assert_true(base > 0);
	memset(scope, 'x', sizeof(scope));
	scope[ESV_TIMER_LINE_MAX - base] = '\0';
	assert_int_equal(esv_timer_release_pid_path(f->fifo, 9, scope), 0);
	assert_int_equal(strlen(read_line(f, buf, sizeof(buf))),
	    ESV_TIMER_LINE_MAX);
	scope[ESV_TIMER_LINE_MAX - base] = 'x';
	scope[ESV_TIMER_LINE_MAX - base + 1] = '\0';
	errno = 0;
	assert_int_equal(esv_timer_release_pid_path(f->fifo, 9, scope), -1);
	assert_int_equal(errno, EMSGSIZE);
	/* Escapes count as written: 2100 quotes are 4200 bytes. */
	memset(scope, '"', 2100);
	scope[2100] = '\0';
	errno = 0;
	assert_int_equal(esv_timer_arm_pid_path(f->fifo, 9, 1, scope, 9), -1);
	assert_int_equal(errno, EMSGSIZE);
	assert_fifo_empty(f);
}

static void
test_no_reader(void **state)
{
	struct fixture *f = *state;

	close(f->rfd);
	f->rfd = -1;
	errno = 0;
	assert_int_equal(esv_timer_arm_pid_path(f->fifo, 9, 1, "s", 9), -1);
	assert_int_equal(errno, ENXIO);
	errno = 0;
	assert_int_equal(esv_timer_release_path(f->fifo, "s"), -1);
	assert_int_equal(errno, ENXIO);
}

/* A full FIFO: EAGAIN at once, and never half a line. */
static void
test_full_fifo(void **state)
{
	struct fixture *f = *state;
	char buf[8192];
	int n = 0, r;

	while ((r = esv_timer_arm_pid_path(f->fifo, 9, 1, "fill", 9)) == 0)
		n++;
	assert_int_equal(errno, EAGAIN);
	assert_true(n > 10);
	while (read(f->rfd, buf, sizeof(buf)) > 0)
		;
	assert_int_equal(esv_timer_arm_pid_path(f->fifo, 9, 1, "again", 9), 0);
	json_decref(parse(read_line(f, buf, sizeof(buf))));
}

static void
test_refusals(void **state)
{
	struct fixture *f = *state;
	char path[128];
	int fd;

	errno = 0;
	assert_int_equal(esv_timer_arm(1, "s", 9), -1);
	assert_int_equal(errno, EDESTADDRREQ);
	setenv(ESV_TIMER_ENV, "", 1);
	errno = 0;
	assert_int_equal(esv_timer_release("s"), -1);
	assert_int_equal(errno, EDESTADDRREQ);
	errno = 0;
	assert_int_equal(esv_timer_arm_pid_path(f->fifo, 0, 1, "s", 9), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(esv_timer_arm_pid_path(f->fifo, 9, -1, "s", 9), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(esv_timer_arm_pid_path(f->fifo, 9, 0.0 / 0.0, "s", 9),
	    -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(esv_timer_arm_pid_path(f->fifo, 9, 1, "s", 65), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(esv_timer_arm_pid_path(f->fifo, 9, 1, NULL, 9), -1);
	assert_int_equal(errno, EINVAL);
	assert_fifo_empty(f);
	/* A regular file is left alone, not written into. */
	snprintf(path, sizeof(path), "%s/plain", f->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	errno = 0;
	assert_int_equal(esv_timer_arm_pid_path(path, 9, 1, "s", 9), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(truncate(path, 0), 0);
	unlink(path);
	errno = 0;
	assert_int_equal(esv_timer_arm_pid_path(path, 9, 1, "s", 9), -1);
	assert_int_equal(errno, ENOENT);
}

/* A signal number written as such, and 0 (cleared, never sent). */
static void
test_signal_zero_and_absolute(void **state)
{
	struct fixture *f = *state;
	char buf[8192];
	json_t *j;

	assert_int_equal(esv_timer_request(f->fifo, 5, "abs", 1796225099.087,
	    0), 0);
	read_line(f, buf, sizeof(buf));
	assert_string_equal(buf, "{\"version\": 1, \"pid\": 5, \"scope_id\": "
	    "\"abs\", \"expiration_time\": 1796225099.087000, \"signal\": 0}\n");
	j = parse(buf);
	assert_true(json_real_value(json_object_get(j, "expiration_time")) ==
	    1796225099.087);
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_arm_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_and_getpid, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_release_line, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_escaping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_utf8, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_msgsize, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_reader, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_full_fifo, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signal_zero_and_absolute,
		    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
