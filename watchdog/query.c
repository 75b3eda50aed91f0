/*
 * The status socket: one line asked, one line answered (wdchan.h), each
 * client given QUERY_MS to ask.
 */
#include "watchdogd.h"

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

void
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
long long
queries_tick(long long now)
{
	struct query *q;

	while ((q = TAILQ_FIRST(&g.queries)) != NULL && q->deadline <= now)
		query_close(q);
	return q != NULL ? q->deadline : LLONG_MAX;
}
