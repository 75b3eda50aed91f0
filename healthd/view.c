/*
 * The job as the endpoints see it.  The control directory's files are
 * re-read at most every VIEW_TTL_MS, whatever the request rate; the
 * watchdog is asked every WD_EVERY_MS without ever being waited for, so a
 * watchdog that hangs cannot hold up an answer.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>


#include "ctlschema.h"
#include "healthd.h"
#include "jobstatus.h"
#include "msg.h"
#include "ratelim.h"

#define VIEW_TTL_MS	100
#define WD_EVERY_MS	250
#define WD_WAIT_MS	1000	/* a query not answered by then is dropped */

static void	wdq_read(struct watch *w, uint32_t events);

void
view_init(struct view *v, struct loop *lp, const char *jobdir, double timeout)
{
	memset(v, 0, sizeof(*v));
	v->lp = lp;
	v->jobdir = jobdir;
	v->timeout = timeout;
	v->started = wall_now();
	v->loaded_ms = -VIEW_TTL_MS;
	v->wdq.fd = -1;
	v->wdq.fn = wdq_read;
	v->wdq.ctx = v;
	v->warnrl.what = "warnings about the job's files";
}

/* What they were rendered from changed. */
static void
forget_bodies(struct view *v)
{
	free(v->status);
	v->status = NULL;
	free(v->metrics);
	v->metrics = NULL;
}

/*
 * The job's file system layout is nobody's business on the network: the
 * keys the schema calls paths (ctlschema.h), and the job directory.
 */
static void
del_paths(json_t *o, const struct ctl_key *keys, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (keys[i].type == CTL_PATH)
			(void)json_object_del(o, keys[i].name);
}

static void
hide_paths(json_t *st)
{
	json_t *w;
	size_t i;

	(void)json_object_del(st, "jobdir");
	del_paths(json_object_get(st, "job"), ctl_job_keys, JK_COUNT);
	json_array_foreach(json_object_get(st, "workers"), i, w)
		del_paths(w, ctl_worker_keys, WK_COUNT);
}

static bool	group_has_run(const struct view *v);

static void
refresh(struct view *v)
{
	long long now = mono_ms();
	const char *sock;

	if (now - v->loaded_ms < VIEW_TTL_MS)
		return;
	v->loaded_ms = now;
	json_decref(v->st);
	forget_bodies(v);
	v->wd_sock[0] = '\0';
	v->group_ran = false;
	if ((v->st = jobstatus_load_files(v->jobdir)) == NULL) {
		if (ratelim_allow(&v->warnrl))
			warn_sys("%s: unable to read the job's state",
			    v->jobdir);
		return;
	}
	/* Taken before the paths go: we still ask the watchdog. */
	if ((sock = jobstatus_watchdog_socket(v->st)) != NULL &&
	    strlcpy(v->wd_sock, sock, sizeof(v->wd_sock)) >=
	    sizeof(v->wd_sock))
		v->wd_sock[0] = '\0';
	/*
	 * Until the group runs, nothing is expected to progress; once it
	 * does, its start is the progress the watchdog's clock starts from
	 * (torch starts its watchdog with the workers; ours runs earlier).
	 */
	if (!(v->group_ran = group_has_run(v))) {
		v->started = wall_now();
		v->saw_starting = true;
	}
	if (!v->status_paths)
		hide_paths(v->st);
}

static bool
supervisor_up(const struct view *v)
{
	const char *s = json_string_value(json_object_get(v->st, "supervisor"));

	return !v->supervisor_gone && s != NULL &&
	    strcmp(s, ESV_SUPERVISOR_RUNNING) == 0;
}

static const char *
job_state(const struct view *v)
{
	const char *s = json_string_value(json_object_get(
	    json_object_get(v->st, "job"), ctl_job_key(JK_STATE)));

	return s != NULL ? s : "";
}

/*
 * Was supervise/state written by the supervisor that serves the job now?
 * A JOBDIR used again keeps the last run's file until the new supervisor
 * writes its own.  Its pid: our --supervisor-fd's peer, or, run on our
 * own, any live process of that pid (the old one is gone: one supervisor
 * per JOBDIR at a time).
 */
static bool
state_is_current(const struct view *v)
{
	json_t *p = json_object_get(json_object_get(v->st, "job"),
	    ctl_job_key(JK_SUPERVISOR_PID));
	json_int_t pid;

	if (!json_is_integer(p) || (pid = json_integer_value(p)) <= 0 ||
	    pid > INT_MAX)
		return false;
	if (v->supervisor_pid > 0)
		return pid == v->supervisor_pid;
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/*
 * Has the worker group run under this supervisor?  Its attempt counts
 * the group's starts, made once the rendezvous round is complete.
 */
static bool
group_has_run(const struct view *v)
{
	json_t *a = json_object_get(json_object_get(v->st, "job"),
	    ctl_job_key(JK_ATTEMPT));

	return json_is_integer(a) && json_integer_value(a) >= 1 &&
	    state_is_current(v);
}

/* ---- the watchdog's last progress ---- */

static void
wdq_close(struct view *v)
{
	if (v->wdq.fd == -1)
		return;
	loop_del(v->lp, &v->wdq);
	close(v->wdq.fd);
	v->wdq.fd = -1;
}

static void
wdq_start(struct view *v, const char *path, long long now)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		return;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return;
	/* A local connect completes at once or not at all; so does a line. */
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    send(fd, "status\n", 7, MSG_NOSIGNAL) != 7) {
		close(fd);
		return;
	}
	v->wdq.fd = fd;
	v->wdq_len = 0;
	v->wdq_deadline = now + WD_WAIT_MS;
	if (loop_add(v->lp, &v->wdq, EPOLLIN) == -1) {
		close(fd);
		v->wdq.fd = -1;
	}
}

