/*
 * esv-watchdogd as the supervisor's child (esv-watchdogd(8)): torch's
 * FileTimerServer, told over a socketpair which pids are the workers.
 *
 * The FIFO is ours: made before the watchdog starts and kept open for
 * reading here, so that a worker's non-blocking open never fails (torch's
 * client would raise) while the watchdog is being restarted; what is
 * written meanwhile waits in the pipe for the next watchdog.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "atomicfile.h"
#include "ctldir.h"
#include "helpers.h"
#include "msg.h"
#include "report.h"
#include "wdchan.h"

/* A watchdog that dies faster than this is restarted only after it. */
#define WD_RESTART_MS	1000


static void	wd_read(struct watch *w, uint32_t events);

static int
make_fifo(const char *path)
{
	struct stat st;

	/* As torch's server: whatever was there is replaced. */
	if (lstat(path, &st) == 0 && unlink(path) == -1)
		return -1;
	return mkfifo(path, 0600);
}

static void
wd_spawn(struct supervisor *sv)
{
	char *argv[] = { NULL, "--fifo", sv->wd.fifo, "--socket", sv->wd.sock,
	    "--control-fd", "3", NULL };

	if (helper_spawn(sv, "esv-watchdogd", "watchdog", "ESV_WATCHDOGD",
	    argv, false, &sv->wd.pid, &sv->wd.w, wd_read) == -1)
		return;
	sv->wd.started_ms = mono_ms();
	sv->wd.inlen = 0;
	watchdog_pids(&sv->wd, &sv->grp);
}

