/*
 * esv-watchdogd: the timer watchdog of esv.  Workers arm and release
 * timers through a FIFO in the wire format of torch's FileTimerClient; a
 * timer not released by its deadline gets its worker signalled.  Unlike
 * torch's FileTimerServer it signals only the workers esv-supervise names
 * on the control channel, and it sleeps until the next deadline instead of
 * polling.  It signals them through the pidfds the supervisor sends with
 * the list (wdchan.h), never by pid: a worker reaped just before its timer
 * fires leaves a dead pidfd, not a pid that another process may have.
 */
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "loop.h"
#include "msg.h"
#include "pidfd.h"
#include "ratelim.h"
#include "request.h"
#include "sig.h"
#include "timers.h"
#include "utf8.h"
#include "wdchan.h"

#define FIFO_READ	65536	/* per wake-up, then expiries run again */
#define TIMERS_MAX	1000000	/* a runaway worker cannot eat the host */
#define CTL_OUT_MAX	(1024 * 1024)
#define QUERY_MAX	64
#define QUERY_MS	1000	/* for a query client to send its line */
#define QUERY_LINE	64
#define DEADLINE_MAX	1e11	/* year 5138: far enough, and fits time_t */
#define PEND_MAX	65536	/* pidfds received, not yet given to a line */

struct query {
	struct watch		w;
	TAILQ_ENTRY(query)	entry;
	long long		deadline;	/* CLOCK_MONOTONIC ms */
	size_t			len;
	char			buf[QUERY_LINE];
};
TAILQ_HEAD(queryq, query);

static struct {
	struct loop	 lp;
	struct watch	 sigw, timerw, fifow, ctlw, listenw;
	int		 fifo_wfd, spare_fd;
	const char	*sockpath;
	bool		 verbose, any_pid, quit;

	struct reqreader rr;
	struct timers	 ts;
	bool		 timer_set;	/* the timerfd holds timer_dl */
	double		 timer_dl;

	pid_t		*pids;		/* sorted workers */
	int		*pidfds;	/* of pids[i], or -1 */
	size_t		 npids;

	char		*ctl_in, *ctl_out;
	size_t		 ctl_inlen, ctl_outlen;
	unsigned long long ctl_off;	/* stream offset of ctl_in[0] */
	/* Received pidfds (-1: some were lost), by the read that brought them. */
	struct pend {
		int			 fd;
		unsigned long long	 at;	/* offset of that read's last byte */
	}		*pend;
	size_t		 npend;
	bool		 ctl_skipping, ctl_want_out;
	bool		 no_pidfd;	/* the last send had none to use */
	unsigned long	 ctl_dropped;

	struct queryq	 queries;
	unsigned	 nqueries;

	double		 last_progress;
	unsigned long	 requests, refused, expired;
	struct ratelim	 badrl, refrl;
} g;

static void
usage(FILE *f)
{
	fprintf(f, "usage: esv-watchdogd [-v] --fifo PATH [--socket PATH] "
	    "[--control-fd N | --any-pid]\n"
	    "       esv-watchdogd --help | --version\n"
	    "Exit status: 0 stopped by a signal or by the supervisor, 100 usage "
	    "error,\n111 system error.\n");
}

/* ---- the control channel ---- */

static void
ctl_events(void)
{
	bool out = g.ctl_outlen > 0;

	if (out == g.ctl_want_out)
		return;
	g.ctl_want_out = out;
	if (loop_mod(&g.lp, &g.ctlw, EPOLLIN | (out ? EPOLLOUT : 0)) == -1)
		die(ESV_EXIT_SYSTEM, "epoll_ctl");
}

static void
supervisor_gone(void)
{
	info_msg("control: the supervisor went away: exiting");
	g.quit = true;
}

