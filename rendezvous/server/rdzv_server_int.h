/*
 * Inside the esv-rdzv state machine, top down: rdzv_server.c owns the
 * connections (accept, read, dispatch, reap, ticks) and calls rdzv_job.c,
 * which owns rounds and calls rdzv_table.c, the record of jobs and nodes,
 * and rdzv_tell.c, the messages of a round.  All of them answer a node
 * through rdzv_wire.c (send, refuse, hang up, warn), which calls none of
 * them: no call runs back up.
 */
#ifndef ESV_RDZV_SERVER_INT_H
#define ESV_RDZV_SERVER_INT_H

/*
 * libbsd's tree.h marks its static functions __unused, which its
 * cdefs.h leaves undefined (glibc has struct members of that name):
 * include this header after the system ones.
 */
#ifndef __unused
#define __unused	__attribute__((__unused__))
#endif
#include <sys/queue.h>
#include <sys/tree.h>

#include "rdzvproto.h"
#include "rdzv_server.h"

#define PEER_MAX	80

enum node_status {
	NS_JOINED,	/* in the round being gathered */
	NS_EXPECTED,	/* told RESTART, not back yet */
	NS_RUNNING,	/* member of the complete round */
	NS_WAITING,	/* no room: on the wait list */
	NS_FINISHED,	/* passed BARRIER */
	NS_COUNT
};

enum job_phase { JP_GATHERING, JP_RUNNING, JP_RECOVERING };

struct job;

struct node {
	RB_ENTRY(node)		 rb;
	struct job		*job;
	struct rdzv_sconn	*sc;		/* never NULL */
	enum node_status	 status;
	unsigned		 nproc, port;
	unsigned		 group_rank, round;	/* RUNNING, FINISHED */
	struct rdzv_round_msg	 assigned;	/* its ROUND, to say again */
	bool			 released;
	char			 id[RDZV_NAME_MAX + 1];
	char			 role[RDZV_NAME_MAX + 1];
	char			 addr[RDZV_ADDR_MAX + 1];
};
RB_HEAD(nodetree, node);
RB_PROTOTYPE(nodetree, node, rb, node_cmp)

/* A member of the running round lost at its end (rdzv_job.c, node_lost). */
struct lost {
	char			 id[RDZV_NAME_MAX + 1];
	bool			 finished;	/* it had passed BARRIER */
};

struct job {
	RB_ENTRY(job)		 rb;
	TAILQ_ENTRY(job)	 closed_entry;
	struct nodetree		 nodes;
	unsigned		 count[NS_COUNT], nnodes;
	unsigned		 min, max, last_call_ms;
	unsigned		 round, expect_n;
	enum job_phase		 phase;
	bool			 closed;
	bool			 restarted;	/* round opened by a restart */
	long long		 deadline;	/* last call, recovery; -1 */
	/* No round completes before: a node we do not know of may hold
	 * ranks of this job under its lease (we restarted).  0: none. */
	long long		 hold_until;
	long long		 last_join;
	/*
	 * The members of the running round lost while the others waited in
	 * its exit barrier: it waits for those that had not finished.
	 */
	struct lost		*lost;
	unsigned		 nlost, lost_waiting;
	/* The exit barrier of passed_round released its nodes. */
	bool			 passed;
	unsigned		 passed_round;
	char			 run_id[RDZV_NAME_MAX + 1];
};
RB_HEAD(jobtree, job);
RB_PROTOTYPE(jobtree, job, rb, job_cmp)

struct rdzv_sconn {
	TAILQ_ENTRY(rdzv_sconn)	 entry;		/* srv->conns */
	TAILQ_ENTRY(rdzv_sconn)	 dead_entry;	/* srv->dead */
	TAILQ_ENTRY(rdzv_sconn)	 unauth_entry;	/* srv->unauth, oldest first */
	void			*conn;		/* the transport's */
	struct node		*node;
	bool			 authed;	/* a JOIN's seal held */
	bool			 dead;
	bool			 linger;	/* let the peer read our ERR */
	const char		*dead_why;	/* NULL: silently */
	uint64_t		 seq_in, seq_out;
	uint8_t			 key[RDZV_KEY_LEN];
	char			 cnonce[RDZV_NONCE_LEN + 1];
	unsigned long		 lineno;
	long long		 since, last_line;
	size_t			 inlen;
	char			 peer[PEER_MAX], ip[PEER_MAX];
	char			 nonce[RDZV_NONCE_LEN + 1];
	char			 run_id[RDZV_NAME_MAX + 1];
	char			 node_id[RDZV_NAME_MAX + 1];
	char			 in[RDZV_LINE_MAX];
};