void
watchdog_setup(struct supervisor *sv)
{
	const struct job_config *cfg = sv->cfg;

	sv->wd.w.fd = sv->wd.fifo_fd = -1;
	if (!cfg->file_timer)
		return;
	if (cfg->timer_file[0] != '\0')
		strlcpy(sv->wd.fifo, cfg->timer_file, sizeof(sv->wd.fifo));
	else if (pathf(sv->wd.fifo, sizeof(sv->wd.fifo), "%s/%s", cfg->jobdir,
	    ESV_TIMER_FIFO) == -1)
		diex(ESV_EXIT_USAGE, "%s: JOBDIR path too long", cfg->jobdir);
	if (pathf(sv->wd.sock, sizeof(sv->wd.sock), "%s/%s", cfg->jobdir,
	    ESV_WATCHDOG_SOCK) == -1 || strlen(sv->wd.sock) >= 108)
		diex(ESV_EXIT_USAGE, "%s/%s: too long for a UNIX socket", cfg->jobdir,
		    ESV_WATCHDOG_SOCK);
	if (make_fifo(sv->wd.fifo) == -1)
		die(ESV_EXIT_SYSTEM, "unable to create the timer FIFO %s", sv->wd.fifo);
	sv->wd.fifo_fd = open(sv->wd.fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (sv->wd.fifo_fd == -1)
		die(ESV_EXIT_SYSTEM, "unable to open %s", sv->wd.fifo);
	sv->wd.timer = (struct watch){ .fn = watchdog_timer, .ctx = sv };
	if ((sv->wd.timer.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
	    loop_add(&sv->loop, &sv->wd.timer, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "unable to create a timer");
	wd_spawn(sv);
}

/*
 * The current workers, each with its pidfd, so that no other process is
 * ever signalled: a pidfd is taken before the worker can be reaped, so it
 * is the worker even if the watchdog uses it after its pid was reused.
 * A worker without one is not listed: its timers are refused.
 */
void
watchdog_pids(const struct watchdog_run *wd, const struct group_run *g)
{
	pid_t pids[ESV_MAX_NPROC];
	int fds[ESV_MAX_NPROC];
	size_t n = 0;
	unsigned i;

	if (wd->w.fd == -1)
		return;
	for (i = 0; i < g->nworkers; i++)
		if (g->workers[i].pid > 0 && g->workers[i].pidfd != -1) {
			pids[n] = g->workers[i].pid;
			fds[n++] = g->workers[i].pidfd;
		}
	/* A few bytes per pid: the socket buffer takes thousands. */
	if (wdchan_send_pids(wd->w.fd, pids, fds, n) == -1)
		warn_sys("unable to tell the watchdog the workers");
}

static void
on_expired(struct supervisor *sv, const struct wd_expired *x)
{
	sv->wd.timers_expired++;
	events_log(sv, "timer.expired", json_pack("{si ss si sf sf sb}",
	    "pid", (int)x->pid, "scope", x->scope, "signal", x->signal,
	    "deadline", x->deadline, "lateness_ms", x->lateness_ms, "sent",
	    x->sent));
	report_group(sv);
}

static void
wd_line(struct supervisor *sv, char *line)
{
	struct wd_expired x;
	char err[128];
	pid_t *pids;
	size_t n;

	switch (wdchan_parse_control(line, &pids, &n, &x, err, sizeof(err))) {
	case 'e':
		on_expired(sv, &x);
		break;
	case 'p':
		free(pids);
		warn_msg("watchdog: sent us a pid list");
		break;
	default:
		warn_msg("watchdog: unexpected line: %s", err);
	}
}

static void
wd_read(struct watch *w, uint32_t events)
{
	struct supervisor *sv = w->ctx;

	(void)events;
	if (helper_read_lines(sv, w->fd, sv->wd.in, sizeof(sv->wd.in),
	    &sv->wd.inlen, wd_line) == -1)
		helper_lost(&sv->loop, &sv->wd.w);
}

/* SIGCHLD said our watchdog died: a new one, with the current workers. */
void
watchdog_died(struct supervisor *sv, int status)
{
	long long ran = mono_ms() - sv->wd.started_ms;

	warn_msg("esv-watchdogd (pid %d) %s %d: restarting it",
	    (int)sv->wd.pid, WIFSIGNALED(status) ? "killed by signal" :
	    "exited", WIFSIGNALED(status) ? WTERMSIG(status) :
	    WEXITSTATUS(status));
	events_log(sv, "watchdog.restart", json_pack("{si}", "pid",
	    (int)sv->wd.pid));
	sv->wd.pid = 0;
	if (sv->wd.w.fd != -1)
		helper_lost(&sv->loop, &sv->wd.w);
	if (ran < WD_RESTART_MS) {
		timer_arm_ms(sv->wd.timer.fd, WD_RESTART_MS - ran);
		return;
	}
	wd_spawn(sv);
}

void
watchdog_timer(struct watch *w, uint32_t events)
{
	struct supervisor *sv = w->ctx;

	(void)events;
	timer_ack(w->fd);
	if (sv->wd.pid == 0)
		wd_spawn(sv);
}

/*
 * Our end closing tells the watchdog to go; the FIFO goes with us.  Its
 * report of the expiry that killed the last worker may still be on the
 * way (it signals first, reports after): read until it hangs up, briefly.
 */
void
watchdog_stop(struct supervisor *sv)
{
	struct pollfd pfd;
	long long until = mono_ms() + 200;

	if (sv->wd.fifo_fd == -1)
		return;
	if (sv->wd.w.fd != -1)
		shutdown(sv->wd.w.fd, SHUT_WR);
	while (sv->wd.w.fd != -1 && mono_ms() < until) {
		pfd = (struct pollfd){ .fd = sv->wd.w.fd, .events = POLLIN };
		if (poll(&pfd, 1, (int)(until - mono_ms())) <= 0)
			break;
		wd_read(&sv->wd.w, EPOLLIN);
	}
	if (sv->wd.w.fd != -1)
		helper_lost(&sv->loop, &sv->wd.w);
	if (sv->wd.pid > 0)
		kill(sv->wd.pid, SIGTERM);
	unlink(sv->wd.fifo);
	close(sv->wd.fifo_fd);
	sv->wd.fifo_fd = -1;
}
