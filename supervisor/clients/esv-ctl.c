/*
 * esv-ctl: the operator's client of esv-supervise.  It writes runit/s6
 * letters into JOBDIR/supervise/control, prints the state files, and waits
 * for transitions by subscribing to the event/ fifodir first and reading
 * the state afterwards, so that no transition can slip between the two.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "ctldir.h"
#include "ctlschema.h"
#include "fifodir.h"
#include "jobstatus.h"
#include "loop.h"
#include "msg.h"
#include "nelem.h"
#include "sig.h"

#define USAGE \
"usage: esv-ctl [-w secs] up|down|restart|exit JOBDIR...\n" \
"       esv-ctl once|term|kill|pause|cont|reload JOBDIR...\n" \
"       esv-ctl signal NAME JOBDIR...\n" \
"       esv-ctl status [--json] JOBDIR...\n" \
"       esv-ctl wait up|down|finished [-t secs] JOBDIR...\n" \
"Exit status: 0 ok (wait finished: the job succeeded); 1 a supervisor is not\n" \
"running, or (wait finished) the job failed; 99 timeout; 100 usage; 102 the\n" \
"supervisor died while waited on; 111 system error.  Several JOBDIRs: the\n" \
"highest of their codes.\n"

/* A year: long enough for any wait, small enough for milliseconds. */
#define MAX_WAIT_SECS	(366.0 * 86400)

/* What a waiter waits for. */
enum cond {
	COND_NONE,
	COND_UP,		/* state running */
	COND_DOWN,		/* no worker, none coming */
	COND_FINISHED,		/* succeeded (0) or failed (1) */
	COND_RESTARTED,		/* a 'u' event after our command */
	COND_GONE,		/* the supervisor exited */
};

static const struct action {
	const char	*name;
	char		 letter;
	enum cond	 wait;		/* what -w waits for; none: -w refused */
} actions[] = {
	{ "up", 'u', COND_UP },
	{ "down", 'd', COND_DOWN },
	{ "once", 'o', COND_NONE },
	{ "restart", 'r', COND_RESTARTED },
	{ "term", 't', COND_NONE },
	{ "kill", 'k', COND_NONE },
	{ "pause", 'p', COND_NONE },
	{ "cont", 'c', COND_NONE },
	{ "reload", 'l', COND_NONE },
	{ "exit", 'x', COND_GONE },
};

static const struct {
	const char	*name;
	enum cond	 cond;
} wait_targets[] = {
	{ "up", COND_UP },
	{ "down", COND_DOWN },
	{ "finished", COND_FINISHED },
};

#define PENDING		(-1)

struct job {
	const char		*dir;
	int			 ok;	/* writer on supervise/ok, or -1 */
	struct fifodir_listener	 l;
	int			 dead;	/* ok reported that no reader is left */
	int			 seen_up;
	int			 job_failed;	/* COND_FINISHED met: failed */
	int			 result;	/* an exit code, or PENDING */
};

static void __attribute__((noreturn))
usage(void)
{
	fputs(USAGE, stderr);
	exit(ESV_EXIT_USAGE);
}

static long long
parse_secs(const char *s)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (end == s || *end != '\0' || errno != 0 || !isfinite(d) ||
	    d < 0 || d > MAX_WAIT_SECS)
		diex(ESV_EXIT_USAGE, "invalid number of seconds: %s", s);
	return (long long)ceil(d * 1000);
}

