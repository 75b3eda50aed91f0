/*
 * The FIFO of timer requests, in torch's FileTimerClient wire format
 * (request.h): each line arms or releases a timer of a worker, or is held
 * until the supervisor's next list (replay_held, ctlchan.c's listed
 * callback) says whether its pid is one.
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
fifo_open(struct fifo *f, const char *path)
{
	struct stat sb;

	f->w.fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (f->w.fd == -1)
		die(ESV_EXIT_SYSTEM, "%s", path);
	if (fstat(f->w.fd, &sb) == -1)
		die(ESV_EXIT_SYSTEM, "%s", path);
	if (!S_ISFIFO(sb.st_mode))
		diex(ESV_EXIT_USAGE, "%s: not a FIFO", path);
	if (sb.st_mode & (S_IWGRP | S_IWOTH))
		warn_msg("%s: others may write it and arm timers", path);
	/* Never read end-of-file when the last worker closes it. */
	f->wfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (f->wfd == -1)
		die(ESV_EXIT_SYSTEM, "%s", path);
	f->w.fn = on_fifo;
	f->w.ctx = f;
}

static void
log_request(const char *what, const struct request *r)
{
	char scope[4 * WDCHAN_SCOPE_MAX + 1];

	request_vis(scope, sizeof(scope), r->scope, strlen(r->scope));
	info_msg("%s: pid %d scope %s deadline %.3f signal %d", what,
	    (int)r->pid, scope, r->expiration, r->signal);
}

static void
refuse(struct fifo *f, unsigned long lineno, const struct request *r,
    const char *why)
{
	char scope[4 * WDCHAN_SCOPE_MAX + 1];

	f->cnt->refused++;
	if (!ratelim_allow(&f->refrl))
		return;
	request_vis(scope, sizeof(scope), r->scope, strlen(r->scope));
	warn_msg("FIFO: line %lu: pid %d scope %s: %s: refused", lineno,
	    (int)r->pid, scope, why);
}

static void
apply(struct fifo *f, unsigned long lineno, const struct request *r)
{
	if (!is_worker(f->wk, r->pid)) {
		if (!f->wk->listed || r->pid == getpid() || nheld == HOLD_MAX)
			refuse(f, lineno, r, "not a worker");
		else
			held[nheld++] = (struct held){ *r, lineno };
		return;
	}
	if (r->release) {
		timers_release(f->ts, r->pid, r->scope);
		if (f->verbose)
			log_request("release", r);
	} else if (f->ts->n >= TIMERS_MAX) {
		refuse(f, lineno, r, "too many timers");
		return;
	} else if (timers_set(f->ts, r->pid, r->scope, r->expiration,
	    r->signal) == -1) {
		warn_sys("FIFO: line %lu: cannot arm", lineno);
		return;
	} else if (f->verbose)
		log_request("arm", r);
	f->cnt->requests++;
	f->cnt->last_progress = wall_now();
}

void
replay_held(void *fifo)
{
	struct fifo *f = fifo;
	size_t i, n = nheld;

	nheld = 0;
	for (i = 0; i < n; i++) {
		if (is_worker(f->wk, held[i].r.pid))
			apply(f, held[i].lineno, &held[i].r);
		else
			refuse(f, held[i].lineno, &held[i].r, "not a worker");
	}
}

static void
on_line(void *ctx, unsigned long lineno, const char *line, size_t len,
    const char *err)
{
	struct fifo *f = ctx;
	struct request r;
	char why[256];

	if (err != NULL) {
		if (ratelim_allow(&f->badrl))
			warn_msg("FIFO: line %lu: %s", lineno, err);
		return;
	}
	switch (request_parse(line, len, &r, why, sizeof(why))) {
	case 0:
		apply(f, lineno, &r);
		break;
	case -1:
		if (ratelim_allow(&f->badrl))
			warn_msg("FIFO: line %lu: %s", lineno, why);
		break;
	}
}

void
on_fifo(struct watch *w, uint32_t events)
{
	static char buf[FIFO_READ];
	struct fifo *f = w->ctx;
	ssize_t n;

	(void)events;
	/* A worker's first request may follow the line that names it. */
	ctl_drain(f->ctl);
	n = read(w->fd, buf, sizeof(buf));
	if (n > 0)
		reqreader_feed(&f->rr, buf, n, on_line, f);
	else if (n == 0)
		diex(ESV_EXIT_SYSTEM, "FIFO: end of file with a writer open");
	else if (errno != EAGAIN && errno != EINTR)
		die(ESV_EXIT_SYSTEM, "FIFO: read");
}
