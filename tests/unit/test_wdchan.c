#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "wdchan.h"

static void
test_pids_roundtrip(void **state)
{
	static const pid_t pids[] = { 123, 7, 4194304 };
	struct wd_expired e;
	char err[128], *line;
	pid_t *got = NULL;
	size_t n = 99;

	(void)state;
	line = wdchan_pids(pids, 3);
	assert_non_null(line);
	assert_string_equal(line, "{\"pids\":[123,7,4194304]}\n");
	assert_int_equal(wdchan_parse_control(line, &got, &n, &e, err,
	    sizeof(err)), 'p');
	assert_int_equal(n, 3);
	assert_memory_equal(got, pids, sizeof(pids));
	free(got);
	free(line);
	line = wdchan_pids(NULL, 0);
	assert_string_equal(line, "{\"pids\":[]}\n");
	got = NULL;
	assert_int_equal(wdchan_parse_control(line, &got, &n, &e, err,
	    sizeof(err)), 'p');
	assert_int_equal(n, 0);
	free(got);
	free(line);
}

static void
bad_control(const char *line, const char *want)
{
	struct wd_expired e;
	char err[128] = "";
	pid_t *got = NULL;
	size_t n;

	assert_int_equal(wdchan_parse_control(line, &got, &n, &e, err,
	    sizeof(err)), -1);
	assert_null(got);
	if (strstr(err, want) == NULL)
		fail_msg("%s: error \"%s\" lacks \"%s\"", line, err, want);
}

static void
test_control_bad(void **state)
{
	(void)state;
	bad_control("{\"pids\": [1, 0]}", "element 1");
	bad_control("{\"pids\": [1, \"2\"]}", "element 1");
	bad_control("{\"pids\": [2147483648]}", "element 0");
	bad_control("{\"pids\": 5}", "not an array");
	bad_control("{\"pids\": [], \"more\": 1}", "want one of");
	bad_control("{\"stop\": true}", "unknown message");
	bad_control("[1]", "not an object");
	bad_control("{\"pids\": [1]", "malformed JSON");
	bad_control("{\"expired\": {\"pid\": 1}}", "expired");
}

static void
test_expired_roundtrip(void **state)
{
	struct wd_expired e = { .pid = 123, .scope = "step \"1\"\n",
	    .signal = 9, .deadline = 1796225099.087, .lateness_ms = 0.41,
	    .sent = true }, got;
	char err[128], *line;
	pid_t *pids = NULL;
	size_t n;

	(void)state;
	line = wdchan_expired(&e);
	assert_non_null(line);
	assert_string_equal(line, "{\"expired\":{\"pid\":123,\"scope\":"
	    "\"step \\\"1\\\"\\n\",\"signal\":9,\"deadline\":1796225099.087,"
	    "\"lateness_ms\":0.41,\"sent\":true}}\n");
	memset(&got, 0, sizeof(got));
	assert_int_equal(wdchan_parse_control(line, &pids, &n, &got, err,
	    sizeof(err)), 'e');
	assert_int_equal(got.pid, 123);
	assert_string_equal(got.scope, e.scope);
	assert_int_equal(got.signal, 9);
	assert_true(got.deadline == e.deadline);
	assert_true(got.lateness_ms == e.lateness_ms);
	assert_true(got.sent);
	free(line);
	e.sent = false;
	e.signal = 0;
	line = wdchan_expired(&e);
	assert_int_equal(wdchan_parse_control(line, &pids, &n, &got, err,
	    sizeof(err)), 'e');
	assert_false(got.sent);
	assert_int_equal(got.signal, 0);
	free(line);
}

static const struct wd_status status = { .last_progress = 1796.5,
    .armed = 3, .requests = 10, .refused = 1, .expired = 1, .workers = 2,
    .pid = 4242 };

static void
test_status_roundtrip(void **state)
{
	struct wd_status got;
	char err[128], *line;

	(void)state;
	line = wdchan_status(&status);
	assert_non_null(line);
	assert_string_equal(line, "{\"last_progress\":1796.5,\"armed\":3,"
	    "\"requests\":10,\"refused\":1,\"expired\":1,\"workers\":2,"
	    "\"pid\":4242}\n");
	memset(&got, 0, sizeof(got));
	assert_int_equal(wdchan_parse_status(line, &got, err, sizeof(err)), 0);
	assert_memory_equal(&got, &status, sizeof(got));
	free(line);
	/* A later watchdog may say more. */
	assert_int_equal(wdchan_parse_status("{\"last_progress\":1,\"armed\":0,"
	    "\"requests\":0,\"refused\":0,\"expired\":0,\"workers\":0,"
	    "\"pid\":1,\"new\":true}", &got, err, sizeof(err)), 0);
	assert_int_equal(wdchan_parse_status("{\"error\":\"permission "
	    "denied\"}", &got, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "permission denied"));
	assert_int_equal(wdchan_parse_status("{\"armed\":0}", &got, err,
	    sizeof(err)), -1);
	assert_int_equal(wdchan_parse_status("{\"last_progress\":1,\"armed\":-1,"
	    "\"requests\":0,\"refused\":0,\"expired\":0,\"workers\":0,"
	    "\"pid\":1}", &got, err, sizeof(err)), -1);
}

/*
 * A one-shot server in a child: answers the first connection with reply
 * (NULL: reads and never answers) once it got want.
 */
struct fake {
	char	dir[64], path[128];
	pid_t	child;
};

