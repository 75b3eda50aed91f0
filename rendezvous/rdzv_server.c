#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "rdzv_server_int.h"

#define WARN_BURST	20	/* warnings per address per second */

static int
warn_cmp(struct ipwarn *a, struct ipwarn *b)
{
	return strcmp(a->ip, b->ip);
}
RB_GENERATE_STATIC(warntree, ipwarn, rb, warn_cmp)

struct rdzv_server *
rdzv_server_new(const struct rdzv_server_conf *conf,
    const struct rdzv_server_ops *ops, const char *token, long long now)
{
	struct rdzv_server *srv;

	if ((srv = calloc(1, sizeof(*srv))) == NULL)
		return NULL;
	srv->conf = *conf;
	srv->ops = *ops;
	srv->now = now;
	srv->next_ping = now + conf->heartbeat_ms;
	RB_INIT(&srv->jobs);
	RB_INIT(&srv->warns);
	TAILQ_INIT(&srv->closed_jobs);
	TAILQ_INIT(&srv->conns);
	TAILQ_INIT(&srv->dead);
	rdzv_server_set_token(srv, token);
	return srv;
}

void
rdzv_server_free(struct rdzv_server *srv)
{
	struct rdzv_sconn *sc;
	struct ipwarn *w;

	if (srv == NULL)
		return;
	jobs_free(srv);
	while ((sc = TAILQ_FIRST(&srv->conns)) != NULL) {
		TAILQ_REMOVE(&srv->conns, sc, entry);
		free(sc);
	}
	while ((w = RB_MIN(warntree, &srv->warns)) != NULL) {
		RB_REMOVE(warntree, &srv->warns, w);
		free(w);
	}
	explicit_bzero(srv->token, sizeof(srv->token));
	free(srv);
}

void
rdzv_server_set_token(struct rdzv_server *srv, const char *token)
{
	strlcpy(srv->token, token, sizeof(srv->token));
}

unsigned
rdzv_server_njobs(const struct rdzv_server *srv)
{
	return srv->njobs;
}

static void
vwarn_ip(struct rdzv_server *srv, const char *ip, const char *fmt,
    va_list ap)
{
	struct ipwarn key, *w;
	char buf[1024];

	strlcpy(key.ip, ip, sizeof(key.ip));
	if ((w = RB_FIND(warntree, &srv->warns, &key)) == NULL &&
	    (w = calloc(1, sizeof(*w))) != NULL) {
		strlcpy(w->ip, ip, sizeof(w->ip));
		w->window = srv->now;
		RB_INSERT(warntree, &srv->warns, w);
	}
	if (w != NULL && srv->now - w->window >= 1000) {
		if (w->suppressed > 0)
			warn_msg("%s: %u warnings suppressed", w->ip,
			    w->suppressed);
		w->window = srv->now;
		w->count = w->suppressed = 0;
	}
	if (w != NULL && w->count++ >= WARN_BURST) {
		w->suppressed++;
		return;
	}
	vsnprintf(buf, sizeof(buf), fmt, ap);
	warn_msg("%s", buf);
}

void
rdzv_server_warn(struct rdzv_server *srv, const char *ip, long long now,
    const char *fmt, ...)
{
	va_list ap;

	srv->now = now;
	va_start(ap, fmt);
	vwarn_ip(srv, ip, fmt, ap);
	va_end(ap);
}

/* A window is over: say what was held back, forget the address. */
static void
warns_expire(struct rdzv_server *srv)
{
	struct ipwarn *w, *next;

	RB_FOREACH_SAFE(w, warntree, &srv->warns, next) {
		if (srv->now - w->window < 1000)
			continue;
		if (w->suppressed > 0)
			warn_msg("%s: %u warnings suppressed", w->ip,
			    w->suppressed);
		RB_REMOVE(warntree, &srv->warns, w);
		free(w);
	}
}

static void
send_line(struct rdzv_server *srv, struct rdzv_sconn *sc, const char *line,
    size_t len)
{
	if (sc->dead)
		return;
	if (srv->conf.verbose)
		info_msg("%s: > %.*s", sc->peer, (int)len - 1, line);
	/* A peer that hung up is no slow reader: say which it was. */
	if (srv->ops.send(srv->ops.ctx, sc->conn, line, len) == -1)
		srv_kill(srv, sc, errno == ENOBUFS ? "not reading" : "eof");
}

void
srv_send(struct rdzv_server *srv, struct rdzv_sconn *sc,
    const struct rdzv_msg *m)
{
	char line[RDZV_LINE_MAX + 1];
	int n;

	if ((n = rdzv_msg_format(line, sizeof(line), m)) == -1) {
		/* Only a name from a JOIN goes out, and it was checked. */
		warn_msg("%s: cannot format message %d", sc->peer, m->verb);
		srv_kill(srv, sc, "internal error");
		return;
	}
	send_line(srv, sc, line, n);
}

