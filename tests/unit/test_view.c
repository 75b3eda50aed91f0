/*
 * esv-healthd's view of a job (healthd/view.c): /healthz's verdict from
 * the control directory and the watchdog's answer, /status without the
 * job's paths, and a watchdog that does not answer.  The job is a
 * directory made here; its supervisor is a reader on supervise/ok, its
 * esv-watchdogd a socket this test answers.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "../../healthd/healthd.h"
#include "atomicfile.h"
#include "ctldir.h"
#include "wdchan.h"

static char jobdir[64];
static int okfd = -1;
static struct loop lp;

static void
put(const char *rel, const char *text)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", jobdir, rel);
	assert_int_equal(atomic_write(path, text, strlen(text), 0644), 0);
}

/* The supervisor is up while someone reads supervise/ok (runit's probe). */
static void
supervisor_up(void)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", jobdir, ESV_OK);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_not_equal(okfd = open(path, O_RDONLY | O_NONBLOCK), -1);
}

static int
setup(void **state)
{
	char path[PATH_MAX];

	(void)state;
	strlcpy(jobdir, "/tmp/test_view.XXXXXX", sizeof(jobdir));
	if (mkdtemp(jobdir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", jobdir, ESV_SUPERVISE_DIR);
	okfd = -1;
	return mkdir(path, 0755) == -1 || loop_init(&lp) == -1 ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (okfd != -1)
		close(okfd);
	close(lp.epfd);
	return remove_tree(jobdir);
}

/*
 * supervise/state as the supervisor serving the job writes it once its
 * group has run: its pid (ours, alive), attempt 1, then text.
 */
static void
put_state(const char *text)
{
	char buf[PATH_MAX + 256];

	snprintf(buf, sizeof(buf), "supervisor_pid=%d\nattempt=1\n%s",
	    (int)getpid(), text);
	put(ESV_STATE, buf);
}

/* Read the files again now, not after the view's 100 ms. */
static void
reload(struct view *v)
{
	v->loaded_ms = LLONG_MIN / 2;
}

static void
test_no_supervisor(void **state)
{
	struct view v;
	char why[128];

	(void)state;
	view_init(&v, &lp, jobdir, 60);
	put(ESV_STATE, "state=running\n");
	assert_int_equal(view_health(&v, why, sizeof(why)), UNHEALTHY);
	assert_string_equal(why, "unhealthy: no supervisor is running");
	view_tick(&v, mono_ms());
	json_decref(v.st);
}

static void
test_running_without_timers(void **state)
{
	const char *body;
	struct view v;
	char why[128];
	json_t *st;
	size_t len;

	(void)state;
	supervisor_up();
	put_state("state=running\nattempt_dir=/secret/logs/1\n"
	    "watchdog_socket=\n");
	view_init(&v, &lp, jobdir, 60);
	/* No timers: the supervisor being alive is the progress. */
	assert_int_equal(view_health(&v, why, sizeof(why)), HEALTHY);
	assert_string_equal(why, "ok: last progress 0.0 s ago");
	/* /status keeps the job's paths to itself. */
	assert_non_null(body = view_status(&v, &len));
	assert_non_null(st = json_loadb(body, len, 0, NULL));
	assert_null(json_object_get(st, "jobdir"));
	assert_null(json_object_get(json_object_get(st, "job"),
	    "attempt_dir"));
	assert_string_equal(json_string_value(json_object_get(
	    json_object_get(st, "job"), "state")), "running");
	json_decref(st);
	/* Asked for, they stay. */
	v.status_paths = true;
	reload(&v);
	assert_non_null(body = view_status(&v, &len));
	assert_non_null(strstr(body, "/secret/logs/1"));
	free(v.status);
	free(v.metrics);
	json_decref(v.st);
}

/* A fake esv-watchdogd: answers one status query with last_progress. */
static int
watchdog_listen(char *path, size_t len)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	snprintf(path, len, "%s/wd.sock", jobdir);
	strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
	assert_int_not_equal(fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC,
	    0), -1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

static void
watchdog_answer(int lfd, double last_progress)
{
	struct wd_status ws = { .last_progress = last_progress, .armed = 1,
	    .pid = getpid() };
	char buf[64], *line;
	int fd;

	assert_int_not_equal(fd = accept(lfd, NULL, NULL), -1);
	assert_true(read(fd, buf, sizeof(buf)) > 0);
	assert_non_null(line = wdchan_status(&ws));
	assert_int_equal(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	free(line);
	close(fd);
}

static void
test_watchdog_progress(void **state)
{
	char path[PATH_MAX], text[PATH_MAX + 128], why[128];
	struct view v;
	int lfd;

	(void)state;
	supervisor_up();
	lfd = watchdog_listen(path, sizeof(path));
	snprintf(text, sizeof(text), "state=running\nwatchdog_socket=%s\n",
	    path);
	put_state(text);
	view_init(&v, &lp, jobdir, 60);

	/* The last timer request was 100 s ago: stuck. */
	view_tick(&v, mono_ms());
	watchdog_answer(lfd, wall_now() - 100);
	while (v.wdq.fd != -1)
		assert_true(loop_once(&lp, 1000) >= 0);
	assert_int_equal(view_health(&v, why, sizeof(why)), UNHEALTHY);
	assert_non_null(strstr(why, "unhealthy: no progress for 100."));

	/* In the exit barrier, nobody makes progress: not stuck. */
	snprintf(text, sizeof(text), "state=finishing\nwatchdog_socket=%s\n",
	    path);
	put_state(text);
	reload(&v);
	assert_int_equal(view_health(&v, why, sizeof(why)), HEALTHY);
	assert_string_equal(why, "ok: exit barrier");

	/* A fresh request: healthy again. */
	snprintf(text, sizeof(text), "state=running\nwatchdog_socket=%s\n",
	    path);
	put_state(text);
	reload(&v);
	view_tick(&v, mono_ms() + 1000);
	watchdog_answer(lfd, wall_now() - 1);
	while (v.wdq.fd != -1)
		assert_true(loop_once(&lp, 1000) >= 0);
	assert_int_equal(view_health(&v, why, sizeof(why)), HEALTHY);
	close(lfd);
	free(v.metrics);
	json_decref(v.st);
}

/* A watchdog that takes the query and never answers is given up on. */
static void
test_watchdog_silent(void **state)
{
	char path[PATH_MAX], text[PATH_MAX + 64];
	struct view v;
	long long now;
	int lfd, fd;

	(void)state;
	supervisor_up();
	lfd = watchdog_listen(path, sizeof(path));
	snprintf(text, sizeof(text), "state=running\nwatchdog_socket=%s\n",
	    path);
	put_state(text);
	view_init(&v, &lp, jobdir, 60);
	now = mono_ms();
	view_tick(&v, now);
	assert_int_not_equal(v.wdq.fd, -1);
	assert_int_not_equal(fd = accept(lfd, NULL, NULL), -1);
	/* Before its deadline the query waits; after it, it is dropped. */
	assert_true(view_tick(&v, now + 10) > now + 10);
	assert_int_not_equal(v.wdq.fd, -1);
	view_tick(&v, now + 60 * 1000);
	assert_false(v.have_wd);
	close(fd);
	close(lfd);
	if (v.wdq.fd != -1) {
		loop_del(&lp, &v.wdq);
		close(v.wdq.fd);
	}
	json_decref(v.st);
}

/* /metrics agrees with /healthz. */
static void
assert_gauges(struct view *v, int healthy, int starting)
{
	char want[64];
	const char *m;
	size_t len;

	assert_non_null(m = view_metrics(v, &len));
	snprintf(want, sizeof(want), "\nesv_healthy %d\n", healthy);
	assert_non_null(strstr(m, want));
	snprintf(want, sizeof(want), "\nesv_starting %d\n", starting);
	assert_non_null(strstr(m, want));
}

/*
 * Until the group of the supervisor serving the job runs: 503 starting,
 * whether its state is not written yet, a previous run's, or its own
 * before the first attempt.
 */
static void
test_starting(void **state)
{
	char text[128], why[128];
	struct view v;

	(void)state;
	supervisor_up();
	view_init(&v, &lp, jobdir, 60);
	assert_int_equal(view_health(&v, why, sizeof(why)), STARTING);
	assert_string_equal(why, "starting: the supervisor has written no "
	    "state yet");
	assert_gauges(&v, 0, 1);

	/* A previous run's file: its supervisor (that pid) is gone. */
	put(ESV_STATE, "state=succeeded\nattempt=3\nsupervisor_pid=2147483647\n");
	reload(&v);
	assert_int_equal(view_health(&v, why, sizeof(why)), STARTING);
	assert_string_equal(why, "starting: the supervisor has written no "
	    "state yet");

	/* Its own, in the rendezvous. */
	snprintf(text, sizeof(text), "state=joining\nattempt=0\n"
	    "supervisor_pid=%d\n", (int)getpid());
	put(ESV_STATE, text);
	reload(&v);
	assert_int_equal(view_health(&v, why, sizeof(why)), STARTING);
	assert_string_equal(why, "starting: the worker group has not run yet "
	    "(state joining)");

	/* Run, but by another supervisor than our --supervisor-fd's. */
	put_state("state=running\n");
	v.supervisor_pid = getpid() + 1;
	reload(&v);
	assert_int_equal(view_health(&v, why, sizeof(why)), STARTING);

	/* Run by ours: today's rules, and the gauges say so. */
	v.supervisor_pid = getpid();
	reload(&v);
	assert_int_equal(view_health(&v, why, sizeof(why)), HEALTHY);
	assert_string_equal(why, "ok: last progress 0.0 s ago");
	assert_gauges(&v, 1, 0);

	/* Later states need no running group: still started. */
	put_state("state=backoff\n");
	reload(&v);
	assert_int_equal(view_health(&v, why, sizeof(why)), HEALTHY);
	free(v.status);
	free(v.metrics);
	json_decref(v.st);
}

/*
 * The watchdog starts before the rendezvous: its start is older than the
 * timeout when a long round completes.  The group's first start, seen
 * by the view, is the progress then.
 */
static void
test_first_start_is_progress(void **state)
{
	char path[PATH_MAX], text[PATH_MAX + 128], why[128];
	struct view v;
	int lfd;

	(void)state;
	supervisor_up();
	lfd = watchdog_listen(path, sizeof(path));
	snprintf(text, sizeof(text), "state=joining\nattempt=0\n"
	    "supervisor_pid=%d\nwatchdog_socket=%s\n", (int)getpid(), path);
	put(ESV_STATE, text);
	view_init(&v, &lp, jobdir, 60);
	view_tick(&v, mono_ms());
	watchdog_answer(lfd, wall_now() - 100);
	while (v.wdq.fd != -1)
		assert_true(loop_once(&lp, 1000) >= 0);
	assert_int_equal(view_health(&v, why, sizeof(why)), STARTING);

	snprintf(text, sizeof(text), "state=running\nwatchdog_socket=%s\n",
	    path);
	put_state(text);
	reload(&v);
	assert_int_equal(view_health(&v, why, sizeof(why)), HEALTHY);
	assert_string_equal(why, "ok: last progress 0.0 s ago");

	/* A view that did not see the start keeps the watchdog's word. */
	json_decref(v.st);
	free(v.metrics);
	view_init(&v, &lp, jobdir, 60);
	view_tick(&v, mono_ms());
	watchdog_answer(lfd, wall_now() - 100);
	while (v.wdq.fd != -1)
		assert_true(loop_once(&lp, 1000) >= 0);
	assert_int_equal(view_health(&v, why, sizeof(why)), UNHEALTHY);
	assert_non_null(strstr(why, "unhealthy: no progress for 100."));
	close(lfd);
	free(v.metrics);
	json_decref(v.st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_supervisor, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_running_without_timers,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_watchdog_progress, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_watchdog_silent, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_starting, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_first_start_is_progress,
		    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