static void
ctl_flush(void)
{
	ssize_t n;

	while (g.ctl_outlen > 0) {
		n = send(g.ctlw.fd, g.ctl_out, g.ctl_outlen, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n == -1) {
			if (errno != EPIPE && errno != ECONNRESET)
				warn_sys("control: send");
			supervisor_gone();
			return;
		}
		memmove(g.ctl_out, g.ctl_out + n, g.ctl_outlen - n);
		g.ctl_outlen -= n;
	}
	ctl_events();
}

/* A supervisor that stops reading loses reports, never the watchdog. */
static void
ctl_send(char *line)
{
	size_t len;

	if (g.ctlw.fd == -1 || line == NULL) {
		free(line);
		return;
	}
	len = strlen(line);
	if (g.ctl_outlen + len > CTL_OUT_MAX) {
		if (g.ctl_dropped++ == 0)
			warn_msg("control: the supervisor does not read: "
			    "dropping reports");
		free(line);
		return;
	}
	g.ctl_dropped = 0;
	memcpy(g.ctl_out + g.ctl_outlen, line, len);
	g.ctl_outlen += len;
	free(line);
	ctl_flush();
}

static int
pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

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

static void	apply(unsigned long lineno, const struct request *r);
static bool	is_worker(pid_t pid);
static void	refuse(unsigned long lineno, const struct request *r,
		    const char *why);

static void
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
close_fds(int *fds, size_t n)
{
	while (n > 0)
		if (fds[--n] != -1)
			close(fds[n]);
}

struct worker_fd {
	pid_t	pid;
	int	fd;
};

static int
worker_fd_cmp(const void *a, const void *b)
{
	return pid_cmp(&((const struct worker_fd *)a)->pid,
	    &((const struct worker_fd *)b)->pid);
}

/*
 * Is the process of pidfd b another than that of a?  Since Linux 6.9
 * (pidfs) each process has an inode of its own; before, every pidfd
 * has the same one, and the answer is no.
 */
static bool
other_process(int a, int b)
{
	struct stat sa, sb;

	if (a == -1 || b == -1 || fstat(a, &sa) == -1 || fstat(b, &sb) == -1)
		return false;
	return sa.st_dev != sb.st_dev || sa.st_ino != sb.st_ino;
}

/* pids[i]'s pidfd is fds[i]; both are ours now. */
static void
set_workers(pid_t *pids, size_t n, int *fds)
{
	struct worker_fd *wf;
	size_t dropped, i, nkeep = 0;
	pid_t *keep, *old;

	if ((wf = calloc(n > 0 ? n : 1, sizeof(*wf))) == NULL)
		die(ESV_EXIT_SYSTEM, "malloc");
	for (i = 0; i < n; i++)
		wf[i] = (struct worker_fd){ pids[i], fds[i] };
	qsort(wf, n, sizeof(*wf), worker_fd_cmp);
	for (i = 0; i < n; i++) {
		pids[i] = wf[i].pid;
		fds[i] = wf[i].fd;
	}
	free(wf);
	/*
	 * A pid listed again for another process (its pid was reused):
	 * the timers the first one armed are not the second one's.
	 */
	if ((keep = calloc(n > 0 ? n : 1, sizeof(*keep))) == NULL)
		die(ESV_EXIT_SYSTEM, "malloc");
	for (i = 0; i < n; i++) {
		old = g.npids > 0 ? bsearch(&pids[i], g.pids, g.npids,
		    sizeof(*g.pids), pid_cmp) : NULL;
		if (old != NULL && other_process(g.pidfds[old - g.pids],
		    fds[i]))
			info_msg("control: pid %d is another process now",
			    (int)pids[i]);
		else
			keep[nkeep++] = pids[i];
	}
	close_fds(g.pidfds, g.npids);
	free(g.pidfds);
	free(g.pids);
	g.pids = pids;
	g.pidfds = fds;
	g.npids = n;
	dropped = timers_keep_pids(&g.ts, keep, nkeep);
	free(keep);
	if (g.verbose || dropped > 0)
		info_msg("control: %zu workers; %zu timers of others dropped",
		    n, dropped);
	replay_held();
}