static void
wdq_read(struct watch *w, uint32_t events)
{
	struct view *v = w->ctx;
	char err[128], *nl;
	ssize_t r;

	(void)events;
	r = read(w->fd, v->wdq_buf + v->wdq_len,
	    sizeof(v->wdq_buf) - 1 - v->wdq_len);
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		wdq_close(v);
		return;
	}
	v->wdq_len += r;
	v->wdq_buf[v->wdq_len] = '\0';
	if ((nl = strchr(v->wdq_buf, '\n')) == NULL) {
		if (v->wdq_len == sizeof(v->wdq_buf) - 1)
			wdq_close(v);
		return;
	}
	*nl = '\0';
	if (wdchan_parse_status(v->wdq_buf, &v->wd, err, sizeof(err)) == 0) {
		v->have_wd = true;
		forget_bodies(v);
	} else
		warn_msg("watchdog: unexpected answer: %s", err);
	wdq_close(v);
}

long long
view_tick(struct view *v, long long now)
{
	if (v->wdq.fd != -1) {
		if (now < v->wdq_deadline)
			return v->wdq_deadline;
		wdq_close(v);
	}
	refresh(v);
	/* Our ticks are frequent enough to say a burst's count in time. */
	(void)ratelim_tick(&v->warnrl, now, LLONG_MAX);
	if (supervisor_up(v) && v->wd_sock[0] != '\0')
		wdq_start(v, v->wd_sock, now);
	return now + WD_EVERY_MS;
}

/* ---- what the endpoints say ---- */

/*
 * torch's rule: the watchdog's last request when it runs, otherwise the
 * supervisor being alive is the progress.  The group's first start, when
 * we saw it, counts as one: the watchdog's own start came before the
 * rendezvous, which may take longer than the timeout.
 */
static double
last_progress(const struct view *v, double now)
{
	if (v->wd_sock[0] == '\0')
		return now;
	if (!v->have_wd ||
	    (v->saw_starting && v->started > v->wd.last_progress))
		return v->started;
	return v->wd.last_progress;
}

static enum health
judge(struct view *v, double now, double *since, char *reason, size_t len)
{
	*since = now - last_progress(v, now);
	if (*since < 0)
		*since = 0;
	if (v->st == NULL) {
		snprintf(reason, len, "unhealthy: the job's state is unreadable");
		return UNHEALTHY;
	}
	if (!supervisor_up(v)) {
		snprintf(reason, len, "unhealthy: no supervisor is running");
		return UNHEALTHY;
	}
	/* Nothing to judge before the group runs: not ready, not stuck. */
	if (!v->group_ran) {
		*since = 0;
		if (state_is_current(v))
			snprintf(reason, len, "starting: the worker group has "
			    "not run yet (state %s)", job_state(v));
		else
			snprintf(reason, len, "starting: the supervisor has "
			    "written no state yet");
		return STARTING;
	}
	/* The workers are done and wait for the other nodes: not stuck. */
	if (strcmp(job_state(v), ESV_GS_FINISHING) == 0) {
		*since = 0;
		snprintf(reason, len, "ok: exit barrier");
		return HEALTHY;
	}
	if (*since > v->timeout) {
		snprintf(reason, len, "unhealthy: no progress for %.1f s "
		    "(timeout %g s)", *since, v->timeout);
		return UNHEALTHY;
	}
	snprintf(reason, len, "ok: last progress %.1f s ago", *since);
	return HEALTHY;
}

enum health
view_health(struct view *v, char *reason, size_t len)
{
	double since;

	refresh(v);
	return judge(v, wall_now(), &since, reason, len);
}

const char *
view_status(struct view *v, size_t *len)
{
	refresh(v);
	if (v->st == NULL)
		return NULL;
	if (v->status == NULL) {
		/* `esv-ctl status --json`'s object, paths aside. */
		if (json_object_set_new(v->st, "watchdog",
		    jobstatus_watchdog(v->have_wd && supervisor_up(v) ?
		    &v->wd : NULL)) == -1 ||
		    (v->status = json_dumps(v->st, JSON_COMPACT)) == NULL)
			return NULL;
		v->status_len = strlen(v->status);
	}
	*len = v->status_len;
	return v->status;
}

const char *
view_metrics(struct view *v, size_t *len)
{
	long long now = mono_ms();
	char reason[128];
	double since;
	enum health h;

	refresh(v);
	if (v->metrics == NULL || now - v->metrics_ms >= VIEW_TTL_MS) {
		free(v->metrics);
		h = judge(v, wall_now(), &since, reason, sizeof(reason));
		v->metrics = metrics_render(v->st, v->have_wd ? &v->wd : NULL,
		    h, since, &v->metrics_len);
		v->metrics_ms = now;
		if (v->metrics == NULL)
			return NULL;
	}
	*len = v->metrics_len;
	return v->metrics;
}
