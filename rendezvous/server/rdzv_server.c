/*
 * esv-rdzv's connections (the entry points of rdzv_server.h): the
 * greeting, the first line (a sealed JOIN, or a refusal), each line
 * dispatched to rdzv_job.c, hang-ups reaped at the end of every entry
 * point, heartbeats, leases and the deadline of who has not
 * authenticated.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "rdzv_server_int.h"

static void	send_ack(struct rdzv_server *srv, struct rdzv_sconn *sc);

struct rdzv_server *
rdzv_server_new(const struct rdzv_server_conf *conf,
    const struct rdzv_server_ops *ops, const char *token, long long now)
{
	struct rdzv_server *srv;

	if ((srv = calloc(1, sizeof(*srv))) == NULL)
		return NULL;
	srv->conf = *conf;
	srv->ops = *ops;
	srv->now = srv->started = now;
	srv->next_ping = now + conf->heartbeat_ms;
	RB_INIT(&srv->jobs);
	RB_INIT(&srv->warns);
	TAILQ_INIT(&srv->closed_jobs);
	TAILQ_INIT(&srv->conns);
	TAILQ_INIT(&srv->dead);
	TAILQ_INIT(&srv->unauth);
	rdzv_server_set_token(srv, token);
	return srv;
}

void
rdzv_server_free(struct rdzv_server *srv)
{
	struct rdzv_sconn *sc;

	if (srv == NULL)
		return;
	jobs_free(srv);
	while ((sc = TAILQ_FIRST(&srv->conns)) != NULL) {
		TAILQ_REMOVE(&srv->conns, sc, entry);
		explicit_bzero(sc->key, sizeof(sc->key));
		free(sc);
	}
	warns_free(srv);
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

/* sc leaves the pool of connections yet to authenticate. */
static void
unauth_leave(struct rdzv_server *srv, struct rdzv_sconn *sc)
{
	if (sc->authed)
		return;
	TAILQ_REMOVE(&srv->unauth, sc, unauth_entry);
	srv->nunauth--;
}

static void
conn_free(struct rdzv_server *srv, struct rdzv_sconn *sc)
{
	unauth_leave(srv, sc);
	if (sc->authed)
		srv->nauthed--;
	TAILQ_REMOVE(&srv->conns, sc, entry);
	explicit_bzero(sc->key, sizeof(sc->key));
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
		srv->ops.close(srv->ops.ctx, sc->conn, sc->linger);
		conn_free(srv, sc);
	}
}

/*
 * Room for one more connection yet to authenticate: the oldest of its
 * address goes if that address has its share, else the oldest of all if
 * the pool is full.  A node authenticates within a round trip of its
 * greeting, so a flood must outpace that to keep it out.
 */
static void
unauth_make_room(struct rdzv_server *srv, const char *ip)
{
	struct rdzv_sconn *sc, *oldest = NULL;
	unsigned same = 0;
	bool by_addr;

	TAILQ_FOREACH(sc, &srv->unauth, unauth_entry) {
		if (sc->dead || strcmp(sc->ip, ip) != 0)
			continue;
		if (oldest == NULL)
			oldest = sc;
		same++;
	}
	by_addr = same >= srv->conf.max_unauth_per_addr;
	if (!by_addr) {
		oldest = NULL;
		if (srv->nunauth >= srv->conf.max_unauth)
			TAILQ_FOREACH(sc, &srv->unauth, unauth_entry)
				if (!sc->dead) {
					oldest = sc;
					break;
				}
	}
	if (oldest == NULL)
		return;
	rdzv_server_warn(srv, oldest->ip, srv->now, "%s: dropped: %u "
	    "connections yet to authenticate%s", oldest->peer,
	    by_addr ? same : srv->nunauth, by_addr ? " from its address" : "");
	srv_drop(srv, oldest, "limit", "too many connections yet to "
	    "authenticate");
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
	unauth_make_room(srv, ip);
	reap(srv);
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
	m.u.hello.lease_ms = srv->conf.lease_ms;
	n = rdzv_msg_format(line, sizeof(line), &m);
	if (n == -1 || srv->ops.send(srv->ops.ctx, conn, line, n) == -1) {
		free(sc);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&srv->conns, sc, entry);
	TAILQ_INSERT_TAIL(&srv->unauth, sc, unauth_entry);
	srv->nunauth++;
	if (srv->conf.verbose)
		info_msg("%s: connected", peer);
	return sc;
}

static void
on_join(struct rdzv_server *srv, struct rdzv_sconn *sc,
    const struct rdzv_join *j)
{
	if (j->version != RDZV_PROTO_VERSION) {
		srv_refuse(srv, sc, "version", "%u not supported, this "
		    "server speaks %d", j->version, RDZV_PROTO_VERSION);
		return;
	}
	if (strcmp(sc->run_id, j->run_id) != 0 ||
	    strcmp(sc->node_id, j->node_id) != 0 ||
	    strcmp(sc->cnonce, j->cnonce) != 0) {
		srv_refuse(srv, sc, "proto", "JOIN: run id, node id and nonce "
		    "must be those of the first JOIN");
		return;
	}
	job_join(srv, sc, j);
}

/*
 * The first line: a JOIN, sealed under the key of both nonces.  Its seal
 * proves the client knows the token, and our answers, sealed under the
 * same key, prove to the client that we do.
 */