/* A line, with the pidfds that came with it (ours to keep or close). */
static void
ctl_line(char *line, int *fds, size_t nfds)
{
	struct wd_expired e;
	char err[256];
	pid_t *pids;
	int *pfds;
	size_t n, i;

	switch (wdchan_parse_control(line, &pids, &n, &e, err, sizeof(err))) {
	case 'p':
		if ((pfds = calloc(n > 0 ? n : 1, sizeof(*pfds))) == NULL)
			die(ESV_EXIT_SYSTEM, "malloc");
		for (i = 0; i < n; i++)
			pfds[i] = nfds == n ? fds[i] : -1;
		if (nfds != n) {
			/* Which is whose is unknown: none is used. */
			warn_msg("control: %zu workers with %zu pidfds: none "
			    "of them will be signalled", n, nfds);
			close_fds(fds, nfds);
		}
		set_workers(pids, n, pfds);
		return;
	case 'e':
		warn_msg("control: an expired report is not for me: ignored");
		break;
	default:
		warn_msg("control: %s", err);
	}
	close_fds(fds, nfds);
}

/* The pidfds that came with the bytes up to stream offset end, in order. */
static int *
take_fds(unsigned long long end, size_t *n)
{
	static int fds[PEND_MAX];
	size_t i;

	for (i = 0; i < g.npend && g.pend[i].at <= end; i++)
		fds[i] = g.pend[i].fd;
	memmove(g.pend, g.pend + i, (g.npend - i) * sizeof(*g.pend));
	g.npend -= i;
	*n = i;
	return fds;
}

static void
ctl_split(void)
{
	char *nl, *p = g.ctl_in;
	size_t left = g.ctl_inlen, nfds;
	int *fds;

	while ((nl = memchr(p, '\n', left)) != NULL) {
		*nl = '\0';
		fds = take_fds(g.ctl_off + (nl - g.ctl_in), &nfds);
		if (!g.ctl_skipping)
			ctl_line(p, fds, nfds);
		else
			close_fds(fds, nfds);
		g.ctl_skipping = false;
		left -= nl + 1 - p;
		p = nl + 1;
	}
	g.ctl_off += p - g.ctl_in;
	memmove(g.ctl_in, p, left);
	g.ctl_inlen = left;
	if (g.ctl_inlen == WDCHAN_LINE_MAX) {
		warn_msg("control: line longer than %d bytes: skipped",
		    WDCHAN_LINE_MAX);
		g.ctl_skipping = true;
		g.ctl_off += g.ctl_inlen;
		g.ctl_inlen = 0;
	}
}

/* Queue the pidfds of a read whose last byte is at stream offset at. */
static void
pend_fds(struct msghdr *mh, unsigned long long at)
{
	struct cmsghdr *c;
	size_t i, n;
	int fd;

	for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			/* Too many: dropped, so that line's count is wrong. */
			if (g.npend < PEND_MAX)
				g.pend[g.npend++] = (struct pend){ fd, at };
			else
				close(fd);
		}
	}
	/* Some were dropped on the way: that line's count will be wrong. */
	if ((mh->msg_flags & MSG_CTRUNC) && g.npend < PEND_MAX)
		g.pend[g.npend++] = (struct pend){ -1, at };
}

/* Everything the supervisor has sent so far, and the pidfds with it. */
static void
ctl_drain(void)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(WDCHAN_FDS_MAX * sizeof(int))];
	} cm;
	struct iovec iov;
	struct msghdr mh;
	ssize_t n;

	while (!g.quit && g.ctlw.fd != -1) {
		iov = (struct iovec){ g.ctl_in + g.ctl_inlen,
		    WDCHAN_LINE_MAX - g.ctl_inlen };
		mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1,
		    .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
		n = recvmsg(g.ctlw.fd, &mh, MSG_CMSG_CLOEXEC);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			if (n == -1 && errno != ECONNRESET)
				warn_sys("control: read");
			supervisor_gone();
			return;
		}
		/* The kernel ends a read at the message that carries fds. */
		pend_fds(&mh, g.ctl_off + g.ctl_inlen + n - 1);
		g.ctl_inlen += n;
		ctl_split();
	}
}