static void
vhangup(struct rdzv_server *srv, struct rdzv_sconn *sc, const char *code,
    const char *fmt, va_list ap)
{
	struct rdzv_msg m = { .verb = RV_ERR };

	strlcpy(m.u.err.code, code, sizeof(m.u.err.code));
	vsnprintf(m.u.err.text, sizeof(m.u.err.text), fmt, ap);
	srv_send(srv, sc, &m);
	srv_kill(srv, sc, "error");
}

static void
hangup(struct rdzv_server *srv, struct rdzv_sconn *sc, const char *code,
    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vhangup(srv, sc, code, fmt, ap);
	va_end(ap);
}

void
srv_refuse(struct rdzv_server *srv, struct rdzv_sconn *sc, const char *code,
    const char *fmt, ...)
{
	char text[RDZV_TEXT_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (sc->lineno > 0)
		rdzv_server_warn(srv, sc->ip, srv->now, "%s: line %lu: %s",
		    sc->peer, sc->lineno, text);
	else
		rdzv_server_warn(srv, sc->ip, srv->now, "%s: %s", sc->peer,
		    text);
	va_start(ap, fmt);
	vhangup(srv, sc, code, fmt, ap);
	va_end(ap);
}

void
srv_kill(struct rdzv_server *srv, struct rdzv_sconn *sc, const char *why)
{
	if (sc->dead)
		return;
	sc->dead = true;
	sc->dead_why = why;
	TAILQ_INSERT_TAIL(&srv->dead, sc, dead_entry);
}

static void
conn_free(struct rdzv_server *srv, struct rdzv_sconn *sc)
{
	TAILQ_REMOVE(&srv->conns, sc, entry);
	free(sc);
}

/*
 * Hang-ups are deferred to the end of each entry point: a send deep in a
 * walk over a job's nodes must not free a node under that walk.
 */
static void
reap(struct rdzv_server *srv)
{
	struct rdzv_sconn *sc;

	while ((sc = TAILQ_FIRST(&srv->dead)) != NULL) {
		TAILQ_REMOVE(&srv->dead, sc, dead_entry);
		if (sc->node != NULL)
			job_node_gone(srv, sc, sc->dead_why);
		if (sc->dead_why != NULL && srv->conf.verbose)
			info_msg("%s: closed: %s", sc->peer, sc->dead_why);
		srv->ops.close(srv->ops.ctx, sc->conn);
		conn_free(srv, sc);
	}
}

struct rdzv_sconn *
rdzv_server_accept(struct rdzv_server *srv, void *conn, const char *peer,
    const char *ip, long long now)
{
	struct rdzv_msg m = { .verb = RV_HELLO };
	struct rdzv_sconn *sc;
	char line[RDZV_LINE_MAX + 1];
	int n;

	srv->now = now;
	if ((sc = calloc(1, sizeof(*sc))) == NULL)
		return NULL;
	sc->conn = conn;
	strlcpy(sc->peer, peer, sizeof(sc->peer));
	strlcpy(sc->ip, ip, sizeof(sc->ip));
	rdzv_nonce(sc->nonce);
	sc->since = sc->last_line = now;
	m.u.hello.version = RDZV_PROTO_VERSION;
	strlcpy(m.u.hello.nonce, sc->nonce, sizeof(m.u.hello.nonce));
	m.u.hello.heartbeat_ms = srv->conf.heartbeat_ms;
	n = rdzv_msg_format(line, sizeof(line), &m);
	if (n == -1 || srv->ops.send(srv->ops.ctx, conn, line, n) == -1) {
		free(sc);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&srv->conns, sc, entry);
	if (srv->conf.verbose)
		info_msg("%s: connected", peer);
	return sc;
}

static void
on_join(struct rdzv_server *srv, struct rdzv_sconn *sc,
    const struct rdzv_join *j)
{
	char mac[RDZV_MAC_LEN + 1];

	if (j->version != RDZV_PROTO_VERSION) {
		srv_refuse(srv, sc, "version", "%u not supported, this "
		    "server speaks %d", j->version, RDZV_PROTO_VERSION);
		return;
	}
	if (sc->authed && (strcmp(sc->run_id, j->run_id) != 0 ||
	    strcmp(sc->node_id, j->node_id) != 0)) {
		srv_refuse(srv, sc, "proto", "JOIN: run id and node id must "
		    "be those of the first JOIN");
		return;
	}
	rdzv_mac(srv->token, sc->nonce, j->run_id, j->node_id, mac);
	if (!rdzv_mac_equal(mac, j->mac)) {
		rdzv_server_warn(srv, sc->ip, srv->now, "%s: line %lu: job %s "
		    "node %s: bad token", sc->peer, sc->lineno, j->run_id,
		    j->node_id);
		hangup(srv, sc, "auth", "bad token");
		return;
	}
	sc->authed = true;
	strlcpy(sc->run_id, j->run_id, sizeof(sc->run_id));
	strlcpy(sc->node_id, j->node_id, sizeof(sc->node_id));
	job_join(srv, sc, j);
}

static void
on_line(struct rdzv_server *srv, struct rdzv_sconn *sc, char *line,
    size_t len)
{
	struct rdzv_msg m;
	char err[256];

	if (memchr(line, '\0', len) != NULL) {
		srv_refuse(srv, sc, "proto", "NUL byte in line");
		return;
	}
	line[len - 1] = '\0';
	if (srv->conf.verbose)
		info_msg("%s: < %s", sc->peer, line);
	if (rdzv_msg_parse(line, &m, err, sizeof(err)) == -1) {
		srv_refuse(srv, sc, "proto", "%s", err);
		return;
	}
	if (!sc->authed && m.verb != RV_JOIN) {
		srv_refuse(srv, sc, "proto", "JOIN expected");
		return;
	}
	switch (m.verb) {
	case RV_JOIN:
		on_join(srv, sc, &m.u.join);
		break;
	case RV_PING:
		break;
	case RV_BARRIER:
		job_barrier(srv, sc, m.u.n);
		break;
	case RV_LEAVE:
		if (sc->node != NULL)
			job_node_gone(srv, sc, "leave");
		break;
	case RV_CLOSE:
		job_close(srv, sc);
		break;
	default:
		srv_refuse(srv, sc, "proto", "%.*s is not a client message",
		    (int)strcspn(line, " "), line);
		break;
	}
}

void
rdzv_server_input(struct rdzv_server *srv, struct rdzv_sconn *sc,
    const char *buf, size_t n, long long now)
{
	const char *nl;
	size_t take;

	srv->now = now;
	while (n > 0 && !sc->dead) {
		nl = memchr(buf, '\n', n);
		take = nl != NULL ? (size_t)(nl - buf) + 1 : n;
		/* Without its '\n' the line must leave room for one. */
		if (sc->inlen + take + (nl == NULL) > RDZV_LINE_MAX) {
			sc->lineno++;
			srv_refuse(srv, sc, "toolong", "line %lu longer than "
			    "%d bytes", sc->lineno, RDZV_LINE_MAX);
			break;
		}
		memcpy(sc->in + sc->inlen, buf, take);
		sc->inlen += take;
		buf += take;
		n -= take;
		if (nl == NULL)
			break;
		sc->lineno++;
		sc->last_line = now;
		on_line(srv, sc, sc->in, sc->inlen);
		sc->inlen = 0;
	}
	reap(srv);
}

void
rdzv_server_lost(struct rdzv_server *srv, struct rdzv_sconn *sc,
    const char *why, long long now)
{
	srv->now = now;
	if (sc->dead)
		TAILQ_REMOVE(&srv->dead, sc, dead_entry);
	if (sc->node != NULL)
		job_node_gone(srv, sc, why);
	if (srv->conf.verbose)
		info_msg("%s: closed: %s", sc->peer, why);
	conn_free(srv, sc);
	reap(srv);
}

static void
heartbeat(struct rdzv_server *srv)
{
	struct rdzv_msg ping = { .verb = RV_PING };
	long long dead_after = 3LL * srv->conf.heartbeat_ms;
	struct rdzv_sconn *sc;

	TAILQ_FOREACH(sc, &srv->conns, entry) {
		if (sc->dead)
			continue;
		if (!sc->authed && srv->now - sc->since >= dead_after) {
			srv_refuse(srv, sc, "proto", "no JOIN within %lld ms",
			    dead_after);
		} else if (sc->authed && srv->now - sc->last_line >=
		    dead_after) {
			info_msg("%s: heartbeat lost", sc->peer);
			srv_kill(srv, sc, "heartbeat");
		} else if (sc->authed)
			srv_send(srv, sc, &ping);
	}
	srv->next_ping = srv->now + srv->conf.heartbeat_ms;
}

long long
rdzv_server_tick(struct rdzv_server *srv, long long now)
{
	long long next;

	srv->now = now;
	if (now >= srv->next_ping)
		heartbeat(srv);
	jobs_tick(srv);
	reap(srv);
	warns_expire(srv);
	next = jobs_next_deadline(srv);
	return next < srv->next_ping ? next : srv->next_ping;
}