static void
fake_start(struct fake *f, const char *reply)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char buf[64];
	ssize_t n;
	int ls, fd;

	strlcpy(f->dir, "/tmp/test_wdchan.XXXXXX", sizeof(f->dir));
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/wd.sock", f->dir);
	strlcpy(sun.sun_path, f->path, sizeof(sun.sun_path));
	ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(ls, 4), 0);
	if ((f->child = fork()) == 0) {
		if ((fd = accept(ls, NULL, NULL)) == -1)
			_exit(1);
		n = read(fd, buf, sizeof(buf) - 1);
		if (n != 7 || memcmp(buf, "status\n", 7) != 0)
			_exit(2);
		if (reply == NULL)
			pause();
		if (write(fd, reply, strlen(reply)) != (ssize_t)strlen(reply))
			_exit(3);
		_exit(0);
	}
	assert_true(f->child > 0);
	close(ls);
}

static int
fake_stop(struct fake *f)
{
	int st;

	kill(f->child, SIGKILL);
	waitpid(f->child, &st, 0);
	unlink(f->path);
	rmdir(f->dir);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static long long
ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A pids line with more fds than one sendmsg takes: every fd arrives, in
 * the order of the pids, and each read's fds come with the line's bytes
 * (the watchdog's rule: they belong to the line holding the read's last
 * byte).  eventfds carry their index as their counter.
 */
static void
test_send_pids_fds(void **state)
{
	enum { N = 2 * WDCHAN_FDS_MAX + 17 };
	static pid_t pids[N];
	static int fds[N], got[N];
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(WDCHAN_FDS_MAX * sizeof(int))];
	} cm;
	char line[WDCHAN_LINE_MAX], err[128];
	struct msghdr mh;
	struct iovec iov;
	struct cmsghdr *c;
	struct wd_expired e;
	size_t len = 0, ngot = 0, n, i, k;
	pid_t *parsed;
	uint64_t v;
	ssize_t r;
	int sp[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp),
	    0);
	for (i = 0; i < N; i++) {
		pids[i] = (pid_t)(1000 + i);
		assert_true((fds[i] = eventfd(i + 1, EFD_CLOEXEC)) >= 0);
	}
	assert_int_equal(wdchan_send_pids(sp[0], pids, fds, N), 0);
	/* Another line, without fds, right behind: none of its bytes own any. */
	assert_int_equal(wdchan_send_pids(sp[0], pids, fds, 0), 0);
	while (memchr(line, '\n', len) == NULL) {
		iov = (struct iovec){ line + len, sizeof(line) - len };
		mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1,
		    .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
		assert_true((r = recvmsg(sp[1], &mh, MSG_CMSG_CLOEXEC)) > 0);
		assert_false(mh.msg_flags & MSG_CTRUNC);
		len += r;
		for (c = CMSG_FIRSTHDR(&mh); c != NULL;
		    c = CMSG_NXTHDR(&mh, c)) {
			k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			/* The fds of this read: its last byte is the line's. */
			assert_null(memchr(line, '\n', len - 1));
			memcpy(got + ngot, CMSG_DATA(c), k * sizeof(int));
			ngot += k;
		}
	}
	assert_int_equal(ngot, N);
	for (i = 0; i < N; i++) {
		assert_int_equal(read(got[i], &v, sizeof(v)), sizeof(v));
		assert_int_equal(v, i + 1);
		close(got[i]);
		close(fds[i]);
	}
	*(char *)memchr(line, '\n', len) = '\0';
	assert_int_equal(wdchan_parse_control(line, &parsed, &n, &e, err,
	    sizeof(err)), 'p');
	assert_int_equal(n, N);
	for (i = 0; i < N; i++)
		assert_int_equal(parsed[i], pids[i]);
	free(parsed);
	/* The empty list follows, with no fds. */
	iov = (struct iovec){ line, sizeof(line) };
	mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
	assert_true((r = recvmsg(sp[1], &mh, MSG_DONTWAIT)) > 0);
	assert_null(CMSG_FIRSTHDR(&mh));
	assert_memory_equal(line, "{\"pids\":[]}\n", r);
	close(sp[0]);
	close(sp[1]);
}

static void
test_query(void **state)
{
	struct wd_status got;
	struct fake f;
	char *line;
	int st;

	(void)state;
	line = wdchan_status(&status);
	fake_start(&f, line);
	memset(&got, 0, sizeof(got));
	assert_int_equal(wdchan_query(f.path, 5000, &got), 0);
	assert_memory_equal(&got, &status, sizeof(got));
	waitpid(f.child, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	f.child = -1;
	unlink(f.path);
	rmdir(f.dir);
	free(line);
}

static void
test_query_errors(void **state)
{
	struct wd_status got;
	struct fake f;
	long long t0;

	(void)state;
	assert_int_equal(wdchan_query("/nonexistent/wd.sock", 100, &got), -1);
	assert_int_equal(errno, ENOENT);

	fake_start(&f, "{\"error\":\"permission denied\"}\n");
	assert_int_equal(wdchan_query(f.path, 5000, &got), -1);
	assert_int_equal(errno, EACCES);
	fake_stop(&f);

	fake_start(&f, "{\"armed\":1");	/* then end of file */
	assert_int_equal(wdchan_query(f.path, 5000, &got), -1);
	assert_int_equal(errno, EPROTO);
	fake_stop(&f);

	fake_start(&f, NULL);
	t0 = ms_now();
	assert_int_equal(wdchan_query(f.path, 200, &got), -1);
	assert_int_equal(errno, ETIMEDOUT);
	assert_true(ms_now() - t0 >= 190 && ms_now() - t0 < 2000);
	fake_stop(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pids_roundtrip),
		cmocka_unit_test(test_control_bad),
		cmocka_unit_test(test_expired_roundtrip),
		cmocka_unit_test(test_status_roundtrip),
		cmocka_unit_test(test_send_pids_fds),
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_query_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