static int
job_path(char *buf, size_t size, const struct job *j, const char *rel)
{
	if ((size_t)snprintf(buf, size, "%s/%s", j->dir, rel) >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * Open JOBDIR/supervise/<name of rel> for writing without following a
 * symlink at supervise/ or at the file, and only if it is a FIFO: esv-ctl
 * may run as root on a JOBDIR that someone else can change, and a letter
 * written through a link would land in whatever file it names.
 */
static int
open_fifo(struct job *j, const char *rel)
{
	const char *name = strrchr(rel, '/') + 1;
	char dir[PATH_MAX];
	struct stat st;
	int dfd, fd, e;

	if (job_path(dir, sizeof(dir), j, ESV_SUPERVISE_DIR) == -1)
		return -1;
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		if (errno != ELOOP)
			return -1;
		fd = -1;
	} else {
		fd = openat(dfd, name, O_WRONLY | O_NONBLOCK | O_NOFOLLOW |
		    O_CLOEXEC);
		e = errno;
		close(dfd);
		if (fd == -1 && e != ELOOP) {
			errno = e;
			return -1;
		}
	}
	if (fd != -1 && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
		return fd;
	if (fd != -1)
		close(fd);
	warn_msg("%s/%s: not a FIFO (a symbolic link, or a file?): refusing "
	    "to write to it", j->dir, rel);
	j->result = ESV_EXIT_SYSTEM;
	return -2;
}

static void
job_fail(struct job *j, int code)
{
	switch (code) {
	case ESV_EXIT_FAILED:
		info_msg("fail: %s: supervisor not running", j->dir);
		break;
	case ESV_EXIT_DIED:
		info_msg("fail: %s: supervisor died", j->dir);
		break;
	}
	j->result = code;
}

/* The wait is met: 0, or 1 for a job that finished without success. */
static void
job_met(struct job *j)
{
	if (j->job_failed) {
		info_msg("fail: %s: the job failed", j->dir);
		j->result = ESV_EXIT_FAILED;
		return;
	}
	j->result = ESV_EXIT_OK;
}

/*
 * Open supervise/ok for writing: it succeeds only while the supervisor
 * holds the read end, and poll(2) reports POLLERR once that end is gone,
 * which tells of the supervisor's death without polling anything.
 */
static int
job_open_ok(struct job *j)
{
	if ((j->ok = open_fifo(j, ESV_OK)) < 0) {
		if (j->ok == -2) {
			j->ok = -1;
			return -1;
		}
		if (errno == ENXIO || errno == ENOENT || errno == ENOTDIR)
			return 0;
		warn_sys("%s: unable to open %s", j->dir, ESV_OK);
		j->result = ESV_EXIT_SYSTEM;
		return -1;
	}
	return 1;
}

static int
job_listen(struct job *j)
{
	char path[PATH_MAX];

	if (job_path(path, sizeof(path), j, ESV_EVENT_DIR) == -1 ||
	    fifodir_listen(path, &j->l) == -1) {
		warn_sys("%s: unable to listen on %s", j->dir, ESV_EVENT_DIR);
		j->result = ESV_EXIT_SYSTEM;
		return -1;
	}
	return 0;
}

static void
job_close(struct job *j)
{
	if (j->ok != -1)
		close(j->ok);
	j->ok = -1;
	if (j->l.fd != -1)
		fifodir_unlisten(&j->l);
}

static int
streq(const char *a, const char *b)
{
	return a != NULL && strcmp(a, b) == 0;
}

/*
 * Does supervise/state say cond holds?  1, 0, or -1 on a read error.
 * Read as esv-healthd reads it (jobstatus.h): one reader, one schema.
 */
static int
job_cond_met(struct job *j, enum cond cond)
{
	const json_t *job, *pids;
	const char *state;
	json_t *st;
	int met = 0;

	if (cond == COND_GONE)
		return j->dead;
	if (cond == COND_RESTARTED)
		return j->seen_up;
	if ((st = jobstatus_load_files(j->dir)) == NULL) {
		warn_sys("%s: unable to read %s", j->dir, ESV_STATE);
		return -1;
	}
	if (!json_is_object(job = json_object_get(st, "job"))) {
		json_decref(st);
		return 0;
	}
	state = json_string_value(json_object_get(job,
	    ctl_job_key(JK_STATE)));
	pids = json_object_get(job, ctl_job_key(JK_PIDS));
	switch (cond) {
	case COND_UP:
		/* A dead supervisor's "running" is stale. */
		met = streq(state, ESV_GS_RUNNING) && !j->dead;
		break;
	case COND_DOWN:
		met = (streq(state, ESV_GS_DOWN) ||
		    streq(state, ESV_GS_SUCCEEDED) ||
		    streq(state, ESV_GS_FAILED)) && json_array_size(pids) == 0;
		break;
	case COND_FINISHED:
		/* Only "succeeded" is a success; the waiter says which. */
		met = streq(state, ESV_GS_SUCCEEDED) ||
		    streq(state, ESV_GS_FAILED);
		j->job_failed = streq(state, ESV_GS_FAILED);
		break;
	default:
		break;
	}
	json_decref(st);
	return met;
}

/* Settle j if it can be: its condition holds, or it cannot anymore. */
static void
job_check(struct job *j, enum cond cond)
{
	int met;

	if ((met = job_cond_met(j, cond)) == -1)
		j->result = ESV_EXIT_SYSTEM;
	else if (met)
		job_met(j);
	else if (j->dead)
		job_fail(j, ESV_EXIT_DIED);
}

/* Consume the event bytes; only 'u' matters, to a restart. */
static void
job_drain(struct job *j)
{
	char buf[128];
	ssize_t r, i;

	while ((r = read(j->l.fd, buf, sizeof(buf))) > 0 ||
	    (r == -1 && errno == EINTR))
		for (i = 0; i < r; i++)
			if (buf[i] == ESV_EVENT_UP)
				j->seen_up = 1;
}

/*
 * Wait until every pending job is settled or the deadline (a mono_ms()
 * time, -1 for none) passes.  Only events wake us: a byte in a listener
 * FIFO, or POLLERR on supervise/ok.
 */
static void
wait_all(struct job *jobs, size_t n, enum cond cond, long long deadline)
{
	struct pollfd *pfd;
	struct job **owner;
	long long left;
	size_t i, k;
	int r;

	pfd = reallocarray(NULL, 2 * n, sizeof(*pfd));
	owner = reallocarray(NULL, n, sizeof(*owner));
	if (pfd == NULL || owner == NULL)
		die(ESV_EXIT_SYSTEM, "unable to allocate");
	for (;;) {
		for (i = k = 0; i < n; i++) {
			if (jobs[i].result != PENDING)
				continue;
			job_check(&jobs[i], cond);
			if (jobs[i].result != PENDING)
				continue;
			owner[k] = &jobs[i];
			pfd[2 * k] = (struct pollfd){ jobs[i].l.fd, POLLIN, 0 };
			pfd[2 * k + 1] = (struct pollfd){ jobs[i].ok, 0, 0 };
			k++;
		}
		if (k == 0)
			break;
		left = deadline < 0 ? -1 : deadline - mono_ms();
		if (deadline >= 0 && left <= 0) {
			for (i = 0; i < k; i++)
				owner[i]->result = ESV_EXIT_TIMEOUT;
			break;
		}
		r = poll(pfd, 2 * k, left > INT_MAX ? INT_MAX : (int)left);
		if (r == -1 && errno != EINTR)
			die(ESV_EXIT_SYSTEM, "unable to poll");
		for (i = 0; r > 0 && i < k; i++) {
			if (pfd[2 * i].revents != 0)
				job_drain(owner[i]);
			if (pfd[2 * i + 1].revents & (POLLERR | POLLHUP))
				owner[i]->dead = 1;
		}
	}
	free(pfd);
	free(owner);
}

static void
print_status_line(const char *prefix, const struct job *j)
{
	json_t *st;

	fputs(prefix, stdout);
	if ((st = jobstatus_load(j->dir)) == NULL) {
		printf("%s\n", j->dir);
		return;
	}
	jobstatus_print_job(stdout, st, wall_now());
	json_decref(st);
}

/* Subscribe first when waiting, then write the letter, never blocking. */
static void
send_letter(struct job *j, char letter, enum cond cond)
{
	ssize_t w;
	int fd, up;

	if ((fd = open_fifo(j, ESV_CONTROL)) < 0) {
		if (fd == -2)
			return;
		if (errno == ENXIO || errno == ENOENT || errno == ENOTDIR)
			job_fail(j, ESV_EXIT_FAILED);
		else {
			warn_sys("%s: unable to open %s", j->dir, ESV_CONTROL);
			j->result = ESV_EXIT_SYSTEM;
		}
		return;
	}
	if (cond != COND_NONE) {
		if ((up = job_open_ok(j)) == 0)
			job_fail(j, ESV_EXIT_FAILED);
		if (up != 1 || job_listen(j) == -1) {
			close(fd);
			return;
		}
	}
	do
		w = write(fd, &letter, 1);
	while (w == -1 && errno == EINTR);
	close(fd);
	if (w == -1) {
		if (errno == EPIPE)
			job_fail(j, ESV_EXIT_FAILED);
		else {
			warn_sys("%s: unable to write to %s", j->dir,
			    ESV_CONTROL);
			j->result = ESV_EXIT_SYSTEM;
		}
	}
}

static int
worst(int a, int b)
{
	return a > b ? a : b;
}

static struct job *
jobs_new(char **dirs, size_t n)
{
	struct job *jobs;
	size_t i;

	if ((jobs = calloc(n, sizeof(*jobs))) == NULL)
		die(ESV_EXIT_SYSTEM, "unable to allocate");
	for (i = 0; i < n; i++) {
		jobs[i].dir = dirs[i];
		jobs[i].ok = jobs[i].l.fd = jobs[i].l.keep = -1;
		jobs[i].result = PENDING;
	}
	return jobs;
}

static int
jobs_finish(struct job *jobs, size_t n)
{
	size_t i;
	int rc = ESV_EXIT_OK;

	for (i = 0; i < n; i++) {
		job_close(&jobs[i]);
		rc = worst(rc, jobs[i].result);
	}
	free(jobs);
	return rc;
}

static int
do_action(const char *what, char letter, enum cond cond, long long wait_ms,
    char **dirs, size_t n)
{
	struct job *jobs = jobs_new(dirs, n);
	long long deadline;
	size_t i;

	deadline = cond != COND_NONE ? mono_ms() + wait_ms : -1;
	for (i = 0; i < n; i++)
		send_letter(&jobs[i], letter, cond);
	if (cond != COND_NONE)
		wait_all(jobs, n, cond, deadline);
	for (i = 0; i < n; i++) {
		if (cond == COND_NONE && jobs[i].result == PENDING) {
			jobs[i].result = ESV_EXIT_OK;
			printf("sent: %s: %s\n", jobs[i].dir, what);
		} else if (jobs[i].result == ESV_EXIT_OK)
			print_status_line("ok: ", &jobs[i]);
		else if (jobs[i].result == ESV_EXIT_TIMEOUT)
			print_status_line("timeout: ", &jobs[i]);
	}
	return jobs_finish(jobs, n);
}

/* Subscribe, then look: a job without supervisor is judged on its files. */
static int
do_wait(enum cond cond, long long wait_ms, char **dirs, size_t n)
{
	struct job *jobs = jobs_new(dirs, n);
	long long deadline;
	size_t i;
	int r;

	deadline = wait_ms >= 0 ? mono_ms() + wait_ms : -1;
	for (i = 0; i < n; i++) {
		if ((r = job_open_ok(&jobs[i])) == -1)
			continue;
		if (r == 0) {
			jobs[i].dead = 1;
			if (job_cond_met(&jobs[i], cond) == 1)
				job_met(&jobs[i]);
			else
				job_fail(&jobs[i], ESV_EXIT_FAILED);
			continue;
		}
		job_listen(&jobs[i]);
	}
	wait_all(jobs, n, cond, deadline);
	for (i = 0; i < n; i++)
		if (jobs[i].result == ESV_EXIT_TIMEOUT)
			info_msg("timeout: %s", jobs[i].dir);
	return jobs_finish(jobs, n);
}

static int
do_status(int json, char **dirs, size_t n)
{
	const char *sup;
	json_t *st;
	size_t i;
	double now = wall_now();
	int rc = ESV_EXIT_OK;

	for (i = 0; i < n; i++) {
		if (access(dirs[i], F_OK) == -1)
			warn_sys("%s", dirs[i]);
		if ((st = jobstatus_load(dirs[i])) == NULL) {
			warn_sys("%s: unable to read the status", dirs[i]);
			rc = worst(rc, ESV_EXIT_SYSTEM);
			continue;
		}
		if (json) {
			json_dumpf(st, stdout, JSON_COMPACT);
			putchar('\n');
		} else {
			jobstatus_print_job(stdout, st, now);
			jobstatus_print_workers(stdout, st, now);
		}
		sup = json_string_value(json_object_get(st, "supervisor"));
		if (sup == NULL || strcmp(sup, ESV_SUPERVISOR_RUNNING) != 0)
			rc = worst(rc, ESV_EXIT_FAILED);
		json_decref(st);
	}
	return rc;
}

static char
signal_letter(const char *name)
{
	int signo;
	char c;

	if ((signo = sig_from_name(name)) == 0)
		diex(ESV_EXIT_USAGE, "unknown signal: %s", name);
	if ((c = sig_to_letter(signo)) == 0)
		diex(ESV_EXIT_USAGE, "no control letter for signal %s",
		    sig_name(signo));
	return c;
}

static const struct action *
find_action(const char *name)
{
	size_t i;

	for (i = 0; i < NELEM(actions); i++)
		if (strcmp(actions[i].name, name) == 0)
			return &actions[i];
	return NULL;
}

static enum cond
find_wait_target(const char *name)
{
	size_t i;

	for (i = 0; i < NELEM(wait_targets); i++)
		if (strcmp(wait_targets[i].name, name) == 0)
			return wait_targets[i].cond;
	diex(ESV_EXIT_USAGE, "unknown wait target: %s (up, down, finished)",
	    name);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct action *act;
	const char *cmd;
	long long w_ms = -1, t_ms = -1;
	int ch, json = 0, rc;

	/* A supervisor dying under our write must not kill us: EPIPE does. */
	signal(SIGPIPE, SIG_IGN);
	while ((ch = getopt_long(argc, argv, "ht:Vw:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			fputs(USAGE, stdout);
			return ESV_EXIT_OK;
		case 'j':
			json = 1;
			break;
		case 't':
			t_ms = parse_secs(optarg);
			break;
		case 'V':
			puts("esv-ctl " ESV_VERSION);
			return ESV_EXIT_OK;
		case 'w':
			w_ms = parse_secs(optarg);
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	cmd = *argv++;
	argc--;
	if (strcmp(cmd, "status") != 0 && json)
		diex(ESV_EXIT_USAGE, "--json goes with status only");
	if (strcmp(cmd, "wait") != 0 && t_ms >= 0)
		diex(ESV_EXIT_USAGE, "-t goes with wait only");
	if (strcmp(cmd, "status") == 0) {
		if (w_ms >= 0 || argc < 1)
			usage();
		rc = do_status(json, argv, argc);
	} else if (strcmp(cmd, "wait") == 0) {
		if (w_ms >= 0 || argc < 2)
			usage();
		rc = do_wait(find_wait_target(argv[0]), t_ms, argv + 1,
		    argc - 1);
	} else if (strcmp(cmd, "signal") == 0) {
		if (w_ms >= 0 || argc < 2)
			usage();
		rc = do_action(argv[0], signal_letter(argv[0]), COND_NONE, 0,
		    argv + 1, argc - 1);
	} else if ((act = find_action(cmd)) != NULL) {
		if (argc < 1)
			usage();
		if (w_ms >= 0 && act->wait == COND_NONE)
			diex(ESV_EXIT_USAGE, "-w goes with up, down, restart "
			    "and exit only");
		rc = do_action(act->name, act->letter,
		    w_ms >= 0 ? act->wait : COND_NONE, w_ms, argv, argc);
	} else
		diex(ESV_EXIT_USAGE, "unknown command: %s", cmd);
	if (fflush(stdout) == EOF || ferror(stdout))
		die(ESV_EXIT_SYSTEM, "unable to write to stdout");
	return rc;
}
