/*
 * The FIFO of timer requests, in torch's FileTimerClient wire format
 * (request.h).
 */
#include "watchdogd.h"

/*
 * A worker may write before the supervisor's list naming it arrives (it
 * is spawned first, listed once the whole group is).  The control socket
 * is drained before every batch of FIFO lines, so the first list read
 * after a request was held was sent after the request was written: if
 * that list does not name the pid, nothing will.
 */
#define HOLD_MAX	4096

struct held {
	struct request	 r;
	unsigned long	 lineno;
};

static struct held held[HOLD_MAX];
static size_t nheld;

void
replay_held(void)
{
	size_t i, n = nheld;

	nheld = 0;
	for (i = 0; i < n; i++) {
		if (is_worker(held[i].r.pid))
			apply(held[i].lineno, &held[i].r);
		else
			refuse(held[i].lineno, &held[i].r, "not a worker");
	}
}

static void
log_request(const char *what, const struct request *r)
{
	char scope[4 * WDCHAN_SCOPE_MAX + 1];

	request_vis(scope, sizeof(scope), r->scope, strlen(r->scope));
	info_msg("%s: pid %d scope %s deadline %.3f signal %d", what,
	    (int)r->pid, scope, r->expiration, r->signal);
}

void
refuse(unsigned long lineno, const struct request *r, const char *why)
{
	char scope[4 * WDCHAN_SCOPE_MAX + 1];

	g.refused++;
	if (!ratelim_allow(&g.refrl))
		return;
	request_vis(scope, sizeof(scope), r->scope, strlen(r->scope));
	warn_msg("FIFO: line %lu: pid %d scope %s: %s: refused", lineno,
	    (int)r->pid, scope, why);
}

void
apply(unsigned long lineno, const struct request *r)
{
	if (!is_worker(r->pid)) {
		if (g.ctlw.fd == -1 || r->pid == getpid() || nheld == HOLD_MAX)
			refuse(lineno, r, "not a worker");
		else
			held[nheld++] = (struct held){ *r, lineno };
		return;
	}
	if (r->release) {
		timers_release(&g.ts, r->pid, r->scope);
		if (g.verbose)
			log_request("release", r);
	} else if (g.ts.n >= TIMERS_MAX) {
		refuse(lineno, r, "too many timers");
		return;
	} else if (timers_set(&g.ts, r->pid, r->scope, r->expiration,
	    r->signal) == -1) {
		warn_sys("FIFO: line %lu: cannot arm", lineno);
		return;
	} else if (g.verbose)
		log_request("arm", r);
	g.requests++;
	g.last_progress = wall_now();
}

static void
on_line(void *ctx, unsigned long lineno, const char *line, size_t len,
    const char *err)
{
	struct request r;
	char why[256];

	(void)ctx;
	if (err != NULL) {
		if (ratelim_allow(&g.badrl))
			warn_msg("FIFO: line %lu: %s", lineno, err);
		return;
	}
	switch (request_parse(line, len, &r, why, sizeof(why))) {
	case 0:
		apply(lineno, &r);
		break;
	case -1:
		if (ratelim_allow(&g.badrl))
			warn_msg("FIFO: line %lu: %s", lineno, why);
		break;
	}
}

void
on_fifo(struct watch *w, uint32_t events)
{
	static char buf[FIFO_READ];
	ssize_t n;

	(void)events;
	/* A worker's first request may follow the line that names it. */
	ctl_drain();
	n = read(w->fd, buf, sizeof(buf));
	if (n > 0)
		reqreader_feed(&g.rr, buf, n, on_line, NULL);
	else if (n == 0)
		diex(ESV_EXIT_SYSTEM, "FIFO: end of file with a writer open");
	else if (errno != EAGAIN && errno != EINTR)
		die(ESV_EXIT_SYSTEM, "FIFO: read");
}
