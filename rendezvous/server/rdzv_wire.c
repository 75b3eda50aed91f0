/*
 * What every layer of the esv-rdzv state machine says to a connection: a
 * message, a refusal, a hang-up (deferred: rdzv_server.c reaps the dead at
 * the end of each entry point); warnings, rate-limited per address; and
 * how long a node's lease runs.  It calls nothing above it, so that jobs
 * and rounds (rdzv_job.c, rdzv_table.c) answer a node without calling
 * back into the connection layer that called them.
 */
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
void
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

void
warns_free(struct rdzv_server *srv)
{
	struct ipwarn *w;

	while ((w = RB_MIN(warntree, &srv->warns)) != NULL) {
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

	/* Before the session key, only the greeting and ERR go out. */
	if (sc->authed)
		n = rdzv_msg_format_sealed(line, sizeof(line), m, sc->key,
		    RDZV_TO_CLIENT, sc->seq_out);
	else
		n = rdzv_msg_format(line, sizeof(line), m);
	if (n == -1) {
		/* Only a name from a JOIN goes out, and it was checked. */
		warn_msg("%s: cannot format message %d", sc->peer, m->verb);
		srv_kill(srv, sc, "internal error");
		return;
	}
	if (sc->authed)
		sc->seq_out++;
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

void
srv_hangup(struct rdzv_server *srv, struct rdzv_sconn *sc, const char *code,
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
	sc->linger = true;
	sc->dead_why = why;
	TAILQ_INSERT_TAIL(&srv->dead, sc, dead_entry);
}

void
srv_drop(struct rdzv_server *srv, struct rdzv_sconn *sc, const char *code,
    const char *text)
{
	struct rdzv_msg m = { .verb = RV_ERR };

	strlcpy(m.u.err.code, code, sizeof(m.u.err.code));
	strlcpy(m.u.err.text, text, sizeof(m.u.err.text));
	srv_send(srv, sc, &m);
	srv_kill(srv, sc, "dropped");
	sc->linger = false;
}

long long
srv_lease_ms(const struct rdzv_server *srv)
{
	return srv->conf.lease_ms > 0 ? srv->conf.lease_ms :
	    3LL * srv->conf.heartbeat_ms;
}

long long
srv_lease_end(const struct rdzv_server *srv, const struct rdzv_sconn *sc)
{
	return sc->last_line + srv_lease_ms(srv) + srv->conf.lease_slack_ms;
}