static void
on_ctl(struct watch *w, uint32_t events)
{
	(void)w;
	if (events & EPOLLOUT)
		ctl_flush();
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		ctl_drain();
}

/* ---- timers ---- */

static bool
is_worker(pid_t pid)
{
	if (pid == getpid())
		return false;
	if (g.ctlw.fd == -1)
		return g.any_pid;
	return bsearch(&pid, g.pids, g.npids, sizeof(*g.pids), pid_cmp) !=
	    NULL;
}

/*
 * Through the worker's pidfd: if the worker is gone, the signal is not
 * sent, whoever has its pid now.  --any-pid has no list, hence no
 * pidfds: it signals by pid (for tests and trusted single-user setups).
 */
static bool
op_send(void *ctx, pid_t pid, int sig)
{
	pid_t *p;
	int fd;

	(void)ctx;
	g.no_pidfd = false;
	if (g.ctlw.fd == -1) {
		if (kill(pid, sig) == 0)
			return true;
		if (errno != ESRCH)
			warn_sys("kill %d %s", (int)pid, sig_name(sig));
		return false;
	}
	p = bsearch(&pid, g.pids, g.npids, sizeof(*g.pids), pid_cmp);
	if (p == NULL || (fd = g.pidfds[p - g.pids]) == -1) {
		g.no_pidfd = true;
		return false;
	}
	if (esv_pidfd_kill(fd, sig) == 0)
		return true;
	if (errno != ESRCH)
		warn_sys("pidfd of pid %d: %s", (int)pid, sig_name(sig));
	return false;
}

static void
op_expired(void *ctx, const struct wtimer *t, bool acted, bool sent)
{
	struct wd_expired e;
	char scope[4 * WDCHAN_SCOPE_MAX + 1], what[64];

	(void)ctx;
	memset(&e, 0, sizeof(e));
	e.pid = t->pid;
	utf8_strlcpy(e.scope, t->scope, sizeof(e.scope));
	e.signal = t->signal;
	e.deadline = t->deadline;
	/* To the microsecond: more digits would be noise. */
	e.lateness_ms = round((wall_now() - t->deadline) * 1e6) / 1e3;
	e.sent = sent;
	g.expired++;
	if (sent)
		snprintf(what, sizeof(what), "sent %s", sig_name(t->signal));
	else if (acted)
		snprintf(what, sizeof(what), "%s not sent: %s",
		    sig_name(t->signal), g.no_pidfd ?
		    "the supervisor gave no pidfd for it" : "no such process");
	else
		strlcpy(what, t->signal > 0 ? "cleared" : "no signal",
		    sizeof(what));
	request_vis(scope, sizeof(scope), t->scope, strlen(t->scope));
	info_msg("timer expired: pid %d scope %s deadline %.3f "
	    "(lateness %.3f ms): %s", (int)t->pid, scope, t->deadline,
	    e.lateness_ms, what);
	ctl_send(wdchan_expired(&e));
}

static void
run_expiries(void)
{
	static const struct timers_ops ops = { op_send, op_expired };

	timers_expire(&g.ts, wall_now(), &ops, NULL);
}

