/*
 * The control channel from esv-supervise: the workers' pids and pidfds in, expiries out (wdchan.h).
 */
#include "watchdogd.h"

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
void
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

int
pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
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
void
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

void
on_ctl(struct watch *w, uint32_t events)
{
	(void)w;
	if (events & EPOLLOUT)
		ctl_flush();
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		ctl_drain();
}
