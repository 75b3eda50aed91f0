/*
 * The status socket: one line asked, one line answered (wdchan.h), each
 * client given QUERY_MS to ask.
 */
#include "watchdogd.h"

/* The status socket, bound and listening, or a usage error. */
void
query_open(struct queries *qs, const char *path)
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
	qs->w.fd = fd;
	qs->w.fn = on_listen;
	qs->w.ctx = qs;
	qs->path = path;
}

static void
query_close(struct queries *qs, struct query *q)
{
	loop_del(qs->lp, &q->w);
	close(q->w.fd);
	TAILQ_REMOVE(&qs->q, q, entry);
	qs->n--;
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
reply_status(const struct queries *qs, int fd)
{
	struct wd_status st = {
		.last_progress = qs->cnt->last_progress,
		.armed = qs->ts->n,
		.requests = qs->cnt->requests,
		.refused = qs->cnt->refused,
		.expired = qs->cnt->expired,
		.workers = qs->wk->n,
		.pid = getpid(),
	};

	reply(fd, wdchan_status(&st));
}

static void
on_query(struct watch *w, uint32_t events)
{
	struct query *q = w->ctx;
	struct queries *qs = q->qs;
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
			reply_status(qs, w->fd);
		else
			reply_error(w->fd, "unknown request: want status");
	}
	query_close(qs, q);
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
query_new(struct queries *qs, int fd)
{
	struct query *q;

	if (qs->n >= QUERY_MAX) {
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
	q->qs = qs;
	q->deadline = mono_ms() + QUERY_MS;
	if (loop_add(qs->lp, &q->w, EPOLLIN) == -1) {
		warn_sys("epoll_ctl");
		close(fd);
		free(q);
		return;
	}
	TAILQ_INSERT_TAIL(&qs->q, q, entry);
	qs->n++;
}

void
on_listen(struct watch *w, uint32_t events)
{
	struct queries *qs = w->ctx;
	int fd, i;

	(void)events;
	for (i = 0; i < QUERY_MAX; i++) {
		fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd != -1) {
			query_new(qs, fd);
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
		close(qs->spare_fd);
		if ((fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC)) != -1)
			close(fd);
		qs->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		return;
	}
}

/* Connections are taken in order, so their deadlines are in order too. */
long long
queries_tick(struct queries *qs, long long now)
{
	struct query *q;

	while ((q = TAILQ_FIRST(&qs->q)) != NULL && q->deadline <= now)
		query_close(qs, q);
	return q != NULL ? q->deadline : LLONG_MAX;
}