/* The timerfd, on the wall clock as torch's deadlines are. */
static void
arm_timer(void)
{
	struct itimerspec its;
	double dl = 0, sec;
	bool have;

	have = timers_next(&g.ts, &dl);
	if (g.timer_set == have && (!have || dl == g.timer_dl))
		return;
	memset(&its, 0, sizeof(its));
	if (have) {
		dl = fmin(dl, DEADLINE_MAX);
		/* Rounded up: firing early would only mean a second wake-up. */
		sec = floor(dl);
		its.it_value.tv_sec = (time_t)sec;
		its.it_value.tv_nsec = (long)ceil((dl - sec) * 1e9);
		if (its.it_value.tv_nsec >= 1000000000L) {
			its.it_value.tv_sec++;
			its.it_value.tv_nsec = 0;
		}
		if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
			its.it_value.tv_nsec = 1;
	}
	if (timerfd_settime(g.timerw.fd, TFD_TIMER_ABSTIME |
	    TFD_TIMER_CANCEL_ON_SET, &its, NULL) == -1)
		die(ESV_EXIT_SYSTEM, "timerfd_settime");
	g.timer_set = have;
	g.timer_dl = dl;
}

static void
on_timer(struct watch *w, uint32_t events)
{
	uint64_t n;

	(void)events;
	/* Fired, or ECANCELED: the clock was set.  Either way, arm anew. */
	if (read(w->fd, &n, sizeof(n)) == -1 && errno == ECANCELED &&
	    g.verbose)
		info_msg("the wall clock was set: deadlines checked again");
	g.timer_set = false;
}

/* ---- the FIFO ---- */

static void
log_request(const char *what, const struct request *r)
{
	char scope[4 * WDCHAN_SCOPE_MAX + 1];

	request_vis(scope, sizeof(scope), r->scope, strlen(r->scope));
	info_msg("%s: pid %d scope %s deadline %.3f signal %d", what,
	    (int)r->pid, scope, r->expiration, r->signal);
}

static void
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

static void
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

static void
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

/* ---- the query socket ---- */

static void
query_close(struct query *q)
{
	loop_del(&g.lp, &q->w);
	close(q->w.fd);
	TAILQ_REMOVE(&g.queries, q, entry);
	g.nqueries--;
	free(q);
}

/* The socket buffer is empty: one send is all or nothing. */
static void
reply(int fd, char *line)
{
	if (line != NULL)
		(void)!send(fd, line, strlen(line), MSG_NOSIGNAL |
		    MSG_DONTWAIT);
	free(line);
}

static void
reply_error(int fd, const char *why)
{
	json_t *o = json_pack("{s:s}", "error", why);
	char *s = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
	char *line = NULL;

	if (s != NULL && asprintf(&line, "%s\n", s) == -1)
		line = NULL;
	free(s);
	json_decref(o);
	reply(fd, line);
}

static void
reply_status(int fd)
{
	struct wd_status st = {
		.last_progress = g.last_progress,
		.armed = g.ts.n,
		.requests = g.requests,
		.refused = g.refused,
		.expired = g.expired,
		.workers = g.npids,
		.pid = getpid(),
	};

	reply(fd, wdchan_status(&st));
}

static void
on_query(struct watch *w, uint32_t events)
{
	struct query *q = w->ctx;
	char *nl;
	ssize_t n;

	(void)events;
	n = read(w->fd, q->buf + q->len, sizeof(q->buf) - 1 - q->len);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		q->len += n;
		q->buf[q->len] = '\0';
		if ((nl = memchr(q->buf, '\n', q->len)) == NULL &&
		    q->len < sizeof(q->buf) - 1)
			return;
		if (nl != NULL)
			*nl = '\0';
		if (nl != NULL && strcmp(q->buf, "status") == 0)
			reply_status(w->fd);
		else
			reply_error(w->fd, "unknown request: want status");
	}
	query_close(q);
}

static bool
peer_ok(int fd)
{
	struct ucred cr;
	socklen_t sl = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl) == -1)
		return false;
	return cr.uid == getuid() || cr.uid == 0;
}

static void
query_new(int fd)
{
	struct query *q;

	if (g.nqueries >= QUERY_MAX) {
		reply_error(fd, "too many connections");
		close(fd);
		return;
	}
	if (!peer_ok(fd)) {
		reply_error(fd, "permission denied");
		close(fd);
		return;
	}
	if ((q = calloc(1, sizeof(*q))) == NULL) {
		warn_sys("query");
		close(fd);
		return;
	}
	q->w.fd = fd;
	q->w.fn = on_query;
	q->w.ctx = q;
	q->deadline = mono_ms() + QUERY_MS;
	if (loop_add(&g.lp, &q->w, EPOLLIN) == -1) {
		warn_sys("epoll_ctl");
		close(fd);
		free(q);
		return;
	}
	TAILQ_INSERT_TAIL(&g.queries, q, entry);
	g.nqueries++;
}

