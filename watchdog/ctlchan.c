/*
 * The control channel from esv-supervise: the workers' pids and pidfds in,
 * expiries out (wdchan.h).  A new list replaces the workers (struct workers),
 * drops the timers of those it no longer names, and is announced through
 * the listed callback: this file calls nothing above it.
 */
#include "watchdogd.h"

static void
ctl_events(struct ctlchan *c)
{
	bool out = c->outlen > 0;

	if (out == c->want_out)
		return;
	c->want_out = out;
	if (loop_mod(c->lp, &c->w, EPOLLIN | (out ? EPOLLOUT : 0)) == -1)
		die(ESV_EXIT_SYSTEM, "epoll_ctl");
}

static void
supervisor_gone(struct ctlchan *c)
{
	info_msg("control: the supervisor went away: exiting");
	c->gone = true;
}

static void
ctl_flush(struct ctlchan *c)
{
	ssize_t n;

	while (c->outlen > 0) {
		n = send(c->w.fd, c->out, c->outlen, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n == -1) {
			if (errno != EPIPE && errno != ECONNRESET)
				warn_sys("control: send");
			supervisor_gone(c);
			return;
		}
		memmove(c->out, c->out + n, c->outlen - n);
		c->outlen -= n;
	}
	ctl_events(c);
}

void
ctl_open(struct ctlchan *c, int fd)
{
	int fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1)
		die(ESV_EXIT_USAGE, "--control-fd %d", fd);
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		die(ESV_EXIT_SYSTEM, "--control-fd %d", fd);
	if ((c->in = malloc(WDCHAN_LINE_MAX)) == NULL ||
	    (c->out = malloc(CTL_OUT_MAX)) == NULL ||
	    (c->pend = calloc(PEND_MAX, sizeof(*c->pend))) == NULL)
		die(ESV_EXIT_SYSTEM, "malloc");
	c->w.fd = fd;
	c->w.fn = on_ctl;
	c->w.ctx = c;
}

/* A supervisor that stops reading loses reports, never the watchdog. */
void
ctl_send(struct ctlchan *c, char *line)
{
	size_t len;

	if (c->w.fd == -1 || line == NULL) {
		free(line);
		return;
	}
	len = strlen(line);
	if (c->outlen + len > CTL_OUT_MAX) {
		if (c->dropped++ == 0)
			warn_msg("control: the supervisor does not read: "
			    "dropping reports");
		free(line);
		return;
	}
	c->dropped = 0;
	memcpy(c->out + c->outlen, line, len);
	c->outlen += len;
	free(line);
	ctl_flush(c);
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
set_workers(struct ctlchan *c, pid_t *pids, size_t n, int *fds)
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
		old = c->wk->n > 0 ? bsearch(&pids[i], c->wk->pids, c->wk->n,
		    sizeof(*c->wk->pids), pid_cmp) : NULL;
		if (old != NULL && other_process(c->wk->pidfds[old -
		    c->wk->pids], fds[i]))
			info_msg("control: pid %d is another process now",
			    (int)pids[i]);
		else
			keep[nkeep++] = pids[i];
	}
	close_fds(c->wk->pidfds, c->wk->n);
	free(c->wk->pidfds);
	free(c->wk->pids);
	c->wk->pids = pids;
	c->wk->pidfds = fds;
	c->wk->n = n;
	dropped = timers_keep_pids(c->ts, keep, nkeep);
	free(keep);
	if (c->verbose || dropped > 0)
		info_msg("control: %zu workers; %zu timers of others dropped",
		    n, dropped);
	if (c->listed != NULL)
		c->listed(c->listed_ctx);
}

/* A line, with the pidfds that came with it (ours to keep or close). */
static void
ctl_line(struct ctlchan *c, char *line, int *fds, size_t nfds)
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
		set_workers(c, pids, n, pfds);
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
take_fds(struct ctlchan *c, unsigned long long end, size_t *n)
{
	static int fds[PEND_MAX];
	size_t i;

	for (i = 0; i < c->npend && c->pend[i].at <= end; i++)
		fds[i] = c->pend[i].fd;
	memmove(c->pend, c->pend + i, (c->npend - i) * sizeof(*c->pend));
	c->npend -= i;
	*n = i;
	return fds;
}

static void
ctl_split(struct ctlchan *c)
{
	char *nl, *p = c->in;
	size_t left = c->inlen, nfds;
	int *fds;

	while ((nl = memchr(p, '\n', left)) != NULL) {
		*nl = '\0';
		fds = take_fds(c, c->off + (nl - c->in), &nfds);
		if (!c->skipping)
			ctl_line(c, p, fds, nfds);
		else
			close_fds(fds, nfds);
		c->skipping = false;
		left -= nl + 1 - p;
		p = nl + 1;
	}
	c->off += p - c->in;
	memmove(c->in, p, left);
	c->inlen = left;
	if (c->inlen == WDCHAN_LINE_MAX) {
		warn_msg("control: line longer than %d bytes: skipped",
		    WDCHAN_LINE_MAX);
		c->skipping = true;
		c->off += c->inlen;
		c->inlen = 0;
	}
}

/* Queue the pidfds of a read whose last byte is at stream offset at. */
static void
pend_fds(struct ctlchan *c, struct msghdr *mh, unsigned long long at)
{
	struct cmsghdr *ch;
	size_t i, n;
	int fd;

	for (ch = CMSG_FIRSTHDR(mh); ch != NULL; ch = CMSG_NXTHDR(mh, ch)) {
		if (ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS)
			continue;
		n = (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(ch) + i * sizeof(int),
			    sizeof(fd));
			/* Too many: dropped, so that line's count is wrong. */
			if (c->npend < PEND_MAX)
				c->pend[c->npend++] = (struct pend){ fd, at };
			else
				close(fd);
		}
	}
	/* Some were dropped on the way: that line's count will be wrong. */
	if ((mh->msg_flags & MSG_CTRUNC) && c->npend < PEND_MAX)
		c->pend[c->npend++] = (struct pend){ -1, at };
}

/* Everything the supervisor has sent so far, and the pidfds with it. */
void
ctl_drain(struct ctlchan *c)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(WDCHAN_FDS_MAX * sizeof(int))];
	} cm;
	struct iovec iov;
	struct msghdr mh;
	ssize_t n;

	while (!c->gone && c->w.fd != -1) {
		iov = (struct iovec){ c->in + c->inlen,
		    WDCHAN_LINE_MAX - c->inlen };
		mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1,
		    .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
		n = recvmsg(c->w.fd, &mh, MSG_CMSG_CLOEXEC);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			if (n == -1 && errno != ECONNRESET)
				warn_sys("control: read");
			supervisor_gone(c);
			return;
		}
		/* The kernel ends a read at the message that carries fds. */
		pend_fds(c, &mh, c->off + c->inlen + n - 1);
		c->inlen += n;
		ctl_split(c);
	}
}

void
on_ctl(struct watch *w, uint32_t events)
{
	struct ctlchan *c = w->ctx;

	if (events & EPOLLOUT)
		ctl_flush(c);
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		ctl_drain(c);
}
