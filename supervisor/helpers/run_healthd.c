/*
 * esv-healthd as the supervisor's child (esv-healthd(8)), when a health
 * port is set.  It reads the job from the control directory on its own,
 * so nothing here waits for it.  The socketpair carries its one line
 * "listening ADDR:PORT" to us and our "exit" to it; a hang-up without
 * "exit" tells it that we died.
 *
 * A server that cannot start (the port is taken) is tried again with a
 * growing delay instead of once a second; one that finds its arguments
 * bad (exit 100) is not tried again: that will not get better.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "helpers.h"
#include "msg.h"
#include "report.h"

static void	hd_read(struct watch *w, uint32_t events);

static void
hd_spawn(struct supervisor *sv)
{
	char timeout[32];
	char *argv[] = { NULL, "--listen", sv->hd.listen, "--timeout", timeout,
	    "--supervisor-fd", "3", sv->cfg->jobdir, NULL, NULL };

	snprintf(timeout, sizeof(timeout), "%ums", sv->cfg->health_timeout_ms);
	if (sv->cfg->health_status_paths) {
		/* Options first: JOBDIR moves to the end. */
		argv[7] = "--status-paths";
		argv[8] = sv->cfg->jobdir;
	}
	if (helper_spawn(sv, "esv-healthd", "healthd", "ESV_HEALTHD", argv,
	    true, &sv->hd.pid, &sv->hd.w, hd_read) == -1)
		return;
	sv->hd.started_ms = mono_ms();
	sv->hd.inlen = 0;
}

void
healthd_setup(struct supervisor *sv)
{
	const struct job_config *cfg = sv->cfg;
	const char *addr = cfg->health_address;
	bool v6 = strchr(addr, ':') != NULL && addr[0] != '[';

	sv->hd.w.fd = -1;
	sv->hd.backoff = (struct backoff){ .initial_ms = 1000,
	    .max_ms = 60000, .reset_ms = 10000 };
	if (cfg->health_error[0] != '\0') {
		warn_msg("%s: no health server", cfg->health_error);
		return;
	}
	if (cfg->health_port < 0)
		return;
	snprintf(sv->hd.listen, sizeof(sv->hd.listen), "%s%s%s:%d",
	    v6 ? "[" : "", *addr != '\0' ? addr : "127.0.0.1", v6 ? "]" : "",
	    cfg->health_port);
	sv->hd.timer = (struct watch){ .fn = healthd_timer, .ctx = sv };
	if ((sv->hd.timer.fd = timer_open(CLOCK_MONOTONIC)) == -1 ||
	    loop_add(&sv->loop, &sv->hd.timer, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "unable to create a timer");
	hd_spawn(sv);
}

static void
hd_line(struct supervisor *sv, char *line)
{
	if (strncmp(line, "listening ", 10) == 0) {
		strlcpy(sv->hd.where, line + 10, sizeof(sv->hd.where));
		report_group(sv);
	} else
		warn_msg("esv-healthd: unexpected line");
}

static void
hd_read(struct watch *w, uint32_t events)
{
	struct supervisor *sv = w->ctx;

	(void)events;
	if (helper_read_lines(sv, w->fd, sv->hd.in, sizeof(sv->hd.in),
	    &sv->hd.inlen, hd_line) == -1)
		helper_lost(&sv->loop, &sv->hd.w);
}

/* SIGCHLD said our health server died. */
void
healthd_died(struct supervisor *sv, int status)
{
	long long ran = mono_ms() - sv->hd.started_ms;
	unsigned delay;

	sv->hd.pid = 0;
	sv->hd.where[0] = '\0';
	if (sv->hd.w.fd != -1)
		helper_lost(&sv->loop, &sv->hd.w);
	report_group(sv);
	if (WIFEXITED(status) && WEXITSTATUS(status) == ESV_EXIT_USAGE) {
		warn_msg("esv-healthd refused its settings (see above): "
		    "no health server");
		return;
	}
	delay = backoff_next(&sv->hd.backoff, ran);
	warn_msg("esv-healthd %s %d: restarting it in %u ms",
	    WIFSIGNALED(status) ? "killed by signal" : "exited",
	    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
	    delay);
	events_log(sv, "healthd.restart", json_pack("{si}", "delay_ms",
	    (int)delay));
	timer_arm_ms(sv->hd.timer.fd, delay);
}

void
healthd_timer(struct watch *w, uint32_t events)
{
	struct supervisor *sv = w->ctx;

	(void)events;
	timer_ack(w->fd);
	if (sv->hd.pid == 0)
		hd_spawn(sv);
}

/* An orderly end: "exit" says so, where a bare hang-up means a crash. */
void
healthd_stop(struct healthd_run *hd, struct loop *loop)
{
	if (hd->w.fd != -1) {
		(void)send(hd->w.fd, "exit\n", 5, MSG_NOSIGNAL | MSG_DONTWAIT);
		helper_lost(loop, &hd->w);
	}
	if (hd->pid > 0)
		kill(hd->pid, SIGTERM);
}