static void
on_listen(struct watch *w, uint32_t events)
{
	int fd, i;

	(void)events;
	for (i = 0; i < QUERY_MAX; i++) {
		fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd != -1) {
			query_new(fd);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno != EMFILE && errno != ENFILE) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				warn_sys("query: accept");
			return;
		}
		/* Out of fds: the spare one lets us take the client off. */
		close(g.spare_fd);
		if ((fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC)) != -1)
			close(fd);
		g.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		return;
	}
}

/* Connections are taken in order, so their deadlines are in order too. */
static long long
queries_tick(long long now)
{
	struct query *q;

	while ((q = TAILQ_FIRST(&g.queries)) != NULL && q->deadline <= now)
		query_close(q);
	return q != NULL ? q->deadline : LLONG_MAX;
}

/* ---- setup ---- */

static void
open_fifo(const char *path)
{
	struct stat sb;

	g.fifow.fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (g.fifow.fd == -1)
		die(ESV_EXIT_SYSTEM, "%s", path);
	if (fstat(g.fifow.fd, &sb) == -1)
		die(ESV_EXIT_SYSTEM, "%s", path);
	if (!S_ISFIFO(sb.st_mode))
		diex(ESV_EXIT_USAGE, "%s: not a FIFO", path);
	if (sb.st_mode & (S_IWGRP | S_IWOTH))
		warn_msg("%s: others may write it and arm timers", path);
	/* Never read end-of-file when the last worker closes it. */
	g.fifo_wfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (g.fifo_wfd == -1)
		die(ESV_EXIT_SYSTEM, "%s", path);
	g.fifow.fn = on_fifo;
}

static void
open_socket(const char *path)
{
	struct sockaddr_un sun;
	struct stat sb;
	mode_t um;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		diex(ESV_EXIT_USAGE, "--socket %s: path too long", path);
	if (lstat(path, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode))
			diex(ESV_EXIT_USAGE, "%s: exists and is not a socket",
			    path);
		if (unlink(path) == -1)
			die(ESV_EXIT_SYSTEM, "unlink %s", path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		die(ESV_EXIT_SYSTEM, "socket");
	um = umask(077);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		die(ESV_EXIT_SYSTEM, "bind %s", path);
	umask(um);
	if (chmod(path, 0600) == -1)
		die(ESV_EXIT_SYSTEM, "chmod %s", path);
	if (listen(fd, QUERY_MAX) == -1)
		die(ESV_EXIT_SYSTEM, "listen %s", path);
	g.listenw.fd = fd;
	g.listenw.fn = on_listen;
	g.sockpath = path;
}

static void
open_control(int fd)
{
	int fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1)
		die(ESV_EXIT_USAGE, "--control-fd %d", fd);
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		die(ESV_EXIT_SYSTEM, "--control-fd %d", fd);
	if ((g.ctl_in = malloc(WDCHAN_LINE_MAX)) == NULL ||
	    (g.ctl_out = malloc(CTL_OUT_MAX)) == NULL ||
	    (g.pend = calloc(PEND_MAX, sizeof(*g.pend))) == NULL)
		die(ESV_EXIT_SYSTEM, "malloc");
	g.ctlw.fd = fd;
	g.ctlw.fn = on_ctl;
}

