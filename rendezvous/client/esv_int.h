/*
 * What the files of the "esv" and "etcd" rendezvous backends share, and
 * nobody else: struct esv, one a job, and the layers, top down:
 *	rdzv_esv.c	the backends' operations (rdzv.h), struct esv made
 *			and freed, the one timer's deadlines (on_timer)
 *	esv_lines.c	the server's lines in: the socket's events, the
 *			greeting and the session's seal, each line to what
 *			it says; reading before the lease is judged
 *	esv_verbs.c	the protocol's verbs: our JOIN, the server's MEMBER,
 *			ROUND, RESTART and ERR; a join that fails
 *	esv_dial.c	reaching esv-rdzv: a name looked up in a child, a
 *			connect, our own esv-rdzv hosted on the endpoint
 *	esv_etcd.c	esv-rdzv-etcd, the etcd backend's server, started as
 *			its connection and waited for at the end
 *	esv_conn.c	our lines out, the connection's close and its loss,
 *			the backoff before the next
 *	esv_lease.c	the workers' lease and its fence; the timer's next
 *			expiry (rearm), which every layer calls
 * Each calls only those below it in this list, never one above
 * (tests/circles.py): a line read runs down to the verbs, a verb answers
 * through the connection, and the connection moves the lease.
 */
#ifndef ESV_ESV_INT_H
#define ESV_ESV_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdzv.h"
#include "rdzvproto.h"

#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	2000
/*
 * Only a connection that served this long resets the backoff: one the
 * server refuses or drops at once (a node id in use) must not reconnect
 * at BACKOFF_MIN_MS for ever.
 */
#define STABLE_MS	(5 * BACKOFF_MAX_MS)
#define OUT_MAX		4096
#define GREETING_MS	3000	/* to connect and be greeted */
#define LOOKUP_MS	30000	/* a resolver's own retries fit in */
#define SENT_RING	64	/* send times of our last lines */

enum conn_state { C_DOWN, C_RESOLVING, C_CONNECTING, C_GREETING, C_UP };

/* What the supervisor asked of the rendezvous last. */
enum want { W_NOTHING, W_ROUND, W_RUNNING, W_BARRIER };

struct esv {
	struct rdzv		*rz;
	const struct rdzv_params	*cfg;
	char			 token[RDZV_TOKEN_MAX + 1];
	char			 token_path[PATH_MAX];
	char			 log_path[PATH_MAX];	/* its log */
	char			 node_id[RDZV_NAME_MAX + 1];
	/*
	 * This supervisor's, for its life: the start of every cnonce, so
	 * that the server tells our reconnection (which replaces our stale
	 * connection) from another node that presents our node id (refused
	 * while ours lives).
	 */
	char			 instance[RDZV_INSTANCE_LEN + 1];
	char			 host[256];
	unsigned		 port;
	char			 endpoint[300];
	bool			 may_host;
	pid_t			 host_pid;
	/*
	 * The etcd backend: the same protocol to esv-rdzv-etcd, a child on
	 * the other end of a socketpair, which speaks to etcd for us.
	 */
	bool			 via_helper;
	pid_t			 helper_pid;
	/* The endpoint's addresses, looked up anew for every connection. */
	struct lookup_answer	 peer;
	unsigned		 peer_next;
	pid_t			 lookup_pid;	/* until reaped */
	struct watch		 lw;
	/* local_addr, looked up at start-up (none: numeric from the socket) */
	struct lookup_answer	 local;

	enum conn_state		 conn;
	struct watch		 w, tw;
	char			 cnonce[RDZV_NONCE_LEN + 1];
	uint8_t			 key[RDZV_KEY_LEN];	/* of this connection */
	uint64_t		 seq_in, seq_out;
	bool			 proven;	/* a line of the server's held */
	unsigned		 hb_ms;		/* our PINGs */
	unsigned		 srv_hb_ms;	/* the server's */
	char			 in[RDZV_LINE_MAX];
	size_t			 inlen;
	char			 out[OUT_MAX];
	size_t			 outlen;
	long long		 last_rx, last_tx, reconnect_at;
	long long		 up_since;	/* accepted by the server */
	unsigned		 backoff_ms;
	bool			 outage_logged;
	bool			 dup_logged;	/* "duplicate" said */
	bool			 ever_up;	/* a connection was ever proven */
	/*
	 * In read_lines: a callback it makes (a membership change) may reap
	 * workers, whose reaping asks us to read first (rdzv_check); the
	 * lines already read must be taken in order, and e->in is in use.
	 */
	bool			 reading;