static void
on_first_line(struct rdzv_server *srv, struct rdzv_sconn *sc, char *line)
{
	char mac[RDZV_MAC_LEN + 1], err[256];
	struct rdzv_msg m;
	unsigned version;
	bool sealed;

	if (sscanf(line, "JOIN %u ", &version) == 1 &&
	    version != RDZV_PROTO_VERSION) {
		srv_refuse(srv, sc, "version", "%u not supported, this "
		    "server speaks %d", version, RDZV_PROTO_VERSION);
		return;
	}
	sealed = rdzv_unseal_split(line, mac) == 0;
	if (rdzv_msg_parse(line, &m, err, sizeof(err)) == -1) {
		srv_refuse(srv, sc, "proto", "%s", err);
		return;
	}
	if (!sealed || m.verb != RV_JOIN) {
		srv_refuse(srv, sc, "proto", "a sealed JOIN expected");
		return;
	}
	rdzv_session_key(srv->token, sc->nonce, m.u.join.cnonce, sc->key);
	if (!rdzv_seal_ok(line, mac, sc->key, RDZV_TO_SERVER, 0)) {
		rdzv_server_warn(srv, sc->ip, srv->now, "%s: line %lu: job %s "
		    "node %s: bad token", sc->peer, sc->lineno,
		    m.u.join.run_id, m.u.join.node_id);
		srv_hangup(srv, sc, "auth", "bad token");
		return;
	}
	unauth_leave(srv, sc);
	sc->authed = true;
	srv->nauthed++;
	sc->seq_in = 1;
	/* Sealed, so that the node believes it and just retries. */
	if (srv->nauthed > srv->conf.max_clients) {
		srv_refuse(srv, sc, "limit", "%u nodes connected already",
		    srv->nauthed - 1);
		return;
	}
	strlcpy(sc->run_id, m.u.join.run_id, sizeof(sc->run_id));
	strlcpy(sc->node_id, m.u.join.node_id, sizeof(sc->node_id));
	strlcpy(sc->cnonce, m.u.join.cnonce, sizeof(sc->cnonce));
	on_join(srv, sc, &m.u.join);
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
	if (!sc->authed) {
		on_first_line(srv, sc, line);
		return;
	}
	if (rdzv_msg_parse_sealed(line, &m, sc->key, RDZV_TO_SERVER,
	    sc->seq_in++, err, sizeof(err)) == -1) {
		srv_refuse(srv, sc, "proto", "%s", err);
		return;
	}
	switch (m.verb) {
	case RV_JOIN:
		on_join(srv, sc, &m.u.join);
		break;
	case RV_PING:
		/*
		 * Acknowledged at once: a node renews its lease only by our
		 * acknowledgement of a line it sent, so one woken from a stall
		 * renews within a round trip, not at our next heartbeat.
		 */
		send_ack(srv, sc);
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

/*
 * Every PING says how many of the node's lines we have: the node renews
 * its lease to the send time of the newest of them, which is earlier
 * than our receipt of it (last_line), so the node's lease always ends
 * before ours for it, and a node dropped here has fenced its workers.
 */
static void
send_ack(struct rdzv_server *srv, struct rdzv_sconn *sc)
{
	struct rdzv_msg ping = { .verb = RV_PING };

	ping.u.ping.has_ack = true;
	ping.u.ping.acked = sc->seq_in > INT_MAX ? INT_MAX :
	    (unsigned)sc->seq_in;
	srv_send(srv, sc, &ping);
}

static void
heartbeat(struct rdzv_server *srv)
{
	struct rdzv_sconn *sc;

	TAILQ_FOREACH(sc, &srv->conns, entry) {
		if (sc->dead || !sc->authed)
			continue;
		send_ack(srv, sc);
	}
	srv->next_ping = srv->now + srv->conf.heartbeat_ms;
}

/*
 * Drop the nodes whose lease is over, at its end rather than at the next
 * heartbeat (a lost node is noticed a lease after its last line, give or
 * take nothing); the next such end.
 */
static long long
lease_expire(struct rdzv_server *srv)
{
	long long next = LLONG_MAX, end;
	struct rdzv_sconn *sc;

	TAILQ_FOREACH(sc, &srv->conns, entry) {
		if (sc->dead || !sc->authed)
			continue;
		if (srv->now < (end = srv_lease_end(srv, sc))) {
			if (end < next)
				next = end;
			continue;
		}
		info_msg("%s: heartbeat lost: nothing for %lld ms, its lease "
		    "is over", sc->peer, srv->now - sc->last_line);
		srv_kill(srv, sc, "heartbeat");
	}
	return next;
}

/* Drop who has not authenticated in time; the next such deadline. */
static long long
unauth_expire(struct rdzv_server *srv)
{
	struct rdzv_sconn *sc;
	char text[64];

	TAILQ_FOREACH(sc, &srv->unauth, unauth_entry) {
		if (sc->dead)
			continue;
		if (srv->now - sc->since < srv->conf.auth_ms)
			return sc->since + srv->conf.auth_ms;
		rdzv_server_warn(srv, sc->ip, srv->now, "%s: no good JOIN "
		    "within %u ms", sc->peer, srv->conf.auth_ms);
		snprintf(text, sizeof(text), "no JOIN within %u ms",
		    srv->conf.auth_ms);
		srv_drop(srv, sc, "proto", text);
	}
	return LLONG_MAX;
}

long long
rdzv_server_tick(struct rdzv_server *srv, long long now)
{
	long long next, auth, lease;

	srv->now = now;
	lease = lease_expire(srv);
	if (now >= srv->next_ping)
		heartbeat(srv);
	jobs_tick(srv);
	auth = unauth_expire(srv);
	reap(srv);
	warns_expire(srv);
	next = jobs_next_deadline(srv);
	if (auth < next)
		next = auth;
	if (lease < next)
		next = lease;
	return next < srv->next_ping ? next : srv->next_ping;
}