static void
on_signal(struct watch *w, uint32_t events)
{
	struct signalfd_siginfo sis[4], si;
	int k, n;

	(void)events;
	n = signals_read(w->fd, sis, 4);
	for (k = 0; k < n; k++) {
		si = sis[k];
		if (si.ssi_signo != SIGHUP) {
			g.quit = true;
			continue;
		}
		/* Nothing to reload: say where things stand instead. */
		info_msg("status: %zu armed, %lu requests, %lu refused, "
		    "%lu expired, %zu workers", g.ts.n, g.requests, g.refused,
		    g.expired, g.npids);
	}
}

static void
add(struct watch *w)
{
	if (w->fd != -1 && loop_add(&g.lp, w, EPOLLIN) == -1)
		die(ESV_EXIT_SYSTEM, "epoll_ctl");
}

static void
setup_loop(void)
{
	loop_daemon_init(&g.lp, &g.sigw, on_signal);
	/* Expirations are wall-clock times, as torch's clients send them. */
	g.timerw.fd = timer_open(CLOCK_REALTIME);
	if (g.timerw.fd == -1)
		die(ESV_EXIT_SYSTEM, "timerfd_create");
	g.timerw.fn = on_timer;
	if ((g.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		die(ESV_EXIT_SYSTEM, "/dev/null");
	add(&g.timerw);
	add(&g.ctlw);
	add(&g.fifow);
	add(&g.listenw);
}

static void
run(void)
{
	long long now, next;

	while (!g.quit) {
		/*
		 * The supervisor's latest list first: a timer of a worker
		 * that list no longer names is dropped, not fired.
		 */
		ctl_drain();
		run_expiries();
		arm_timer();
		now = mono_ms();
		next = queries_tick(now);
		next = ratelim_tick(&g.badrl, now, next);
		next = ratelim_tick(&g.refrl, now, next);
		if (loop_once(&g.lp, next == LLONG_MAX ? -1 :
		    (int)(next - now)) == -1)
			die(ESV_EXIT_SYSTEM, "epoll_wait");
	}
}

static int
fd_arg(const char *arg)
{
	const char *errstr;
	int fd;

	fd = strtonum(arg, 0, INT_MAX, &errstr);
	if (errstr != NULL)
		diex(ESV_EXIT_USAGE, "--control-fd %s: %s", arg, errstr);
	return fd;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "fifo", required_argument, NULL, 'f' },
		{ "socket", required_argument, NULL, 's' },
		{ "control-fd", required_argument, NULL, 'c' },
		{ "any-pid", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *fifo = NULL, *sock = NULL;
	int ch, ctlfd = -1;

	while ((ch = getopt_long(argc, argv, "hv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			fifo = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		case 'c':
			ctlfd = fd_arg(optarg);
			break;
		case 'a':
			g.any_pid = true;
			break;
		case 'v':
			g.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return ESV_EXIT_OK;
		case 'V':
			printf("esv-watchdogd %s\n", ESV_VERSION);
			return ESV_EXIT_OK;
		default:
			usage(stderr);
			return ESV_EXIT_USAGE;
		}
	}
	if (optind != argc || fifo == NULL || (ctlfd != -1 && g.any_pid)) {
		usage(stderr);
		return ESV_EXIT_USAGE;
	}
	g.ctlw.fd = g.listenw.fd = -1;
	g.badrl.what = "bad requests";
	g.refrl.what = "refused requests";
	timers_init(&g.ts);
	TAILQ_INIT(&g.queries);
	if (ctlfd != -1)
		open_control(ctlfd);
	else if (!g.any_pid)
		warn_msg("neither --control-fd nor --any-pid: every request "
		    "will be refused");
	open_fifo(fifo);
	if (sock != NULL)
		open_socket(sock);
	setup_loop();
	/* The default 50 us of timer slack is half our lateness budget. */
	prctl(PR_SET_TIMERSLACK, 1UL);
	g.last_progress = wall_now();
	run();
	/* A burst just before the end is still counted, before we hang up. */
	ratelim_flush(&g.badrl, 0);
	ratelim_flush(&g.refrl, 0);
	if (g.sockpath != NULL)
		unlink(g.sockpath);
	return ESV_EXIT_OK;
}