	/* The lease (esv_lease.c); times are mono_ms. */
	unsigned		 lease_ms, grace_ms;
	long long		 sent_at[SENT_RING];	/* by seq_out */
	long long		 renewed;
	long long		 etcd_end;	/* esv-rdzv-etcd's, 0: none */
	long long		 told;		/* the kill time, to cb.lease */
	/*
	 * Workers may run under our ranks: from a ROUND until the
	 * supervisor, their stop over, joins again, waits in the barrier
	 * or leaves.
	 */
	bool			 live;
	bool			 fenced;	/* this round's fence is done */
	/*
	 * A JOIN running on a new connection, not acknowledged yet: a
	 * RESTART before its acknowledgement says the server does not hold
	 * us as a member, and its acknowledgements renew nothing.
	 */
	bool			 probation, outcast;
	uint64_t		 probation_seq;
	long long		 join_sent;	/* of the last JOIN new */

	enum want		 want;
	long long		 join_deadline, barrier_deadline;
	/* LOST: a node of our round was lost before it had finished. */
	bool			 peer_lost;
	/*
	 * Round numbers keep a late message from acting twice: a JOIN new
	 * is answered by JOINED <round>, and only that round's ROUND is
	 * taken; a RESTART of a round we joined or ran is old news.
	 */
	bool			 join_pending;	/* JOIN new sent, no JOINED */
	bool			 joined;	/* JOINED joined_round came */
	unsigned		 joined_round;
	bool			 ran;		/* cur is a round we ran */
	struct rdzv_round_msg	 cur;
	char			 my_addr[RDZV_ADDR_MAX + 1];
	unsigned		 my_port;
	unsigned		 waiting, participants;
	/* MEMBER lines of members_round, one address a line (rdzv_round). */
	char			 members[24 * 1024];
	size_t			 mlen;
	unsigned		 members_round;
	bool			 members_lost;	/* did not fit */
};

/* esv_lines.c */
void	on_socket(struct watch *w, uint32_t events);
/* Read what the server sent (if read_first), then judge the lease. */
void	lease_check(struct esv *e, bool read_first);

/* esv_verbs.c */
void	send_join(struct esv *e);
/* The join or the barrier failed for good: hang up, tell the supervisor. */
void	fail(struct esv *e, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
void	on_member(struct esv *e, unsigned round, const char *addr);
void	on_round(struct esv *e, const struct rdzv_round_msg *m);
void	on_restart(struct esv *e, unsigned round);
void	on_err(struct esv *e, const char *code, const char *text);

/* esv_dial.c */
void	conn_start(struct esv *e);

/* esv_etcd.c */
void	helper_start(struct esv *e);
void	helper_wait(struct esv *e);

/* esv_conn.c */
void	watch_events(struct esv *e);
void	flush_out(struct esv *e);
void	send_msg(struct esv *e, const struct rdzv_msg *m);
void	send_ping(struct esv *e);
void	conn_close(struct esv *e);
/* Reconnect later, unless nothing is wanted of the server. */
void	conn_lost(struct esv *e, const char *why);

/* esv_lease.c */
/* The wall-clock time of the monotonic time t, "HH:MM:SS.mmm" UTC. */
void	wall_of(long long t, char *buf, size_t len);
/* Stop the workers: their lease ends at kill_at. */
void	fence(struct esv *e, long long kill_at, const char *why);
bool	lease_runs(const struct esv *e);
long long lease_end(const struct esv *e);
bool	lease_over(const struct esv *e, long long now);
void	lease_fence(struct esv *e, long long now);
bool	hold_conn(const struct esv *e);
long long silence_ms(const struct esv *e);
/* The timer, at the earliest deadline; the guardian told the lease's. */
void	rearm(struct esv *e);
/* The server has our first n lines of this connection: renew. */
void	on_ack(struct esv *e, unsigned n);

#endif