struct ipwarn {
	RB_ENTRY(ipwarn)	 rb;
	long long		 window;
	unsigned		 count, suppressed;
	char			 ip[PEER_MAX];
};
RB_HEAD(warntree, ipwarn);

struct rdzv_server {
	struct rdzv_server_conf	 conf;
	struct rdzv_server_ops	 ops;
	long long		 now, next_ping, started;
	struct jobtree		 jobs;
	unsigned		 njobs;
	TAILQ_HEAD(, job)	 closed_jobs;	/* oldest first */
	TAILQ_HEAD(, rdzv_sconn) conns, dead, unauth;
	unsigned		 nauthed, nunauth;
	struct warntree		 warns;
	char			 token[RDZV_TOKEN_MAX + 1];
};

/* rdzv_wire.c */
void	srv_send(struct rdzv_server *srv, struct rdzv_sconn *sc,
	    const struct rdzv_msg *m);
/* Warn about sc's current line, reply ERR code text, hang up. */
void	srv_refuse(struct rdzv_server *srv, struct rdzv_sconn *sc,
	    const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));
/* Hang up sc once the current event is handled (why NULL: silently). */
void	srv_kill(struct rdzv_server *srv, struct rdzv_sconn *sc,
	    const char *why);
/* Reply ERR code text and hang up, with no warning logged. */
void	srv_hangup(struct rdzv_server *srv, struct rdzv_sconn *sc,
	    const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));
/* Send ERR code text and hang up at once, without lingering. */
void	srv_drop(struct rdzv_server *srv, struct rdzv_sconn *sc,
	    const char *code, const char *text);

/* How long a node may go unheard: its lease. */
long long srv_lease_ms(const struct rdzv_server *srv);
/* When sc's lease is over here: a lease and the slack after its last line. */
long long srv_lease_end(const struct rdzv_server *srv,
	    const struct rdzv_sconn *sc);
/* A window is over: say what was held back, forget the address. */
void	warns_expire(struct rdzv_server *srv);
void	warns_free(struct rdzv_server *srv);

/* rdzv_table.c */
struct job *job_find(struct rdzv_server *srv, const char *run_id);
/* For j, or ERR limit to sc; NULL when refused. */
struct job *job_create_for(struct rdzv_server *srv, struct rdzv_sconn *sc,
	    const struct rdzv_join *j);
/* A job with no JOIN behind it (CLOSE of an unknown run id). */
struct job *job_create(struct rdzv_server *srv, const char *run_id);
/* Deleted if it has no node left and is not closed. */
void	job_gc(struct rdzv_server *srv, struct job *job);
void	jobs_free(struct rdzv_server *srv);
struct node *node_find(struct job *job, const char *id);
/* The record of j's node on sc, created or refreshed, with status st. */
struct node *node_set(struct job *job, struct rdzv_sconn *sc,
	    struct node *nd, const struct rdzv_join *j, enum node_status st);
void	set_status(struct node *nd, enum node_status st);
void	node_free(struct job *job, struct node *nd);

/* rdzv_tell.c */
struct rank_assignment;
void	tell_n(struct rdzv_server *srv, struct rdzv_sconn *sc,
	    enum rdzv_verb v, unsigned n);
void	tell_joined(struct rdzv_server *srv, struct node *nd);
/* WAITING to the running nodes: how many wait for room. */
void	tell_waiting(struct rdzv_server *srv, struct job *job);
/*
 * To the node of group rank 0, before its ROUND: the addresses of the
 * round's nodes (none past MEMBERS_MAX), for its agent store.
 */
void	tell_members(struct rdzv_server *srv, struct node *to,
	    struct node **nodes, unsigned n, unsigned round);
/* As tell_members, again: the round's nodes are those that run it. */
void	tell_members_again(struct rdzv_server *srv, struct job *job,
	    struct node *to);
/* nd's ROUND, remembered in nd->assigned to be said again. */
void	tell_round(struct rdzv_server *srv, struct node *nd,
	    const struct rank_assignment *ra, const struct node *master);

/* rdzv_job.c */
void	job_join(struct rdzv_server *srv, struct rdzv_sconn *sc,
	    const struct rdzv_join *j);
void	job_barrier(struct rdzv_server *srv, struct rdzv_sconn *sc,
	    unsigned round);
/* sc's node is gone (EOF, LEAVE, ...); sc itself may stay. */
void	job_node_gone(struct rdzv_server *srv, struct rdzv_sconn *sc,
	    const char *why);
void	job_close(struct rdzv_server *srv, struct rdzv_sconn *sc);
/* Run due deadlines; then the next one, or LLONG_MAX. */
void	jobs_tick(struct rdzv_server *srv);
long long jobs_next_deadline(struct rdzv_server *srv);

#endif
