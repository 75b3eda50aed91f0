/*
 * The esv-rdzv state machine: connections, jobs, nodes and rounds, with
 * no sockets in it.  The transport (esv-rdzv.c, or a unit test) hands it
 * bytes, losses and the time, and it answers through rdzv_server_ops.
 * Every entry point takes the monotonic time in ms.
 */
#ifndef ESV_RDZV_SERVER_H
#define ESV_RDZV_SERVER_H

#include <stdbool.h>
#include <stddef.h>

struct rdzv_server;
struct rdzv_sconn;

struct rdzv_server_conf {
	unsigned	heartbeat_ms;	/* PING period */
	/*
	 * A node unheard for lease_ms is dropped, and no round hands out
	 * ranks a node may still hold under its lease (esv-rdzv(8)).
	 * 0: 3 heartbeats, and no holds (the unit tests of old).
	 */
	unsigned	lease_ms;
	/*
	 * Added to it here: the node sends SIGKILL that much before the
	 * end of its own lease (half the fencing grace), so its timer may
	 * be late by twice that without two workers holding one rank.
	 */
	unsigned	lease_slack_ms;
	unsigned	max_jobs;
	unsigned	max_nodes;	/* per job */
	unsigned	recovery_ms;
	bool		verbose;	/* log every message */
	/*
	 * Connections that have not authenticated have a pool of their own,
	 * so that a flood of them never keeps a node out: a new one pushes
	 * out the oldest of its address (past max_unauth_per_addr) or of
	 * all (past max_unauth), and each has auth_ms to send a good JOIN.
	 * max_clients bounds the authenticated ones.
	 */
	unsigned	max_clients;
	unsigned	max_unauth;
	unsigned	max_unauth_per_addr;
	unsigned	auth_ms;
	/* Not NULL: the one run id served (a server hosted by its job). */
	const char	*only_job;
};

struct rdzv_server_ops {
	/*
	 * Queue one line ('\n' included) to the transport's connection.
	 * -1 when the peer is not keeping up: the server then drops it.
	 */
	int	(*send)(void *ctx, void *conn, const char *line, size_t len);
	/*
	 * The server is done with conn: flush what is queued, then hang
	 * up (after letting the peer read it, if linger).  The server
	 * never names conn again.
	 */
	void	(*close)(void *ctx, void *conn, bool linger);
	void	*ctx;
};

struct rdzv_server *rdzv_server_new(const struct rdzv_server_conf *conf,
	    const struct rdzv_server_ops *ops, const char *token,
	    long long now);
void	rdzv_server_free(struct rdzv_server *srv);
/* SIGHUP: new joins are checked against the new token. */
void	rdzv_server_set_token(struct rdzv_server *srv, const char *token);

/*
 * A new connection from peer ("addr:port", for logs) at ip (the key of
 * the per-address warning rate limit).  Sends the greeting.  NULL if out
 * of memory (the transport then hangs up).
 */
struct rdzv_sconn *rdzv_server_accept(struct rdzv_server *srv, void *conn,
	    const char *peer, const char *ip, long long now);
/* Bytes read from sc; may end in ops->close for sc. */
void	rdzv_server_input(struct rdzv_server *srv, struct rdzv_sconn *sc,
	    const char *buf, size_t n, long long now);
/* The transport lost sc (EOF, error); sc is freed, ops->close not called. */
void	rdzv_server_lost(struct rdzv_server *srv, struct rdzv_sconn *sc,
	    const char *why, long long now);
/* Run what is due at now; returns the next deadline (absolute ms). */
long long rdzv_server_tick(struct rdzv_server *srv, long long now);

/* A rate-limited warning about ip (at most 20 a second per address). */
void	rdzv_server_warn(struct rdzv_server *srv, const char *ip,
	    long long now, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));

unsigned rdzv_server_njobs(const struct rdzv_server *srv);

#endif
